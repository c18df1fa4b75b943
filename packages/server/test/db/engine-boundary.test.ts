import fs from 'node:fs';
import path from 'node:path';

/**
 * One engine per database, chosen once (docs/decisions/0075-one-engine-per-database.md): outside
 * `db/` no file asks which database it is on, reaches a driver, or picks a library's store by
 * database, nor finds the engine from a handle: it is given the engine's ports (the deps' `engine`)
 * or calls `db/`'s functions; a statement that must differ per database is a member of the engine,
 * written in `db/postgres/` and `db/sqlite/` (the webhook claim). Only `db/` (its migrations among
 * it) picks a variant per engine (`forEngine`).
 */
const SRC = path.join(__dirname, '../../src');

const FORBIDDEN: readonly [RegExp, string][] = [
  [/\bisPostgres\b/, 'asks which database it is on'],
  [/client\.config\b|\.client\.(pool|acquire|connectionSettings)/, "reads knex's client"],
  [/from '(pg|better-sqlite3)'/, 'imports a database driver'],
  [/from '[./]*db\/(postgres|sqlite)\//, "imports an engine's own module"],
  [/\bengineOf(Handle)?\b/, 'finds the engine from a handle instead of being given its ports (services container)'],
  [/RateLimiter(Postgres|SQLite|Memory)\b/, "picks rate-limiter-flexible's store"],
  [/['"](pg|better-sqlite3)['"]\s*[!=]==|[!=]==\s*['"](pg|better-sqlite3)['"]/, 'compares a client name'],
  [/\b(forEngine|PerEngine|EngineName)\b/, 'picks a variant per engine'],
  [/['"](postgres|sqlite)['"]\s*[!=]==|[!=]==\s*['"](postgres|sqlite)['"]|case\s+['"](postgres|sqlite)['"]/, "branches on the engine's name"],
  [/(^|[{,])\s*(postgres|sqlite)\s*:\s/, 'writes a variant per engine'],
];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return ['db', 'generated'].includes(path.relative(SRC, full)) ? [] : sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('the database engines', () => {
  it('are known only inside db/: no file outside asks which database it is on', () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(100);
    const breaches = files.flatMap((file) => {
      const lines = fs.readFileSync(file, 'utf8').split('\n');
      return lines.flatMap((line, index) =>
        FORBIDDEN.filter(([pattern]) => pattern.test(line)).map(([, what]) => `${path.relative(SRC, file)}:${index + 1} ${what}: ${line.trim()}`),
      );
    });
    expect(breaches).toEqual([]);
  });

  it('catches a breach (the rule is not vacuous)', () => {
    const sample = [
      "import { isPostgres } from '../db/dialect';",
      "import pg from 'pg';",
      "import { x } from '../db/sqlite/reader';",
      'db.client.config.client',
      "import { engineOfHandle } from '../db/engine';",
      "import { forEngine } from '../db/engine';",
      'const CLAIMS: PerEngine<Claiming> = {',
      "if (name === 'postgres') return;",
      'const claimsOwnRecords = { postgres: true, sqlite: false };',
      '  sqlite: { claim: claimOnSqlite, recordsDelivered: false },',
    ];
    for (const line of sample) expect(FORBIDDEN.some(([pattern]) => pattern.test(line))).toBe(true);
  });
});
