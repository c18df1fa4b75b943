import { errorClassOf, quotesAddress, shownError } from '../../../src/domain/webhooks/log/error-class';
import { NO_ANSWER, noAnswerText } from '../../../src/services/webhook-transport';

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
    // What the transport writes today.
    [NO_ANSWER.timeout(15_000), 'timeout'],
    [NO_ANSWER.nonPublic, 'address_refused'],
    [noAnswerText('ETIMEDOUT'), 'timeout'],
    [noAnswerText('ECONNREFUSED'), 'connection_refused'],
    [noAnswerText('ECONNRESET'), 'connection_reset'],
    [noAnswerText('EPIPE'), 'connection_reset'],
    [noAnswerText('ENOTFOUND'), 'dns'],
    [noAnswerText('EAI_AGAIN'), 'dns'],
    [noAnswerText('CERT_HAS_EXPIRED'), 'tls'],
    [noAnswerText('ERR_SSL_WRONG_VERSION_NUMBER'), 'tls'],
    [noAnswerText('EHOSTUNREACH'), 'other'],
    [noAnswerText(undefined), 'other'],
    ['The endpoint answered 999.', 'other'],
    [null, 'other'],
  ] as const)('%p is %p', (error, expected) => {
    expect(errorClassOf(error)).toBe(expected);
  });

  it('goes by the code, not by a name in the text', () => {
    expect(errorClassOf('ECONNREFUSED: connect ECONNREFUSED cert.example.com:443')).toBe('connection_refused');
    expect(errorClassOf('ENOTFOUND: certificate.example.com has no address')).toBe('dns');
  });

  it('finds the addresses and DNS answers that reasons stored before quote, and only them', () => {
    for (const quoting of [
      'ECONNREFUSED: connect ECONNREFUSED 203.0.113.10:443',
      'connect ECONNREFUSED ::1:443',
      'ETIMEDOUT: connect ETIMEDOUT fd00::7:443',
      'EREFUSEDADDRESS: metadata.example.com resolves to 169.254.169.254, which is in a range webhooks may not reach (linkLocal)',
      "The endpoint's address 10.0.0.1 is in a range webhooks may not reach (private).",
      "ERR_TLS_CERT_ALTNAME_INVALID: Hostname/IP does not match certificate's altnames: IP: 10.1.2.3 is not in the cert's list: ",
    ])
      expect(quotesAddress(quoting)).toBe(true);
    for (const plain of [
      noAnswerText('ECONNREFUSED'),
      NO_ANSWER.nonPublic,
      NO_ANSWER.timeout(15_000),
      'EPROTO: write EPROTO 00000000:error:0A00010B:SSL routines:ssl3_get_record:wrong version number',
      'The endpoint answered 500.',
    ])
      expect(quotesAddress(plain)).toBe(false);
  });

  it("shows a stored reason that quotes an address in today's words, by its class and code; any other as it is", () => {
    expect(shownError('ECONNREFUSED: connect ECONNREFUSED 203.0.113.10:443')).toBe('The endpoint refused the connection (ECONNREFUSED).');
    expect(shownError('EREFUSEDADDRESS: metadata.example.com resolves to 169.254.169.254, which is in a range webhooks may not reach (linkLocal)')).toBe(
      NO_ANSWER.nonPublic,
    );
    expect(shownError("The endpoint's address 10.0.0.1 is in a range webhooks may not reach (private).")).toBe(NO_ANSWER.nonPublic);
    expect(shownError('ETIMEDOUT: connect ETIMEDOUT 203.0.113.10:443')).toBe('The connection to the endpoint timed out (ETIMEDOUT).');
    expect(shownError("ERR_TLS_CERT_ALTNAME_INVALID: Hostname/IP does not match certificate's altnames: IP: 10.1.2.3 is not in the cert's list: ")).toBe(
      'The TLS handshake with the endpoint failed (ERR_TLS_CERT_ALTNAME_INVALID).',
    );
    expect(shownError('socket hang up at 10.0.0.9')).toBe('The request to the endpoint failed.');
    expect(shownError(noAnswerText('ECONNRESET'))).toBe(noAnswerText('ECONNRESET'));
    expect(shownError(null)).toBeNull();
  });
});
