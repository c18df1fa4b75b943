import fs from 'node:fs';
import { bundledSpecPath } from '@svc/contract/node';
import request from 'supertest';
import { testDatabases } from '../support/databases';
import { suiteHarness } from '../support/harness';

const [sqlite] = testDatabases();
const h = suiteHarness(sqlite!);

describe('GET /openapi.json', () => {
  const bundled = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as object;

  it('answers the bundled document as JSON, without a token, cacheable', async () => {
    const response = await request(h.app).get('/openapi.json');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.body).toEqual(bundled);
    expect(response.headers['cache-control']).toMatch(/^public, max-age=[1-9][0-9]*$/);
    expect(response.headers.etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(response.headers['access-control-allow-origin']).toBe('*');
  });

  it('answers 304 without a body to If-None-Match with its ETag, also in a list, and 200 to another tag', async () => {
    const { headers } = await request(h.app).get('/openapi.json');
    const notModified = await request(h.app).get('/openapi.json').set('If-None-Match', headers.etag!);
    expect(notModified.status).toBe(304);
    expect(notModified.text).toBe('');
    expect(notModified.headers.etag).toBe(headers.etag);
    expect((await request(h.app).get('/openapi.json').set('If-None-Match', `"other", ${headers.etag}`)).status).toBe(304);
    const changed = await request(h.app).get('/openapi.json').set('If-None-Match', '"an-older-document"');
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual(bundled);
  });

  it('answers HEAD with the headers only, and a token sent along changes nothing', async () => {
    const head = await request(h.app).head('/openapi.json');
    expect(head.status).toBe(200);
    expect(head.headers.etag).toMatch(/^"/);
    const withToken = await request(h.app).get('/openapi.json').set('Authorization', 'Bearer svc_at_not-a-token');
    expect(withToken.status).toBe(200);
  });

  it('takes no other method', async () => {
    const response = await request(h.app).post('/openapi.json').send({});
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('NOT_FOUND');
  });
});
