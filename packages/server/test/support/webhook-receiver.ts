import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import type { Clock } from '../../src/core/clock';
import { type Listening, listen } from './listen';
import { eventSchemaErrors, type StoredEvent } from './storefront-fixtures';

/** One request the receiver got. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A real HTTP receiver on 127.0.0.1: it records every request and answers each path with the status
 * (and headers) set for it (200 unless told otherwise; `hang` answers only when the path is given a status again). Tests give each subscription a path of its own.
 */
export interface Receiver {
  origin: string;
  url(path: string): string;
  receivedAt(path: string): Received[];
  answer(path: string, status: number | 'hang', headers?: Record<string, string>): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const statuses = new Map<string, number | 'hang'>();
  const answerHeaders = new Map<string, Record<string, string>>();
  const hanging = new Map<string, ServerResponse[]>();
  let listening: Listening | undefined;
  listening = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ method: req.method ?? '', path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const status = statuses.get(path) ?? 200;
      if (status === 'hang') return void hanging.set(path, [...(hanging.get(path) ?? []), res]);
      res.writeHead(status, answerHeaders.get(path) ?? {});
      res.end('ok');
    });
  });
  const { origin } = listening;
  return {
    origin,
    url: (path) => `${origin}${path}`,
    receivedAt: (path) => received.filter((request) => request.path === path),
    answer(path, status, headers = {}) {
      statuses.set(path, status);
      answerHeaders.set(path, headers);
      if (status === 'hang') return;
      // Requests left hanging at this path are answered now, with the new status.
      for (const res of hanging.get(path) ?? []) {
        res.writeHead(status, headers);
        res.end();
      }
      hanging.delete(path);
    },
    close: () => (listening ? listening.close() : Promise.resolve()),
  };
}

/**
 * Verifies a delivery as a receiver would, with the `standardwebhooks` package and this secret, at
 * the clock's time (the package checks the timestamp against `Date.now`): throws when no signature
 * matches. Answers the parsed body.
 */
export function verifyDelivery(request: Received, secret: string, clock: Clock): Record<string, unknown> {
  const now = jest.spyOn(Date, 'now').mockReturnValue(clock.now());
  try {
    return new Webhook(secret).verify(request.body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    }) as Record<string, unknown>;
  } finally {
    now.mockRestore();
  }
}

/** A delivery as the rules hold it: a JSON POST whose `webhook-id` is the body's id, valid against the spec's schema of its event. */
export function expectWellFormedDelivery(request: Received): Record<string, unknown> {
  expect(request.method).toBe('POST');
  expect(request.headers['content-type']).toBe('application/json');
  const body = JSON.parse(request.body) as StoredEvent['payload'] & { id: string };
  expect(request.headers['webhook-id']).toBe(body.id);
  expect(eventSchemaErrors({ type: body.type, installation_id: null, payload: body })).toEqual([]);
  return body;
}
