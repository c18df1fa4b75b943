import fs from 'node:fs';
import path from 'node:path';

/**
 * The code blocks of the guides and the package READMEs, and what each says of itself in its fence's
 * info string (after the language): whether it runs as written, which program it is part of, and
 * what a run of it must show. docs/development.md, "Code that runs as written", is the reader's
 * version of these rules; packages/server/test/docs-guides.test.ts runs the blocks.
 *
 * ```ts run                     a complete program: run as it stands
 * ```ts program=sync            a part of the program `sync`: the file's parts of one name, in order, make it
 * ```sh run repo                run at the service's repository root (the admin CLI), not in the app's folder
 * ```sh run setup               makes the app's folder (the SDK's install): run first, in an empty folder
 * ```sh run status=404          shows that refusal on purpose: each such status must be answered, and no other 4xx or 5xx
 * ```ts run receiver=/webhooks  listens on PORT for webhook deliveries at that path: the run sends it one
 * ```sh run check=revoked       a promise no status shows, checked after the run (the test's CHECKS)
 * ```ts no-run                  not run: it needs a person (a browser, a value copied from one), or starts the service
 */

/** The languages a block may run in: TypeScript with tsx, shell with bash. Others (json, text) are shown, never run. */
export const RUNNABLE_LANGUAGES = ['ts', 'sh'] as const;
export type RunnableLanguage = (typeof RUNNABLE_LANGUAGES)[number];
/** Names of those languages that are not the ones blocks use: a block in one of them would escape the rules. */
const OTHER_NAMES: Readonly<Record<string, RunnableLanguage>> = { typescript: 'ts', bash: 'sh', shell: 'sh', console: 'sh', js: 'ts', javascript: 'ts' };

export interface Marks {
  /** Run as it stands (`run`), as part of a program (`program=<name>`), or never (`no-run`). */
  readonly runs: 'alone' | 'in-program' | 'never';
  readonly program?: string;
  /** Shell at the service's repository root instead of the app's folder. */
  readonly repo: boolean;
  /** The block that makes the app's folder. */
  readonly setup: boolean;
  /** Statuses of 400 and above the block shows on purpose. */
  readonly statuses: readonly number[];
  /** The path a receiver program takes webhook deliveries at. */
  readonly receiver?: string;
  /** Promises checked after the run, by name. */
  readonly checks: readonly string[];
}

export interface CodeBlock {
  /** The file, relative to the repository root. */
  readonly file: string;
  /** The line of the opening fence, from 1. */
  readonly line: number;
  readonly language: RunnableLanguage;
  readonly marks: Marks;
  readonly source: string;
}

/** A block that is not what the rules allow, with where it is. */
export class BlockMarkError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    reason: string,
  ) {
    super(`${file}:${line}: ${reason}`);
  }
}

const PROGRAM_NAME = /^[a-z][a-z0-9-]*$/;

/** The marks of one fence's info string after its language; refuses an unknown mark or a block that says nothing of running. */
export function parseMarks(words: readonly string[], where: { file: string; line: number }): Marks {
  const fail = (reason: string): never => {
    throw new BlockMarkError(where.file, where.line, reason);
  };
  let runs: Marks['runs'] | undefined;
  let program: string | undefined;
  let receiver: string | undefined;
  let repo = false;
  let setup = false;
  const statuses: number[] = [];
  const checks: string[] = [];
  const setRuns = (value: Marks['runs']) => {
    if (runs !== undefined) fail('says more than one of run, program=<name> and no-run');
    runs = value;
  };
  for (const word of words) {
    const [name = '', value] = word.split('=', 2) as [string, string | undefined];
    if (name === 'run' && value === undefined) setRuns('alone');
    else if (name === 'no-run' && value === undefined) setRuns('never');
    else if (name === 'program' && value !== undefined && PROGRAM_NAME.test(value)) {
      setRuns('in-program');
      program = value;
    } else if (name === 'repo' && value === undefined) repo = true;
    else if (name === 'setup' && value === undefined) setup = true;
    else if (name === 'status' && value !== undefined && /^[45]\d\d(,[45]\d\d)*$/.test(value)) statuses.push(...value.split(',').map(Number));
    else if (name === 'receiver' && value?.startsWith('/')) receiver = value;
    else if (name === 'check' && value !== undefined && PROGRAM_NAME.test(value)) checks.push(value);
    else fail(`has a mark it does not know: "${word}" (run, program=<name>, no-run, repo, setup, status=<4xx|5xx>, receiver=/<path>, check=<name>)`);
  }
  if (runs === undefined) fail('says neither run, program=<name> nor no-run: say whether the block runs as written');
  if (runs === 'never' && (repo || setup || statuses.length > 0 || receiver !== undefined || checks.length > 0)) {
    fail('is no-run and also says how it runs');
  }
  return { runs: runs as Marks['runs'], ...(program ? { program } : {}), repo, setup, statuses, ...(receiver ? { receiver } : {}), checks };
}

