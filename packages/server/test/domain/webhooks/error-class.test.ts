import { errorClassOf } from '../../../src/domain/webhooks/log/error-class';

describe('the class of an attempt that got no HTTP status', () => {
  it.each([
    ['The endpoint did not answer within 15 seconds.', 'timeout'],
    ['The endpoint did not answer within 250 ms.', 'timeout'],
    ['ETIMEDOUT: connect ETIMEDOUT 203.0.113.10:443', 'timeout'],
    ['ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9', 'connection_refused'],
    ['connect ECONNREFUSED ::1:443', 'connection_refused'],
    ['ECONNRESET: socket hang up', 'connection_reset'],
    ['socket hang up', 'connection_reset'],
    ['ENOTFOUND: ssl.example.com has no address', 'dns'],
    ['getaddrinfo EAI_AGAIN tls.example.com', 'dns'],
    ['CERT_HAS_EXPIRED: certificate has expired', 'tls'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate', 'tls'],
    ["ERR_TLS_CERT_ALTNAME_INVALID: Hostname/IP does not match certificate's altnames", 'tls'],
    ['EPROTO: write EPROTO 00000000:error:0A00010B:SSL routines:ssl3_get_record:wrong version number', 'tls'],
    ['EREFUSEDADDRESS: metadata.example.com resolves to 169.254.169.254, which is in a range webhooks may not reach (linkLocal)', 'address_refused'],
    ["The endpoint's address 10.0.0.1 is in a range webhooks may not reach (private).", 'address_refused'],
    ["Not sent: the sending instance could not open this subscription's signing secret (a sealing key it lacks).", 'not_sent'],
    ['The endpoint URL is not valid.', 'other'],
    ['The endpoint answered 999.', 'other'],
    [null, 'other'],
  ] as const)('%p is %p', (error, expected) => {
    expect(errorClassOf(error)).toBe(expected);
  });

  it('goes by the code, not by a name in the text', () => {
    expect(errorClassOf('ECONNREFUSED: connect ECONNREFUSED cert.example.com:443')).toBe('connection_refused');
    expect(errorClassOf('ENOTFOUND: certificate.example.com has no address')).toBe('dns');
  });
});
