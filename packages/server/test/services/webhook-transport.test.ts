import { createServer, type Socket } from 'node:net';
import { ManualClock } from '../../src/core/clock';
import { httpTransport, NO_ANSWER, noAnswerText, refusedAddress, retryAfterMs } from '../../src/services/webhook-transport';
import { type Receiver, startReceiver } from '../support/webhook-receiver';

describe('the webhook transport', () => {
  let receiver: Receiver;
  const clock = new ManualClock();
  const production = { allowLoopback: false };
  const development = { allowLoopback: true };

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver.close());

  /** The receiver's URL under a name, so that the resolver decides where it leads. */
  const byName = (path: string) => receiver.url(path).replace('127.0.0.1', 'receiver.example');
  const send = (transport: ReturnType<typeof httpTransport>, url: string) => transport({ url, headers: { 'webhook-id': 'x' }, body: '{"a":1}' });

  it('judges parsed addresses: public unicast only, loopback only where allowed, every IPv4-embedding IPv6 form refused', () => {
    for (const address of ['93.184.216.34', '2606:2800:220:1::', '8.8.8.8']) expect(refusedAddress(address, production)).toBeUndefined();
    expect(refusedAddress('127.0.0.1', development)).toBeUndefined();
    expect(refusedAddress('::1', development)).toBeUndefined();
    const refused = [
      '127.0.0.1',
      '::1',
      '169.254.169.254',
      '10.0.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.251',
      '255.255.255.255',
    ];
    const refusedV6 = [
      '::',
      'fe80::1',
      'fc00::1',
      'fd00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:8.8.8.8',
      '64:ff9b::a9fe:a9fe',
      '2002:a9fe:a9fe::1',
      '2001:db8::1',
    ];
    for (const address of [...refused, ...refusedV6]) expect(refusedAddress(address, production)).toEqual(expect.any(String));
    for (const address of ['::ffff:127.0.0.1', '169.254.169.254', '[::ffff:a9fe:a9fe]'])
      expect(refusedAddress(address, development)).toEqual(expect.any(String));
    expect(refusedAddress('not-an-address', development)).toBe('is not an IP address');
  });

  /**
   * A receiver that answers with keep-alive and closes each of its first `closing` connections when
   * a second request arrives on it, as an idle timeout racing the request would; every later
   * connection is answered normally. It counts the requests of each connection.
   */
  async function closingReceiver(closing: number): Promise<{ url: string; requestsPerConnection: number[]; close(): Promise<void> }> {
    const requestsPerConnection: number[] = [];
    const sockets: Socket[] = [];
    const server = createServer((socket: Socket) => {
      sockets.push(socket);
      const index = requestsPerConnection.push(0) - 1;
      socket.on('data', (chunk) => {
        if (!chunk.toString('latin1').startsWith('POST')) return;
        requestsPerConnection[index] = (requestsPerConnection[index] ?? 0) + 1;
        if (index < closing && requestsPerConnection[index] === 2) return void socket.destroy();
        socket.write('HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    return {
      url: `http://127.0.0.1:${port}/hooks`,
      requestsPerConnection,
      async close() {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  }

  it('sends again on a new connection when a kept-alive one is closed by the receiver as it is reused, so no retry of the schedule is spent', async () => {
    const receiver = await closingReceiver(1);
    try {
      const transport = httpTransport({ policy: development, clock });
      expect(await send(transport, receiver.url)).toEqual({ status: 204, latencyMs: 0 });
      expect(await send(transport, receiver.url)).toEqual({ status: 204, latencyMs: 0 });
      expect(receiver.requestsPerConnection).toEqual([2, 1]);
    } finally {
      await receiver.close();
    }
  });

  it('sends that once more on a connection of its own, not on another kept-alive one the receiver closed too', async () => {
    // After a burst the agent keeps several idle connections, and a receiver's idle timeout closes
    // them all: here every connection that was open before is closed when it is reused.
    const warm = 3;
    const receiver = await closingReceiver(warm);
    try {
      const transport = httpTransport({ policy: development, clock });
      const burst = await Promise.all(Array.from({ length: warm }, () => send(transport, receiver.url)));
      expect(burst).toEqual(Array.from({ length: warm }, () => ({ status: 204, latencyMs: 0 })));
      expect(await send(transport, receiver.url)).toEqual({ status: 204, latencyMs: 0 });
      expect(receiver.requestsPerConnection.slice(warm)).toEqual([1]);
      expect(receiver.requestsPerConnection.slice(0, warm).filter((requests) => requests === 2)).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('does not connect when the name resolves to a refused address: the app is told the class, the detail says which', async () => {
    const path = '/refused-by-name';
    const refused = (detail: string) => ({ error: NO_ANSWER.nonPublic, detail: expect.stringContaining(detail), latencyMs: expect.any(Number) });
    const outcome = await send(httpTransport({ policy: production, clock, resolve: async () => ['127.0.0.1'] }), byName(path));
    expect(outcome).toEqual(refused('receiver.example resolves to 127.0.0.1'));
    const mapped = await send(httpTransport({ policy: development, clock, resolve: async () => ['::ffff:127.0.0.1'] }), byName(path));
    expect(mapped).toEqual(refused('resolves to ::ffff:127.0.0.1'));
    const mixed = await send(httpTransport({ policy: development, clock, resolve: async () => ['127.0.0.1', '10.0.0.7'] }), byName(path));
    expect(mixed).toEqual(refused('resolves to 10.0.0.7'));
    expect(NO_ANSWER.nonPublic).toBe('The endpoint resolves to a non-public address.');
    expect(receiver.receivedAt(path)).toEqual([]);
  });

  it("tells the app a failure's class and Node's code, never Node's message, which quotes addresses", () => {
    expect(noAnswerText('ECONNREFUSED')).toBe('The endpoint refused the connection (ECONNREFUSED).');
    expect(noAnswerText('ECONNRESET')).toBe('The endpoint closed the connection before answering (ECONNRESET).');
    expect(noAnswerText('ENOTFOUND')).toBe("The endpoint's host name has no address (ENOTFOUND).");
    expect(noAnswerText('EAI_AGAIN')).toBe("The endpoint's host name could not be resolved for now (EAI_AGAIN).");
    expect(noAnswerText('ETIMEDOUT')).toBe('The connection to the endpoint timed out (ETIMEDOUT).');
    expect(noAnswerText('EHOSTUNREACH')).toBe('The endpoint could not be reached (EHOSTUNREACH).');
    expect(noAnswerText('CERT_HAS_EXPIRED')).toBe('The TLS handshake with the endpoint failed (CERT_HAS_EXPIRED).');
    expect(noAnswerText('ERR_TLS_CERT_ALTNAME_INVALID')).toBe('The TLS handshake with the endpoint failed (ERR_TLS_CERT_ALTNAME_INVALID).');
    expect(noAnswerText('DEPTH_ZERO_SELF_SIGNED_CERT')).toBe('The TLS handshake with the endpoint failed (DEPTH_ZERO_SELF_SIGNED_CERT).');
    expect(noAnswerText('HPE_INVALID_CONSTANT')).toBe("The endpoint's answer is not valid HTTP (HPE_INVALID_CONSTANT).");
    expect(noAnswerText('EREFUSEDADDRESS')).toBe(NO_ANSWER.nonPublic);
    expect(noAnswerText('ESOMETHINGNEW')).toBe('The request to the endpoint failed (ESOMETHINGNEW).');
    // Anything that is not a plain code is not repeated.
    expect(noAnswerText(undefined)).toBe('The request to the endpoint failed.');
    expect(noAnswerText('connect 10.0.0.7:443')).toBe('The request to the endpoint failed.');
  });

  it('calls the address the name resolved to when it is allowed, as a JSON POST with the given headers', async () => {
    const path = '/allowed-by-name';
    const outcome = await send(httpTransport({ policy: development, clock, resolve: async () => ['127.0.0.1'] }), byName(path));
    expect(outcome).toEqual({ status: 200, latencyMs: 0 });
    const [request] = receiver.receivedAt(path);
    expect(request).toMatchObject({
      method: 'POST',
      body: '{"a":1}',
      headers: expect.objectContaining({ 'content-type': 'application/json', 'webhook-id': 'x' }),
    });
  });

  it('reads Retry-After as delay-seconds or an HTTP-date from now (a past date is no wait); anything else is no answer', () => {
    const now = Date.parse('2026-11-25T12:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Wed, 25 Nov 2026 12:01:30 GMT', now)).toBe(90_000);
    expect(retryAfterMs('Wed, 25 Nov 2026 11:00:00 GMT', now)).toBe(0);
    for (const malformed of [undefined, '', '-5', '1.5', '1e3', 'soon', '12 seconds']) expect(retryAfterMs(malformed, now)).toBeUndefined();
  });

  it("reports the receiver's Retry-After on 429 and 503 only, as a wait from the transport's clock", async () => {
    const transport = httpTransport({ policy: development, clock });
    receiver.answer('/busy', 429, { 'retry-after': '30' });
    expect(await send(transport, receiver.url('/busy'))).toEqual({ status: 429, retryAfterMs: 30_000, latencyMs: 0 });
    receiver.answer('/down', 503, { 'retry-after': new Date(clock.now() + 120_000).toUTCString() });
    expect(await send(transport, receiver.url('/down'))).toEqual({ status: 503, retryAfterMs: 120_000, latencyMs: 0 });
    receiver.answer('/failing', 500, { 'retry-after': '30' });
    expect(await send(transport, receiver.url('/failing'))).toEqual({ status: 500, latencyMs: 0 });
    receiver.answer('/busy-unsaid', 429);
    expect(await send(transport, receiver.url('/busy-unsaid'))).toEqual({ status: 429, latencyMs: 0 });
  });

  it('refuses an address literal before connecting, and gives up on an endpoint that does not answer in time', async () => {
    expect(await send(httpTransport({ policy: production, clock }), receiver.url('/literal'))).toEqual({
      error: NO_ANSWER.nonPublic,
      detail: expect.stringContaining('127.0.0.1 is in a range webhooks may not reach'),
      latencyMs: 0,
    });
    expect(receiver.receivedAt('/literal')).toEqual([]);
    receiver.answer('/slow', 'hang');
    const slow = await send(httpTransport({ policy: development, clock, timeoutMs: 200 }), receiver.url('/slow'));
    expect(slow).toEqual({ error: 'The endpoint did not answer within 200 ms.', latencyMs: expect.any(Number) });
    const closed = await send(httpTransport({ policy: development, clock }), 'http://127.0.0.1:9/nothing-listens');
    expect(closed).toEqual({
      error: 'The endpoint refused the connection (ECONNREFUSED).',
      detail: expect.stringContaining('127.0.0.1:9'),
      latencyMs: expect.any(Number),
    });
  });
});
