import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repositoryRoot } from '../../../../tools/testbed/repository';
import { ensureBuilt } from '../support/built-server';

/**
 * The package's `svc` command the way a consumer runs it (issue 38 part 8): the package's `bin`
 * (bin/svc.js) by its path and through `pnpm exec svc`, from the workspace root and from the
 * package. The bundle it runs is not the process's entry there, so a bundle that ran only as
 * `require.main` printed nothing and exited 0 for every command.
 */

// Each case starts real processes, pnpm's own start among them: seconds each on a busy machine (no duration is checked).
jest.setTimeout(120_000);

const serverDir = path.join(repositoryRoot, 'packages', 'server');
const binPath = path.join(serverDir, 'bin', 'svc.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** What a shell gives the command: a path, a home (pnpm's store and npm's cache), the registry settings, and `extra`. */
function consumerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.homedir() };
  for (const [name, value] of Object.entries(process.env)) if (/^npm_config_(registry|cache|userconfig)$/i.test(name)) env[name] = value;
  return { ...env, ...extra };
}

async function run(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)(file, [...args], { cwd, env, timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** The ways a consumer starts `svc`: each gets the same arguments. */
const WAYS: ReadonlyArray<{ name: string; start: (args: readonly string[], env: NodeJS.ProcessEnv) => Promise<Run>; pnpm?: true }> = [
  {
    name: 'node packages/server/bin/svc.js',
    start: (args, env) => run(process.execPath, [path.relative(repositoryRoot, binPath), ...args], repositoryRoot, env),
  },
  { name: 'bin/svc.js by its path, from elsewhere', start: (args, env) => run(binPath, args, os.tmpdir(), env) },
  { name: 'pnpm exec svc at the workspace root', start: (args, env) => run('npx', ['-y', 'pnpm@10', 'exec', 'svc', ...args], repositoryRoot, env), pnpm: true },
  { name: 'pnpm exec svc in packages/server', start: (args, env) => run('npx', ['-y', 'pnpm@10', 'exec', 'svc', ...args], serverDir, env), pnpm: true },
];

const dataDirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dataDirs.push(dir);
  return dir;
};

beforeAll(() => ensureBuilt());
afterAll(() => {
  for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe.each(WAYS)('svc through $name', ({ start }) => {
  it('prints the usage for help and exits 0', async () => {
    const help = await start(['help'], consumerEnv());
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^usage:\n {2}svc store create --name <name>/);
    expect(help.stdout).toContain('svc migrate');
  });

  it('writes: store create on a fresh SQLite data directory, then store list reads it back', async () => {
    const env = consumerEnv({ DATA_DIR: tempDir('svc-bin-'), SVC_OWNER_PASSWORD: 'correct horse battery' });
    const created = await start(
      ['store', 'create', '--name', 'Oud House', '--domain', 'oud-house.example', '--owner-email', 'owner@oud-house.example', '--json'],
      env,
    );
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const store = (JSON.parse(created.stdout) as { store: { id: string; name: string } }).store;
    expect(store.name).toBe('Oud House');

    const listed = await start(['store', 'list', '--json'], env);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id: store.id, name: 'Oud House' })]);
  });
});

// pnpm's own start takes seconds: through it, help and a write show that the command runs; a refusal's exit code is the bin's.
describe.each(WAYS.filter((way) => !way.pnpm))('svc through $name', ({ start }) => {
  it('refuses an unknown command with exit code 2 and the usage on stderr', async () => {
    const unknown = await start(['no-such-command'], consumerEnv());
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/^svc: unknown command "no-such-command"\nusage:/);
  });
});

describe('bin/svc.js before the build', () => {
  /** The committed bin in a package of its own, with `dist` as given. */
  function packageWith(dist: Record<string, string>): string {
    const root = tempDir('svc-unbuilt-');
    fs.mkdirSync(path.join(root, 'bin'));
    fs.copyFileSync(binPath, path.join(root, 'bin', 'svc.js'));
    for (const [name, text] of Object.entries(dist)) {
      fs.mkdirSync(path.join(root, 'dist'), { recursive: true });
      fs.writeFileSync(path.join(root, 'dist', name), text);
    }
    return root;
  }

  it('says that the CLI is not built yet, how to build it, and exits 1', async () => {
    const root = packageWith({});
    const unbuilt = await run(process.execPath, [path.join('bin', 'svc.js'), 'help'], root, consumerEnv());
    expect(unbuilt).toEqual({ code: 1, stdout: '', stderr: 'svc: dist/svc.js is not built yet: run `npx -y pnpm@10 build` first\n' });
  });

  it('refuses a bundle that cannot be run from the bin (an older build), rather than exiting 0 having done nothing', async () => {
    const root = packageWith({ 'svc.js': 'if (require.main === module) console.log("ran");\n' });
    const older = await run(process.execPath, [path.join('bin', 'svc.js'), 'help'], root, consumerEnv());
    expect(older).toEqual({
      code: 1,
      stdout: '',
      stderr: 'svc: dist/svc.js is an older build that this command cannot run: run `npx -y pnpm@10 build` first\n',
    });
  });
});
