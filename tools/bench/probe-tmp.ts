import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDatabase } from '../../packages/server/src/db/connection';
import { migrateToLatest } from '../../packages/server/src/db/migrate';
import { seedCatalogForBench } from '../../packages/server/src/db/seeds/demo-catalog';
import { createStore } from '../../packages/server/src/platform/stores';
import { createServices } from '../../packages/server/src/services';
import { systemClock } from '../../packages/server/src/clock';
import { listProductRows, loadProduct } from '../../packages/server/src/domain/catalog/products';

(async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-probe-'));
  const db = createDatabase({ databaseUrl: undefined, dataDir });
  await migrateToLatest(db);
  const services = createServices({ db, clock: systemClock, rateLimits: { perInstallation: 1e9, perClient: 1e9 } });
  const { store } = await createStore(services, { name: 'B', domain: 'b.example', owner: { email: 'o@b.example', name: 'O', password: 'pppppppppppp' } });
  await seedCatalogForBench(db, store.id, 100000);
  const q = db('tokens as t').join('grants as g', 'g.id', 't.grant_id').join('installations as i', 'i.id', 't.installation_id').join('apps as a', 'a.id', 'i.app_id').join('stores as s', 's.id', 't.store_id').where({ 't.token_hash': 'x', 't.kind': 'access' }).first('t.id');
  console.log(q.toString());
  console.log(await db.raw('explain query plan ' + q.toString()));
  const pq = db('products as p').leftJoin('categories as c', function j() { this.on('c.id', '=', 'p.category_id').andOn('c.store_id', '=', 'p.store_id'); }).select('p.*', 'c.name as category_name').where('p.store_id', store.id).where('p.id', 5000).first();
  console.log(await db.raw('explain query plan ' + pq.toString()));
  let lq: any; db.once('query', (x: any) => { lq = x; }); await listProductRows(db, store.id, {}, 5000, 26);
  console.log(lq.sql);
  for (const [name, run] of [
    ['token', () => q.clone()],
    ['product', () => loadProduct(db, store.id, 5000)],
    ['select1', () => db.raw('select 1')],
    ['list', () => listProductRows(db, store.id, {}, 5000, 26)],
    ['list-raw-knex', () => db.raw(lq.sql, lq.bindings)],
  ] as const) {
    for (let i = 0; i < 500; i++) await run();
    const t0 = process.cpuUsage(); const n = 3000;
    for (let i = 0; i < n; i++) await run();
    const u = process.cpuUsage(t0);
    console.log(name, ((u.user + u.system) / n / 1000).toFixed(3), 'ms cpu/query');
  }
  // raw driver timings
  const conn = await (db.client as any).acquireConnection();
  const st = conn.prepare(pq.toSQL().sql);
  const b = pq.toSQL().bindings;
  const t0 = process.cpuUsage(); for (let i = 0; i < 3000; i++) st.all(b); const u = process.cpuUsage(t0);
  console.log('raw product all', ((u.user + u.system) / 3000 / 1000).toFixed(3));
  for (const [name, sql, binds] of [
    ['token raw', q.toSQL().sql, q.toSQL().bindings],
    ['pk id only', 'select id from products where id = ?', [5000]],
    ['pk star', 'select * from products where id = ?', [5000]],
    ['pk star nojoin w store', 'select * from products where store_id = ? and id = ?', [store.id, 5000]],
    ['select 1', 'select 1', []],
    ['list raw', lq.sql, lq.bindings],
    ['list nojoin', 'select p.* from products as p where p.store_id = ? and p.id > ? order by p.id asc limit ?', lq.bindings],
    ['list ids', 'select p.id from products as p where p.store_id = ? and p.id > ? order by p.id asc limit ?', lq.bindings],
    ['list name', 'select p.id, p.name, p.description from products as p where p.store_id = ? and p.id > ? order by p.id asc limit ?', lq.bindings],
    ['one join only id', 'select p.id, c.name from products p left join categories c on c.id = p.category_id and c.store_id = p.store_id where p.store_id = ? and p.id = ?', [store.id, 5000]],
    ['one join no store', 'select p.*, c.name from products p left join categories c on c.id = p.category_id where p.store_id = ? and p.id = ?', [store.id, 5000]],
  ] as const) {
    const s2 = conn.prepare(sql);
    const t1 = process.cpuUsage(); for (let i = 0; i < 3000; i++) s2.all(binds); const u1 = process.cpuUsage(t1);
    console.log(name, ((u1.user + u1.system) / 3000 / 1000).toFixed(4));
  }
  {
    const s3 = conn.prepare('select p.* from products as p where p.store_id = ? and p.id > ? order by p.id asc limit ?'); s3.raw(true);
    const t1 = process.cpuUsage(); for (let i = 0; i < 3000; i++) s3.all(lq.bindings); const u1 = process.cpuUsage(t1);
    console.log('list raw arrays', ((u1.user + u1.system) / 3000 / 1000).toFixed(4));
    const s4 = conn.prepare('select p.id,p.name,p.description,p.short_desc,p.slug,p.keywords,p.supported_devices,p.seo_title,p.seo_description,p.og_image,p.images,p.product_kind,p.status,p.price_halalas,p.old_price_halalas,p.price_state,p.resource_version,p.created_at,p.updated_at from products as p where p.store_id = ? and p.id > ? order by p.id asc limit ?');
    const t2 = process.cpuUsage(); for (let i = 0; i < 3000; i++) s4.all(lq.bindings); const u2 = process.cpuUsage(t2);
    console.log('list needed cols', ((u2.user + u2.system) / 3000 / 1000).toFixed(4));
    const t3 = process.cpuUsage(); for (let i = 0; i < 3000; i++) JSON.stringify(s4.all(lq.bindings)); const u3 = process.cpuUsage(t3);
    console.log('list needed cols + stringify', ((u3.user + u3.system) / 3000 / 1000).toFixed(4));
  } console.log(conn.pragma('cache_size'), conn.pragma('page_size'), conn.pragma('mmap_size'), conn.pragma('journal_mode'));
  (db.client as any).releaseConnection(conn);
  await db.destroy();
})();
