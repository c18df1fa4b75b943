import { request as httpRequest } from 'node:http';
import { type Listening, listen } from './listen';

/** One answer the proxy passed back: what a reader's program was told. */
export interface RecordedAnswer {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The error code of an error answer, when it has the interface's shape. */
  readonly code?: string;
  /** Set on a marker a runner sent (`GET /__sample__/<name>`) before the program `name`: the answers after it are that program's. */
  readonly marker?: string;
}

/** Where a runner of several programs marks the start of the next one: the proxy answers it itself. */
export const MARKER_PATH = '/__sample__/';

export interface RecordingProxy extends Listening {
  /** The answers since the last call, in the order they were sent back. */
  take(): RecordedAnswer[];
}

const MAX_RECORDED_BODY = 4096;

/**
 * A reverse proxy in front of a service, recording the status of every answer it passes on: a
 * program pointed at it (a guide's block) can then be held to what it was answered, even where it
 * does not look (a curl without `--fail` exits 0 on a 404). Bodies and headers pass unchanged.
 */
export async function recordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  let answers: RecordedAnswer[] = [];
  const listening = await listen((incoming, outgoing) => {
    if (incoming.url?.startsWith(MARKER_PATH)) {
      answers.push({ method: incoming.method ?? '', path: incoming.url, status: 204, marker: decodeURIComponent(incoming.url.slice(MARKER_PATH.length)) });
      outgoing.writeHead(204).end();
      return;
    }
    const forwarded = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        const status = answer.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let kept = 0;
        answer.on('data', (chunk: Buffer) => {
          if (status >= 400 && kept < MAX_RECORDED_BODY) {
            chunks.push(chunk);
            kept += chunk.length;
          }
        });
        answer.on('end', () => {
          const code = status >= 400 ? errorCodeOf(Buffer.concat(chunks).toString('utf8')) : undefined;
          answers.push({ method: incoming.method ?? '', path: incoming.url ?? '', status, ...(code ? { code } : {}) });
        });
        outgoing.writeHead(status, answer.rawHeaders);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', (error) => {
      answers.push({ method: incoming.method ?? '', path: incoming.url ?? '', status: 502, code: error.message });
      outgoing.destroy(error);
    });
    incoming.pipe(forwarded);
  });
  return {
    ...listening,
    take: () => {
      const taken = answers;
      answers = [];
      return taken;
    },
  };
}

/** Answers split at their markers: for each marked program, the answers it got (the answers before the first marker are dropped). */
export function answersByMarker(answers: readonly RecordedAnswer[]): Map<string, RecordedAnswer[]> {
  const byMarker = new Map<string, RecordedAnswer[]>();
  let current: RecordedAnswer[] | undefined;
  for (const answer of answers) {
    if (answer.marker === undefined) current?.push(answer);
    else {
      current = [];
      byMarker.set(answer.marker, current);
    }
  }
  return byMarker;
}

function errorCodeOf(body: string): string | undefined {
  try {
    const code = (JSON.parse(body) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}
