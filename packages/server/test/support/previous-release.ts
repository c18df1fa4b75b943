import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repositoryRoot } from '../../../../tools/testbed/repository';
import type { Requirement } from './requirements';

/**
 * The release this tree's migrations must keep working during a rolling deploy: the one operators
 * roll from (docs/decisions/0082-expand-then-contract.md). test/db/previous-release.test.ts runs its
 * code on a schema this tree expanded.
 *
 * How each release moves it: when a release is cut, the commit it was cut from becomes the next
 * release's previous one. Set `commit` to that commit (full hash) and `released` to its date in the
 * same change that opens the next release, and move every contract phase the previous release no
 * longer needs out of the expand phase (docs/development.md "Adding a migration").
 */
export const PREVIOUS_RELEASE = {
  /** The release of 2026-11-28, the last before migrations 018-020. */
  commit: 'eb1d5ef21eb2ea9ebdd74d7cac88f645c2cd8693',
  released: '2026-11-28',
} as const;

const hasCommit = (commit: string): boolean => {
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: repositoryRoot, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** The previous release's commit in this clone's history (a shallow clone lacks it). */
export const PREVIOUS_RELEASE_COMMIT: Requirement = {
  missing: hasCommit(PREVIOUS_RELEASE.commit)
    ? undefined
    : `the previous release's commit ${PREVIOUS_RELEASE.commit.slice(0, 7)} (test/support/previous-release.ts) is not in this clone's history`,
  howToRun: `fetch it: git fetch --unshallow, or git fetch origin ${PREVIOUS_RELEASE.commit}`,
  requiredBy: 'REQUIRE_PREVIOUS_RELEASE',
};

/** The previous release checked out and built: its server and CLI as `node` runs them. */
export interface BuiltRelease {
  readonly root: string;
  readonly server: string;
  readonly cli: string;
  /** How long the checkout, install and build took, in ms. */
  readonly buildMs: number;
  remove(): void;
}

const pnpm = (cwd: string, args: string[]) => execFileSync('npx', ['-y', 'pnpm@10', ...args], { cwd, stdio: 'pipe', env: { ...process.env, CI: 'true' } });

/**
 * A `git worktree add --detach` of the release into a temporary directory, its packages installed
 * from the store this tree's install filled (`--prefer-offline`) and its server built (tsup): about
 * 25 s here. Removed, worktree and all, by `remove`.
 */
export function buildRelease(commit: string): BuiltRelease {
  const started = Date.now();
  const root = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-previous-')), 'tree');
  execFileSync('git', ['worktree', 'add', '--detach', root, commit], { cwd: repositoryRoot, stdio: 'pipe' });
  const remove = () => {
    execFileSync('git', ['worktree', 'remove', '--force', root], { cwd: repositoryRoot, stdio: 'ignore' });
    fs.rmSync(path.dirname(root), { recursive: true, force: true });
  };
  try {
    pnpm(root, ['install', '--frozen-lockfile', '--prefer-offline']);
    pnpm(path.join(root, 'packages', 'server'), ['run', 'build']);
  } catch (error) {
    remove();
    throw error;
  }
  const dist = path.join(root, 'packages', 'server', 'dist');
  return { root, server: path.join(dist, 'main.js'), cli: path.join(dist, 'svc.js'), buildMs: Date.now() - started, remove };
}
