import fs from 'node:fs/promises';
import path from 'node:path';
import type { StoredTokens, WebhookEvent } from '@svc/client';

/** What the app keeps for one store it is installed in. */
export interface Installation {
  storeId: string;
  installationId: string;
  tokens: StoredTokens;
  /** The app's webhook subscription in the store and its signing secrets (two during a rotation). */
  webhooks?: { subscriptionId: string; secrets: string[] };
}

export interface ReceivedEvent {
  id: string;
  type: WebhookEvent['type'];
  storeId: string;
  occurredAt: string;
  receivedAt: string;
  summary: string;
}

interface Saved {
  installations: Record<string, Installation>;
  events: ReceivedEvent[];
}

/** Events kept for the page: the newest ones are what an owner looks at. */
const EVENTS_KEPT = 50;

/**
 * The app's state as one JSON file in its data directory. Every change is written to a temporary
 * file and renamed over the old one, so a crash never leaves half a file, and changes are applied one
 * at a time, so two webhooks arriving together never lose one of them. An app with more than one
 * process keeps this in a database instead.
 */
export class JsonStorage {
  private state: Saved = { installations: {}, events: [] };
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(private readonly file: string) {}

  static async open(dataDir: string): Promise<JsonStorage> {
    await fs.mkdir(dataDir, { recursive: true });
    const storage = new JsonStorage(path.join(dataDir, 'state.json'));
    try {
      storage.state = JSON.parse(await fs.readFile(storage.file, 'utf8')) as Saved;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    return storage;
  }

  installation(storeId: string): Installation | undefined {
    return this.state.installations[storeId];
  }

  recentEvents(storeId: string): ReceivedEvent[] {
    return this.state.events.filter((event) => event.storeId === storeId);
  }

  saveInstallation(installation: Installation): Promise<void> {
    return this.change((state) => {
      state.installations[installation.storeId] = installation;
    });
  }

  saveTokens(storeId: string, tokens: StoredTokens): Promise<void> {
    return this.change((state) => {
      const installation = state.installations[storeId];
      if (!installation) throw new Error(`No installation is stored for store ${storeId}`);
      installation.tokens = tokens;
    });
  }

  forget(storeId: string): Promise<void> {
    return this.change((state) => {
      delete state.installations[storeId];
    });
  }

  /** Keeps an event unless one with its id is already kept (delivery is at least once); answers whether it was new. */
  recordEvent(event: ReceivedEvent): Promise<boolean> {
    return this.change((state) => {
      if (state.events.some((kept) => kept.id === event.id)) return false;
      state.events = [event, ...state.events].slice(0, EVENTS_KEPT);
      return true;
    });
  }

  private change<T>(apply: (state: Saved) => T): Promise<T> {
    const next = this.queue.then(async () => {
      const draft = structuredClone(this.state);
      const result = apply(draft);
      const temporary = `${this.file}.${process.pid}.tmp`;
      await fs.writeFile(temporary, JSON.stringify(draft, null, 2));
      await fs.rename(temporary, this.file);
      this.state = draft;
      return result;
    });
    this.queue = next.catch(() => undefined);
    return next;
  }
}
