import { describeFigures, eventsOf, figuresOf, Ledger, problemsOf } from '../ledger';
import { schemaDifference } from '../migration';
import { tellingMessage } from '../observe';
import { DrillUsageError, FAULT_NAMES, planOf } from '../plan';

/** `pnpm drill`'s pure parts: its command line, and the rules it judges a fault by (the drill itself is not part of `pnpm test`). */
describe('the drill', () => {
  describe('command line', () => {
    it('runs every fault in order with the defaults when none is named', () => {
      expect(planOf([])).toEqual({
        faults: FAULT_NAMES,
        faultSeconds: 20,
        calmSeconds: 5,
        writesPerSecond: 10,
        readsPerSecond: 30,
        instances: 2,
        migrationRows: 120_000,
      });
      expect(FAULT_NAMES).toEqual([
        'instance-kill',
        'replica-freeze',
        'leader-terminate',
        'listener-terminate',
        'pgbouncer-restart',
        'receiver-hang',
        'migration-019',
      ]);
    });

    it('takes faults in the order given, once each, and the load and lengths as numbers', () => {
      expect(
        planOf(['receiver-hang', 'replica-freeze', 'receiver-hang', '--fault-seconds', '7', '--writes=3', '--reads', '0', '--instances', '3']),
      ).toMatchObject({
        faults: ['receiver-hang', 'replica-freeze'],
        faultSeconds: 7,
        writesPerSecond: 3,
        readsPerSecond: 0,
        instances: 3,
      });
      expect(planOf(['--help'])).toBeUndefined();
      expect(planOf(['replica-freeze', '-h'])).toBeUndefined();
    });

    it.each([
      [['bogus'], 'unknown fault "bogus"'],
      [['--bogus'], 'unknown option --bogus'],
      [['--writes'], '--writes takes a whole number from 1, not nothing'],
      [['--writes', '0'], '--writes takes a whole number from 1, not "0"'],
      [['--fault-seconds=1.5'], '--fault-seconds takes a whole number from 1, not "1.5"'],
      [['--instances', '1'], '--instances takes a whole number from 2, not "1"'],
      [['--reads', ''], '--reads takes a whole number from 0, not ""'],
    ])('refuses %p: %s', (argv, message) => {
      expect(() => planOf(argv)).toThrow(new DrillUsageError(message));
    });
  });

  describe('judgement', () => {
    const answered = (status: number, retryAfter = false, ms = 10) => ({ status, retryAfter, ms });

    it('counts a write lost only when it was acknowledged and is not found; an unanswered one is never acknowledged', () => {
      const ledger = new Ledger();
      ledger.wrote('w-1', answered(201));
      ledger.wrote('w-2', answered(201));
      ledger.wrote('w-3', { error: 'connect ECONNREFUSED', ms: 1 });
      ledger.wrote('w-4', answered(503, true));
      const figures = figuresOf(ledger, new Set(['w-1', 'w-3']));
      expect(figures.writes).toEqual({ sent: 4, acknowledged: 2, found: 1, lost: ['w-2'] });
      expect(figures.unanswered).toBe(1);
      expect(problemsOf(figures, undefined)).toEqual(['1 acknowledged writes lost (w-2…)']);
    });

    it('allows a 503 with Retry-After and nothing else of 5xx or 4xx', () => {
      const ledger = new Ledger();
      ledger.read(answered(200, false, 12));
      ledger.read(answered(503, true));
      ledger.read(answered(503, false));
      ledger.read(answered(500));
      ledger.read(answered(429, true));
      const figures = figuresOf(ledger, new Set());
      expect(figures.serverErrors).toEqual({ unavailableWithRetryAfter: 1, others: { 500: 1, 503: 1 } });
      expect(figures.refusals).toEqual({ 429: 1 });
      expect(figures.reads).toMatchObject({ sent: 5, ok: 1, p99: 12 });
      expect(problemsOf(figures, undefined)).toEqual(['5xx other than 503 with Retry-After: 1 × 500, 1 × 503', 'refused: 1 × 429']);
    });

    it('passes a fault whose writes are all found and whose events all arrived, and says what it saw', () => {
      const ledger = new Ledger();
      ledger.wrote('w-1', answered(201));
      ledger.read(answered(200, false, 5));
      ledger.read(answered(503, true, 7));
      const load = figuresOf(ledger, new Set(['w-1']));
      const events = eventsOf(['e-1', 'e-2'], new Set(['e-1', 'e-2', 'e-0']), 3400);
      expect(problemsOf(load, events)).toEqual([]);
      expect(describeFigures(load, events)).toEqual([
        'writes     sent 1, acknowledged (2xx) 1, found afterwards 1, lost 0',
        'reads      sent 2, answered 200 1, p50 5 ms, p99 5 ms, max 5 ms',
        '5xx        503 with Retry-After 1, others none; 4xx none',
        'no answer  0 (connection refused or reset: never acknowledged)',
        'events     recorded 2, delivered 2, missing 0, the last 3.4 s after the fault ended',
      ]);
    });

    it('fails a fault with an event that never reached the receiver', () => {
      const events = eventsOf(['e-1', 'e-2'], new Set(['e-1']), 150_000);
      expect(events).toEqual({ recorded: 2, delivered: 1, missing: ['e-2'], deliveredWithinMs: undefined });
      expect(problemsOf(figuresOf(new Ledger(), new Set()), events)).toEqual(['1 of 2 events never delivered']);
    });
  });

  it("keeps the log lines an operator watches: warnings, errors, the leader's and the replicas' changes", () => {
    expect(tellingMessage('{"level":30,"msg":"request completed"}')).toBeUndefined();
    expect(tellingMessage('{"level":40,"msg":"Connection Error: x"}')).toBe('Connection Error: x');
    expect(tellingMessage('{"level":30,"msg":"Housekeeping leader: process 12"}')).toBe('Housekeeping leader: process 12');
    expect(tellingMessage('Metrics    http://127.0.0.1:1/metrics')).toBeUndefined();
    expect(tellingMessage('{"level":50')).toBeUndefined();
  });

  it('compares two schema dumps line by line, leaving out comments and blank lines', () => {
    const clean = '-- dumped\nCREATE TABLE a (x int);\n\nCREATE INDEX i ON a (x);\n';
    expect(schemaDifference(clean, '-- another day\nCREATE TABLE a (x int);\nCREATE INDEX i ON a (x);')).toEqual([]);
    expect(schemaDifference(clean, 'CREATE TABLE a (x int);\nALTER TABLE a ADD CONSTRAINT c CHECK (x < 3);')).toEqual([
      '- CREATE INDEX i ON a (x);',
      '+ ALTER TABLE a ADD CONSTRAINT c CHECK (x < 3);',
    ]);
  });
});
