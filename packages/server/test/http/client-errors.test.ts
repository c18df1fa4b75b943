import { connect } from 'node:net';
import { clientErrorOf } from '../../src/http/client-errors';
import { testDatabases } from '../support/databases';
import { suiteHarness } from '../support/harness';
import { type Listening, listen } from '../support/listen';

/** Sends raw bytes and reads everything the server writes until it closes the connection. */
function exchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
    socket.write(raw);
  });
}

function parse(response: string) {
  const [head = '', body = ''] = response.split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: JSON.parse(body) as { error: { code: string; message: string }; meta: { request_id: string } },
  };
}

describe('requests Node refuses before routing', () => {
  it('maps the parser codes to the interface codes', () => {
    expect(clientErrorOf('HPE_HEADER_OVERFLOW')?.code).toBe('HEADERS_TOO_LARGE');
    expect(clientErrorOf('HPE_HEADER_OVERFLOW')?.status).toBe(431);
    expect(clientErrorOf('HPE_INVALID_METHOD')?.code).toBe('VALIDATION_FAILED');
    expect(clientErrorOf('ECONNRESET')).toBeUndefined();
    expect(clientErrorOf(undefined)).toBeUndefined();
  });
});

describe.each(testDatabases())('requests Node refuses before routing, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let server: Listening;

  beforeAll(async () => {
    server = await listen(h.app);
    h.atEnd(() => server.close());
  });

  it('answers a header block over 16 KiB with 431 HEADERS_TOO_LARGE in the error format, then closes', async () => {
    const raw = `GET /stores/00000000-0000-4000-8000-000000000000/v1/products HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(17 * 1024)}\r\n\r\n`;
    const answer = parse(await exchange(server.port, raw));
    expect(answer.status).toBe(431);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.headers.connection).toBe('close');
    expect(answer.body.error.code).toBe('HEADERS_TOO_LARGE');
    expect(answer.body.meta.request_id).toBe(answer.headers['x-request-id']);
    expect(answer.body.meta.request_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers malformed HTTP with 400 VALIDATION_FAILED in the error format', async () => {
    const answer = parse(await exchange(server.port, 'GET / HTTP/1.1\r\nHost: localhost\r\nBad Header Line\r\n\r\n'));
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('VALIDATION_FAILED');
  });

  it('still serves a request whose headers fit', async () => {
    const response = await fetch(`${server.origin}/stores/00000000-0000-4000-8000-000000000000/v1/products`, {
      headers: { 'X-Padding': 'a'.repeat(8 * 1024) },
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('UNAUTHENTICATED');
  });
});