/** A fence that opens a block: its indentation (a block in a list is indented), three or more backticks, the info string. */
const FENCE = /^(\s*)(`{3,})(.*)$/;

/**
 * The `ts` and `sh` blocks of a Markdown file, in order, each with its marks. A block in another
 * name of those languages (`bash`, `typescript`) is refused, since it would escape the rules.
 */
export function readBlocks(repoRoot: string, file: string): CodeBlock[] {
  const relative = path.relative(repoRoot, file);
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    const opening = FENCE.exec(lines[index] as string);
    if (!opening) continue;
    const [, indent = '', fence = '', info = ''] = opening;
    const [language = '', ...words] = info.trim().split(/\s+/).filter(Boolean);
    const body: string[] = [];
    let closing = index + 1;
    for (; closing < lines.length; closing++) {
      const line = lines[closing] as string;
      if (line.trim().startsWith(fence) && line.trim().replace(/`/g, '') === '') break;
      // The block's own indentation is not part of its code.
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart());
    }
    const where = { file: relative, line: index + 1 };
    const other = OTHER_NAMES[language];
    if (other) throw new BlockMarkError(relative, index + 1, `is in "${language}": write "${other}", the name the rules know`);
    if ((RUNNABLE_LANGUAGES as readonly string[]).includes(language)) {
      blocks.push({ ...where, language: language as RunnableLanguage, marks: parseMarks(words, where), source: `${body.join('\n')}\n` });
    }
    index = closing;
  }
  return blocks;
}

/** What runs: a block alone, or the parts of one program joined in order. */
export interface Runnable {
  readonly name: string;
  readonly language: RunnableLanguage;
  /** The blocks it is made of, in order (one for a block that runs alone). */
  readonly blocks: readonly CodeBlock[];
  readonly source: string;
  /** The marks of every block, taken together. */
  readonly marks: Omit<Marks, 'runs' | 'program'>;
}

/** Where a line of a runnable's source comes from: the file and line of the guide. */
export function sourceLineOf(runnable: Runnable, line: number): { file: string; line: number } {
  let start = 1;
  for (const block of runnable.blocks) {
    const length = block.source.split('\n').length - 1;
    if (line < start + length) return { file: block.file, line: block.line + (line - start) + 1 };
    start += length;
  }
  const last = runnable.blocks.at(-1) as CodeBlock;
  return { file: last.file, line: last.line };
}

/**
 * The file's runnables in reading order: each `run` block, and each program at the place of its last
 * part (its parts in order; a program's parts share one language). A program named in two files is
 * two programs.
 */
export function runnablesOf(blocks: readonly CodeBlock[]): Runnable[] {
  const programs = new Map<string, CodeBlock[]>();
  for (const block of blocks) {
    if (block.marks.runs !== 'in-program') continue;
    const parts = programs.get(block.marks.program as string) ?? [];
    if (parts.length > 0 && parts[0]?.language !== block.language) {
      throw new BlockMarkError(block.file, block.line, `is in ${block.language}, but the program ${block.marks.program} began in ${parts[0]?.language}`);
    }
    programs.set(block.marks.program as string, [...parts, block]);
  }
  const runnables: Runnable[] = [];
  for (const block of blocks) {
    if (block.marks.runs === 'alone') runnables.push(runnableOf(`${block.file}:${block.line}`, [block]));
    if (block.marks.runs !== 'in-program') continue;
    const parts = programs.get(block.marks.program as string) as CodeBlock[];
    if (parts.at(-1) === block) runnables.push(runnableOf(`${block.file}:${parts[0]?.line} (program ${block.marks.program})`, parts));
  }
  return runnables;
}

function runnableOf(name: string, blocks: readonly CodeBlock[]): Runnable {
  const first = blocks[0] as CodeBlock;
  const receivers = [...new Set(blocks.flatMap((block) => (block.marks.receiver ? [block.marks.receiver] : [])))];
  if (receivers.length > 1) throw new BlockMarkError(first.file, first.line, `takes deliveries at more than one path: ${receivers.join(', ')}`);
  return {
    name,
    language: first.language,
    blocks,
    source: blocks.map((block) => block.source).join(''),
    marks: {
      repo: blocks.some((block) => block.marks.repo),
      setup: blocks.some((block) => block.marks.setup),
      statuses: [...new Set(blocks.flatMap((block) => block.marks.statuses))],
      ...(receivers[0] ? { receiver: receivers[0] } : {}),
      checks: [...new Set(blocks.flatMap((block) => block.marks.checks))],
    },
  };
}

/** The code of a block without its comments (roughly: a `#` or `//` that starts a comment), where placeholders are allowed. */
const withoutComments = (language: RunnableLanguage, source: string) =>
  source
    .split('\n')
    .map((line) => (language === 'sh' ? line.replace(/(^|\s)#.*$/, '') : line.replace(/(^|[\s;,{(])\/\/.*$/, '')))
    .join('\n');

/**
 * The placeholders a person would fill in (`svc_rt_…`, and in shell `<client_id>`) in a block's code,
 * outside its comments: a block with one cannot run as written.
 */
export function placeholdersIn(language: RunnableLanguage, source: string): string[] {
  const code = withoutComments(language, source);
  const pattern = language === 'sh' ? /\S*…\S*|<[a-z][a-z_ -]*>/g : /\S*…\S*/g;
  return [...new Set([...code.matchAll(pattern)].map((match) => match[0]))];
}
