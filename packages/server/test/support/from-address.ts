import { type IncomingHttpHeaders, request } from 'node:http';
import { CookieJar, inputValue } from './browser';

export interface PlainResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface PlainRequest {
  method?: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  form?: Record<string, string>;
}

/**
 * One HTTP request to `origin` on a connection of its own from the local address `from`: Linux
 * routes all of 127.0.0.0/8 to the loopback interface, so each 127.x.y.z is a client of its own.
 */
export function sendFrom(from: string, origin: string, { method = 'GET', path, headers = {}, form }: PlainRequest): Promise<PlainResponse> {
  const body = form && new URLSearchParams(form).toString();
  const url = new URL(path, origin);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      {
        method,
        localAddress: from,
        agent: false,
        headers: {
          ...headers,
          ...(body === undefined ? {} : { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': String(Buffer.byteLength(body)) }),
        },
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, text: Buffer.concat(chunks).toString('utf8') }));
        incoming.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** A browser on one client address: keeps its cookies and signs in through the dashboard's login form. */
export class BrowserAt {
  readonly jar = new CookieJar();

  constructor(
    readonly origin: string,
    readonly address: string,
  ) {}

  async send(plain: PlainRequest): Promise<PlainResponse> {
    const cookies = this.jar.header();
    const response = await sendFrom(this.address, this.origin, { ...plain, headers: { ...(cookies ? { Cookie: cookies } : {}), ...plain.headers } });
    this.jar.store(response);
    return response;
  }

  /** Posts the login form (opening the login page first when the browser has no form token yet). */
  async signIn(email: string, password: string, headers: Record<string, string> = {}): Promise<PlainResponse> {
    const csrf = this.jar.get('svc_login_csrf') ?? inputValue((await this.send({ path: '/dashboard/login', headers })).text, 'csrf');
    return this.send({ method: 'POST', path: '/dashboard/login', headers, form: { csrf, return_to: '/dashboard', email, password } });
  }
}
