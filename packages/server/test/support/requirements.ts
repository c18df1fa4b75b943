import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { pgbouncerPath } from '../../../../tools/testbed/pgbouncer';
import { anyBinDir, POSTGRES_LIB } from '../../../../tools/testbed/postmaster';
import { recordSkip } from './skips';

/**
 * Something a block of tests needs beyond Node and this repository: PostgreSQL, a Chromium. Where it
 * is missing the block is skipped and named at the end of the run with the reason and what to set
 * (support/skips); where CI requires it (`requiredBy`: REQUIRE_POSTGRES=1, REQUIRE_BROWSER=1), its
 * absence fails the file instead, so that CI cannot pass by skipping.
 */
export interface Requirement {
  /** Why it is missing here, or undefined when it is met. */
  readonly missing: string | undefined;
  /** What to set to run the block, in words: `set TEST_DATABASE_URL to a postgres:// URL`. */
  readonly howToRun: string;
  /** The variable that turns its absence into a failure. */
  readonly requiredBy: string;
}

/** Whether the requirement is met; when it is not, the skip is noted (or, where it is required, this throws). */
export function isMet(requirement: Requirement, suite: string): boolean {
  if (requirement.missing === undefined) return true;
  if (process.env[requirement.requiredBy] === '1') throw new Error(`${requirement.requiredBy}=1 but ${requirement.missing}`);
  recordSkip({ suite, reason: requirement.missing, howToRun: requirement.howToRun });
  return false;
}

/** The name of a skipped block's one test; `.ci/run` runs every file with nothing but these (`jest -t`). */
export const MISSING_HERE = 'needs what is missing here';

/**
 * `describe` where the requirement is met. Elsewhere the block is declared skipped, with one test
 * that names the reason (so jest counts it), and its body never runs: a body may set up what only
 * exists where the requirement is met.
 */
export function describeWith(requirement: Requirement, title: string, body: () => void): void {
  if (isMet(requirement, title)) {
    describe(title, body);
    return;
  }
  describe.skip(title, () => {
    it(`${MISSING_HERE}: ${requirement.missing}`, () => undefined);
  });
}

/** PostgreSQL for the tests: TEST_DATABASE_URL's server (CI sets it, with REQUIRE_POSTGRES=1). */
export const POSTGRES: Requirement = {
  missing: process.env.TEST_DATABASE_URL ? undefined : 'TEST_DATABASE_URL is not set',
  howToRun: 'set TEST_DATABASE_URL to a postgres:// URL',
  requiredBy: 'REQUIRE_POSTGRES',
};

/** PgBouncer in front of the test PostgreSQL (CI installs Debian's package and sets REQUIRE_PGBOUNCER=1). */
export const PGBOUNCER: Requirement = {
  missing: !process.env.TEST_DATABASE_URL ? 'TEST_DATABASE_URL is not set' : fs.existsSync(pgbouncerPath) ? undefined : `no PgBouncer at ${pgbouncerPath}`,
  howToRun: 'install pgbouncer (apt-get install pgbouncer) or set PGBOUNCER_PATH, with TEST_DATABASE_URL set',
  requiredBy: 'REQUIRE_PGBOUNCER',
};

/**
 * A streaming replica of the test PostgreSQL that a test starts itself (CI installs Debian's
 * postgresql, whose pg_basebackup and pg_ctl it uses, and sets REQUIRE_REPLICA=1).
 */
export const REPLICA: Requirement = {
  missing: !process.env.TEST_DATABASE_URL
    ? 'TEST_DATABASE_URL is not set'
    : anyBinDir() === undefined
      ? `no pg_basebackup under ${POSTGRES_LIB}/*/bin`
      : undefined,
  howToRun:
    "install PostgreSQL's programs (apt-get install postgresql) or set PG_BINDIR, with TEST_DATABASE_URL set to a server that allows replication connections",
  requiredBy: 'REQUIRE_REPLICA',
};

/** The Chromium that the suites in a real browser drive (playwright-core's `executablePath`): Debian's package unless CHROMIUM_PATH names another. */
export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** A Chromium for the suites in a real browser (CI installs Debian's package and sets REQUIRE_BROWSER=1). */
export const CHROMIUM: Requirement = {
  missing: fs.existsSync(chromiumPath) ? undefined : `no Chromium at ${chromiumPath}`,
  howToRun: 'set CHROMIUM_PATH to a Chromium binary',
  requiredBy: 'REQUIRE_BROWSER',
};

/** A block in a real browser: run where Chromium is; elsewhere skipped and named at the end of the run. */
export function describeInChromium(title: string, body: () => void): void {
  describeWith(CHROMIUM, title, body);
}

/** A toolchain the reference's code samples run with, and the command that runs it. */
export interface Toolchain extends Requirement {
  readonly command: string;
}

/**
 * A language's toolchain for running the reference's code samples (Debian's `python3` with
 * `python3-requests`, `php-cli` with `php-curl`, `golang-go`; CI installs them and sets
 * REQUIRE_SAMPLE_LANGUAGES=1). `command` (which `variable` may replace, with a missing one to try
 * the skip) must exist, and answer `check` with exit 0 when the sample needs more of it.
 */
export function toolchain(spec: { variable: string; command: string; name: string; check: readonly string[]; needs: string; packages: string }): Toolchain {
  const command = process.env[spec.variable] || spec.command;
  const probe = spawnSync(command, spec.check, { stdio: 'ignore', timeout: 30_000 });
  const missing = probe.error ? `no ${spec.name} at ${command}` : probe.status === 0 ? undefined : `${command} has no ${spec.needs}`;
  return { command, missing, howToRun: `install Debian's ${spec.packages}, or set ${spec.variable}`, requiredBy: 'REQUIRE_SAMPLE_LANGUAGES' };
}
