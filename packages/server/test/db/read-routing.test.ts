import {
  chooseReplica,
  lagAt,
  neededPosition,
  PrimarySamples,
  ReplicaTimeout,
  type ReplicaView,
  stateOf,
  walBytesOf,
  withinMs,
} from '../../src/db/read-routing';

/** The routing rule of read replicas (docs/decisions/0078-read-replicas.md), without a database. */
describe('read routing', () => {
  const bounds = { maxLagMs: 1000, staleAfterMs: 2000 };
  const view = (name: string, replayed: bigint | undefined, lagMs: number | undefined, polledAt = 10_000): ReplicaView => ({ name, replayed, lagMs, polledAt });

  it('reads WAL positions as PostgreSQL writes them, and refuses anything else', () => {
    expect(walBytesOf('0/0')).toBe(0n);
    expect(walBytesOf('0/16B3748')).toBe(0x16b3748n);
    expect(walBytesOf('16/B374D848')).toBe((0x16n << 32n) + 0xb374d848n);
    expect(walBytesOf('1/0') > walBytesOf('0/FFFFFFFF')).toBe(true);
    for (const bad of ['', '16B374D848', '1/2/3', 'G/0', '123456789/0']) expect(() => walBytesOf(bad)).toThrow('Not a WAL position');
  });

  it("measures a replica's lag by the newest sample of the primary it has replayed", () => {
    const samples = new PrimarySamples(10_000);
    samples.add(1000, 100n);
    samples.add(1200, 300n);
    samples.add(1400, 300n);
    samples.add(1600, 500n);
    expect(samples.lagOf(500n, 1650)).toBe(50);
    expect(samples.lagOf(450n, 1650)).toBe(250); // has 300 (the sample at 1400), not 500
    expect(samples.lagOf(100n, 1650)).toBe(650);
    expect(samples.lagOf(99n, 1650)).toBeUndefined(); // older than every sample kept
  });

  it('keeps samples for its window only, and always the last two', () => {
    const samples = new PrimarySamples(500);
    for (let at = 0; at <= 5000; at += 100) samples.add(at, BigInt(at));
    expect(samples.lagOf(4500n, 5000)).toBe(500);
    expect(samples.lagOf(4499n, 5000)).toBeUndefined();
    const quiet = new PrimarySamples(500);
    quiet.add(0, 7n);
    quiet.add(60_000, 7n);
    expect(quiet.lagOf(7n, 60_010)).toBe(10);
  });

  it('calls a replica current, lagging or unavailable, by its lag as of now', () => {
    expect(stateOf(view('r', 10n, 0), 10_500, bounds)).toBe('current');
    // 500 ms behind at its poll, 500 ms ago: up to 1000 ms behind now, the bound.
    expect(stateOf(view('r', 10n, 500), 10_500, bounds)).toBe('current');
    expect(stateOf(view('r', 10n, 501), 10_500, bounds)).toBe('lagging');
    expect(stateOf(view('r', 10n, 1000), 10_000, bounds)).toBe('current');
    expect(stateOf(view('r', 10n, 1001), 10_000, bounds)).toBe('lagging');
    expect(stateOf(view('r', undefined, undefined), 10_500, bounds)).toBe('unavailable');
    expect(stateOf(view('r', 10n, undefined), 10_500, bounds)).toBe('unavailable');
    // Its last poll is too old to trust: it stopped answering since.
    expect(stateOf(view('r', 10n, 0), 12_001, bounds)).toBe('unavailable');
  });

  it('ages a lag between polls, so that no replica serves past the bound while its polls do not answer', () => {
    expect(lagAt(view('r', 10n, 200, 10_000), 10_000)).toBe(200);
    expect(lagAt(view('r', 10n, 200, 10_000), 10_300)).toBe(500);
    expect(lagAt(view('r', undefined, undefined, 10_000), 10_300)).toBeUndefined();
    // A clock read before the poll's answer (a route chosen while the poll answered) ages nothing.
    expect(lagAt(view('r', 10n, 200, 10_000), 9_990)).toBe(200);
    // Polled current, then nothing answers: current until lag + age reaches the bound, lagging after.
    const quiet = view('r', 10n, 100, 10_000);
    const loose = { maxLagMs: 1000, staleAfterMs: 60_000 };
    expect(stateOf(quiet, 10_900, loose)).toBe('current');
    expect(stateOf(quiet, 10_901, loose)).toBe('lagging');
    // A replica that was on time at each poll is served only while it still may be.
    expect(chooseReplica([quiet], undefined, 10_901, loose, 0)).toEqual({ reason: 'lagging' });
  });

  it('gives a replica read or poll its deadline: past it the caller is told at once, and a late answer is dropped', async () => {
    jest.useFakeTimers();
    try {
      let answer: (value: string) => void = () => undefined;
      const late = withinMs(new Promise<string>((resolve) => (answer = resolve)), 1000, 'a read on it');
      const outcome = late.then(
        (value) => value,
        (error: unknown) => error,
      );
      jest.advanceTimersByTime(999);
      answer('too late?');
      await expect(outcome).resolves.toBe('too late?');
      const hung = withinMs(new Promise<string>(() => undefined), 1000, 'its lag poll');
      const told = hung.catch((error: unknown) => error);
      jest.advanceTimersByTime(1000);
      const error = await told;
      expect(error).toBeInstanceOf(ReplicaTimeout);
      expect((error as Error).message).toBe('its lag poll did not answer within 1000 ms');
      await expect(withinMs(Promise.reject(new Error('refused')), 1000, 'a read on it')).rejects.toThrow('refused');
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  it("chooses a current replica that has replayed the caller's last write, round the list", () => {
    const views = [view('a', 100n, 10), view('b', 200n, 10)];
    expect(chooseReplica(views, undefined, 10_100, bounds, 0)).toEqual({ index: 0 });
    expect(chooseReplica(views, undefined, 10_100, bounds, 1)).toEqual({ index: 1 });
    expect(chooseReplica(views, 150n, 10_100, bounds, 0)).toEqual({ index: 1 });
    expect(chooseReplica(views, 200n, 10_100, bounds, 0)).toEqual({ index: 1 });
  });

  it('says why no replica serves: the own write, a lag past the bound, none answering', () => {
    expect(chooseReplica([view('a', 100n, 10), view('b', 200n, 5000)], 150n, 10_100, bounds, 0)).toEqual({ reason: 'own_write' });
    expect(chooseReplica([view('a', 100n, 5000), view('b', undefined, undefined)], undefined, 10_100, bounds, 0)).toEqual({ reason: 'lagging' });
    expect(chooseReplica([view('a', undefined, undefined)], undefined, 10_100, bounds, 0)).toEqual({ reason: 'unavailable' });
    expect(chooseReplica([], undefined, 10_100, bounds, 0)).toEqual({ reason: 'unavailable' });
  });

  it("finds the caller's position among its store's rows", () => {
    const rows = [
      { installation_id: 'i-1', wal_lsn: '0/10' },
      { installation_id: 'i-2', wal_lsn: '1/0' },
    ];
    expect(neededPosition(rows, 'i-2')).toBe(1n << 32n);
    expect(neededPosition(rows, 'i-3')).toBeUndefined();
    expect(neededPosition([], 'i-1')).toBeUndefined();
  });
});
