import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { createDatabase } from '../../packages/server/src/db/connection';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { seedCatalogForBench } from '../../packages/server/src/db/seeds/demo-catalog';
import { createStore } from '../../packages/server/src/platform/stores';
import { createServices } from '../../packages/server/src/services';
import { systemClock } from '../../packages/server/src/clock';

(async () => {
  const dataDir = '/tmp/svc-probe-db';
  let storeId: string;
  if (!fs.existsSync(dataDir + '/store.sqlite')) {
    const db = createDatabase({ databaseUrl: undefined, dataDir });
    await migrateToLatest(db);
    const services = createServices({ db, clock: systemClock, rateLimits: { perInstallation: 1e9, perClient: 1e9 } });
    const { store } = await createStore(services, { name: 'B', domain: 'b.example', owner: { email: 'o@b.example', name: 'O', password: 'pppppppppppp' } });
    await seedCatalogForBench(db, store.id, 100000);
    await db.destroy();
  }
  const conn = new Database(dataDir + '/store.sqlite');
  storeId = (conn.prepare('select id from stores').get() as any).id;
  const time = (name: string, sql: string, params: unknown[], n = 5000) => {
    const st = conn.prepare(sql);
    for (let i = 0; i < 500; i++) st.all(...params);
    const t = process.cpuUsage(); for (let i = 0; i < n; i++) st.all(...params); const u = process.cpuUsage(t);
    console.log(name.padEnd(30), ((u.user + u.system) / n).toFixed(1), 'µs');
  };
  for (const id of [5000, 5001, 5003]) {
    console.log(conn.prepare('select category_id from products where id = ?').get(id));
    time('join store ' + id, 'select p.*, c.name as category_name from products p left join categories c on c.id = p.category_id and c.store_id = p.store_id where p.store_id = ? and p.id = ?', [storeId, id]);
    time('join nostore ' + id, 'select p.*, c.name as category_name from products p left join categories c on c.id = p.category_id where p.store_id = ? and p.id = ?', [storeId, id]);
    time('subquery ' + id, 'select p.*, (select c.name from categories c where c.id = p.category_id and c.store_id = p.store_id) as category_name from products p where p.store_id = ? and p.id = ?', [storeId, id]);
    time('nojoin ' + id, 'select p.* from products p where p.store_id = ? and p.id = ?', [storeId, id]);
  }
  time('list 26 join', 'select p.*, c.name as category_name from products p left join categories c on c.id = p.category_id and c.store_id = p.store_id where p.store_id = ? and p.id > ? order by p.id asc limit ?', [storeId, 5000, 26], 2000);
  time('list 26 nojoin', 'select p.* from products p where p.store_id = ? and p.id > ? order by p.id asc limit ?', [storeId, 5000, 26], 2000);
  console.log(conn.prepare('explain query plan select p.*, c.name as category_name from products p left join categories c on c.id = p.category_id and c.store_id = p.store_id where p.store_id = ? and p.id = ?').all(storeId, 5000));
  console.log(conn.prepare("select sql from sqlite_master where name='products'").get());
})();
(async () => {
  await new Promise((r) => setTimeout(r, 100));
  const conn = new Database('/tmp/svc-probe-db/store.sqlite');
  const storeId = (conn.prepare('select id from stores').get() as any).id;
  const sql = 'select p.*, c.name as category_name from products p left join categories c on c.id = p.category_id and c.store_id = p.store_id where p.store_id = ? and p.id > ? order by p.id asc limit ?';
  const st = conn.prepare(sql); st.raw(true);
  const names = st.columns().map((c) => c.name);
  const make = new Function('r', `return {${names.map((n, i) => `${JSON.stringify(n)}: r[${i}]`).join(', ')}};`) as (r: unknown[]) => object;
  const bench = (name: string, f: () => unknown, n = 2000) => {
    for (let i = 0; i < 300; i++) f();
    const t = process.cpuUsage(); for (let i = 0; i < n; i++) f(); const u = process.cpuUsage(t);
    console.log(name.padEnd(30), ((u.user + u.system) / n).toFixed(1), 'µs');
  };
  const params = [storeId, 5000, 26];
  bench('raw arrays', () => st.all(...params));
  bench('raw + loop objects', () => (st.all(...params) as unknown[][]).map((r) => { const o: Record<string, unknown> = {}; for (let i = 0; i < names.length; i++) o[names[i]!] = r[i]; return o; }));
  bench('raw + codegen objects', () => (st.all(...params) as unknown[][]).map(make));
  const st2 = conn.prepare(sql);
  bench('object mode', () => st2.all(...params));
})();
