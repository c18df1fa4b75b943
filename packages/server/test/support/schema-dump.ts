import { execFileSync } from 'node:child_process';

/**
 * A PostgreSQL schema as `pg_dump --schema-only` prints it (Debian's postgresql-client), made
 * comparable between two databases migrated on different days or by different runs: the schema's
 * name, the day partitions' names and their bounds are replaced by placeholders, comments and
 * settings (and pg_dump's random `\restrict` key) are left out, and the statements are sorted (the dump orders objects by their names,
 * which the placeholders change). Anything else, a CHECK's constant included, stays as printed.
 */
export function dumpSchema(url: string, schema: string): string {
  const dump = execFileSync('pg_dump', ['--schema-only', '--no-owner', '--no-privileges', `--schema=${schema}`, `--dbname=${url}`], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return normaliseDump(dump, schema);
}

export function normaliseDump(dump: string, schema: string): string {
  const statements = dump
    .split('\n')
    // pg_dump's \restrict lines carry a random key of each dump.
    .filter((line) => !/^(--|SET |SELECT pg_catalog\.set_config|\\(un)?restrict )/.test(line))
    .join('\n')
    .replaceAll(`${schema}.`, 'SCHEMA.')
    .replaceAll(schema, 'SCHEMA')
    .replace(/_p\d{8}/g, '_pDAY')
    .replace(/FOR VALUES FROM \([^)]*\) TO \([^)]*\)/g, 'FOR VALUES FROM (BOUND) TO (BOUND)')
    .split(/;\n/)
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
  return statements.sort().join(';\n\n');
}
