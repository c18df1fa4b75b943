import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { readBlocks } from '../../../../tools/runnable-docs/blocks';
import { repositoryRoot } from '../../../../tools/testbed/repository';
import { whilePacking } from './pack-lock';

const run = promisify(execFile);

/** The SDK's README, whose `setup` block makes an app's folder. */
export const SDK_README = path.join(repositoryRoot, 'packages', 'client', 'README.md');

/** What every program of a reader's runs with: a plain machine's PATH and HOME, and nothing of this test's environment. */
export const plainEnvironment = (): Record<string, string> => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: process.env.HOME ?? os.homedir(),
  // npm's cache of this machine, so that a second install of the same packages is quick; a reader's has one too.
  ...(process.env.npm_config_cache ? { npm_config_cache: process.env.npm_config_cache } : {}),
});

/** An app's folder outside the workspace, made as the SDK's README says: the packed SDK installed, TypeScript run with tsx. */
export interface AppProject {
  readonly dir: string;
  /** What the README's setup block printed. */
  readonly output: string;
  remove(): void;
}

/**
 * Makes an app's folder in a fresh temporary directory by running the SDK's README's `setup` block
 * in it with bash, exactly as written, with `SVC_REPO` naming this repository (the README says so).
 * Packs run one at a time across test processes (support/pack-lock).
 */
export async function makeAppProject(): Promise<AppProject> {
  const setup = readBlocks(repositoryRoot, SDK_README).find((block) => block.marks.setup);
  if (!setup) throw new Error('packages/client/README.md has no `sh run setup` block that makes an app’s folder');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-app-'));
  const script = path.join(dir, '..', `${path.basename(dir)}-setup.sh`);
  fs.writeFileSync(script, setup.source);
  try {
    const { stdout, stderr } = await whilePacking(() =>
      run('bash', ['-euo', 'pipefail', script], { cwd: dir, env: { ...plainEnvironment(), SVC_REPO: repositoryRoot }, maxBuffer: 16 * 1024 * 1024 }),
    );
    return { dir, output: `${stdout}${stderr}`, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    const failure = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${setup.file}:${setup.line}: the setup block failed: ${failure.message}\n${failure.stdout ?? ''}${failure.stderr ?? ''}`);
  } finally {
    fs.rmSync(script, { force: true });
  }
}
