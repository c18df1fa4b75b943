import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BlockMarkError, parseMarks, placeholdersIn, readBlocks, runnablesOf, sourceLineOf } from '../blocks';

let dir = '';
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-blocks-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A Markdown file of these lines in the test's folder; answers its path. */
function markdown(name: string, ...lines: string[]): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const where = { file: 'guide.md', line: 3 };

describe('the marks of a block', () => {
  it('read run, program, no-run and what a run must show', () => {
    expect(parseMarks(['run'], where)).toEqual({ runs: 'alone', repo: false, setup: false, statuses: [], checks: [] });
    expect(parseMarks(['program=sync', 'receiver=/webhooks'], where)).toEqual({
      runs: 'in-program',
      program: 'sync',
      repo: false,
      setup: false,
      statuses: [],
      receiver: '/webhooks',
      checks: [],
    });
    expect(parseMarks(['run', 'repo', 'status=404,409', 'check=refresh-token-revoked'], where)).toEqual({
      runs: 'alone',
      repo: true,
      setup: false,
      statuses: [404, 409],
      checks: ['refresh-token-revoked'],
    });
    expect(parseMarks(['no-run'], where).runs).toBe('never');
  });

  it('are refused, naming the file and line, when the block says nothing of running, too much, or something unknown', () => {
    const refusal = (words: string[]) => {
      try {
        parseMarks(words, where);
      } catch (error) {
        expect(error).toBeInstanceOf(BlockMarkError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refusal([])).toBe('guide.md:3: says neither run, program=<name> nor no-run: say whether the block runs as written');
    expect(refusal(['run', 'no-run'])).toContain('says more than one of run, program=<name> and no-run');
    expect(refusal(['run', 'runs'])).toContain('has a mark it does not know: "runs"');
    expect(refusal(['run', 'status=200'])).toContain('has a mark it does not know: "status=200"');
    expect(refusal(['program=Sync'])).toContain('has a mark it does not know');
    expect(refusal(['no-run', 'status=404'])).toContain('is no-run and also says how it runs');
  });
});

describe('the blocks of a Markdown file', () => {
  it('are its ts and sh blocks, indented ones too, with their lines; other languages are shown, not read', () => {
    const file = markdown(
      'a.md',
      '# A',
      '',
      '```sh run',
      'curl "$SVC_URL/me"',
      '```',
      '',
      '```json',
      '{ "a": 1 }',
      '```',
      '',
      '1. In a list:',
      '',
      '   ```ts no-run',
      '   const a = 1;',
      '   ```',
    );
    const blocks = readBlocks(dir, file);
    expect(blocks.map(({ file: name, line, language, source }) => ({ name, line, language, source }))).toEqual([
      { name: 'a.md', line: 3, language: 'sh', source: 'curl "$SVC_URL/me"\n' },
      { name: 'a.md', line: 13, language: 'ts', source: 'const a = 1;\n' },
    ]);
  });

  it('refuse another name of those languages, which would escape the marks', () => {
    const file = markdown('b.md', '# B', '', '```bash', 'echo hi', '```');
    expect(() => readBlocks(dir, file)).toThrow('b.md:3: is in "bash": write "sh", the name the rules know');
  });

  it('make programs of their parts, in order, placed at the last part; a line of the program is its guide’s line', () => {
    const file = markdown(
      'c.md',
      '# C',
      '```ts program=sync',
      'const a = 1;',
      '```',
      '```ts run',
      'console.log(2);',
      '```',
      '```ts program=sync',
      'console.log(a);',
      'throw new Error();',
      '```',
    );
    const runnables = runnablesOf(readBlocks(dir, file));
    expect(runnables.map((runnable) => [runnable.name, runnable.source])).toEqual([
      ['c.md:5', 'console.log(2);\n'],
      ['c.md:2 (program sync)', 'const a = 1;\nconsole.log(a);\nthrow new Error();\n'],
    ]);
    const program = runnables[1]!;
    expect(sourceLineOf(program, 1)).toEqual({ file: 'c.md', line: 3 });
    expect(sourceLineOf(program, 3)).toEqual({ file: 'c.md', line: 10 });
  });

  it('refuse a program whose parts are in two languages', () => {
    const file = markdown('d.md', '```ts program=p', 'const a = 1;', '```', '```sh program=p', 'echo', '```');
    expect(() => runnablesOf(readBlocks(dir, file))).toThrow('d.md:4: is in sh, but the program p began in ts');
  });
});

describe('placeholders', () => {
  it('are found in code, not in comments: an ellipsis, and in shell a <name>', () => {
    expect(placeholdersIn('sh', 'curl -d token=svc_rt_… "$URL" # answers svc_at_…\nsvc app version add <client_id>\n')).toEqual([
      'token=svc_rt_…',
      '<client_id>',
    ]);
    expect(placeholdersIn('ts', 'const secret = data.secret; // whsec_…\nconst seen = new Set<string>();\n')).toEqual([]);
    expect(placeholdersIn('ts', "await oauth.revoke('svc_rt_…');\n")).toEqual(["oauth.revoke('svc_rt_…');"]);
  });
});
