/** The one shutdown helper, in a process of its own: what an uncaught failure leaves on stdout, and its exit code. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const tsx = path.resolve(__dirname, '..', '..', '..', '..', 'node_modules', '.bin', 'tsx');
const fixture = path.join(__dirname, 'fixtures', 'uncaught.ts');

describe('an uncaught failure', () => {
  it.each([
    ['exception', 'nobody caught this'],
    ['rejection', 'nobody awaited this'],
  ])('an unhandled %s is logged as JSON, the stop steps run, and the process exits 1', (kind, message) => {
    const run = spawnSync(tsx, [fixture, kind], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(1);
    const lines = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message: string } });
    expect(lines[0]).toMatchObject({ level: 50, msg: 'uncaught error: stopping', err: { message } });
    expect(lines.map((line) => line.msg)).toContain('cleaned up');
  });
});
