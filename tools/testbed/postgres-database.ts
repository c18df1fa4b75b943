import { randomUUID } from 'node:crypto';
import pg from 'pg';

/** One statement on `adminUrl`'s server, on a connection of its own. */
async function asAdmin(adminUrl: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/** A PostgreSQL database of its own (a server uses the default schema), made on `adminUrl`'s server and dropped after. */
export async function freshPostgresDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `svc_run_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  await asAdmin(adminUrl, `create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => asAdmin(adminUrl, `drop database if exists ${name} with (force)`) };
}
