import { ManualClock } from '../../src/core/clock';
import { httpTransport, refusedAddress } from '../../src/platform/webhook-transport';
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

  it('does not connect when the name resolves to a refused address, and says which', async () => {
    const path = '/refused-by-name';
    const outcome = await send(httpTransport({ policy: production, clock, resolve: async () => ['127.0.0.1'] }), byName(path));
    expect(outcome).toEqual({ error: expect.stringContaining('receiver.example resolves to 127.0.0.1'), latencyMs: expect.any(Number) });
    const mapped = await send(httpTransport({ policy: development, clock, resolve: async () => ['::ffff:127.0.0.1'] }), byName(path));
    expect(mapped).toEqual({ error: expect.stringContaining('resolves to ::ffff:127.0.0.1'), latencyMs: expect.any(Number) });
    const mixed = await send(httpTransport({ policy: development, clock, resolve: async () => ['127.0.0.1', '10.0.0.7'] }), byName(path));
    expect(mixed).toEqual({ error: expect.stringContaining('resolves to 10.0.0.7'), latencyMs: expect.any(Number) });
    expect(receiver.receivedAt(path)).toEqual([]);
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

  it('refuses an address literal before connecting, and gives up on an endpoint that does not answer in time', async () => {
    expect(await send(httpTransport({ policy: production, clock }), receiver.url('/literal'))).toEqual({
      error: expect.stringContaining('127.0.0.1 is in a range webhooks may not reach'),
      latencyMs: 0,
    });
    expect(receiver.receivedAt('/literal')).toEqual([]);
    receiver.answer('/slow', 'hang');
    const slow = await send(httpTransport({ policy: development, clock, timeoutMs: 200 }), receiver.url('/slow'));
    expect(slow).toEqual({ error: 'The endpoint did not answer within 200 ms.', latencyMs: expect.any(Number) });
    const closed = await send(httpTransport({ policy: development, clock }), 'http://127.0.0.1:9/nothing-listens');
    expect(closed).toEqual({ error: expect.stringContaining('ECONNREFUSED'), latencyMs: expect.any(Number) });
  });
});
