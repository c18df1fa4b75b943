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
  /** Where the last complete walk of the events feed got to (src/reconcile.ts). */
  feed?: FeedMark;
}

/** What the app keeps between two reconciliations with the events feed. */
export interface FeedMark {
  /** The high-water mark: the newest `occurred_at` the feed has served (the service's clock). */
  newest: string;
  /** When the walk that served it started (this app's clock): within 30 days, the feed still holds every event since. */
  walkedAt: string;
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
  /** The id of every event handled, with its `occurred_at`: kept as long as the service keeps events, so a webhook and the feed never handle one twice. */
  handled: Record<string, string>;
}

/** Events kept for the page: the newest ones are what an owner looks at. */
const EVENTS_KEPT = 50;
/** The service keeps events 30 days; their ids are kept a day longer, so nothing the feed still lists is handled again. */
const IDS_KEPT_MS = 31 * 24 * 60 * 60_000;

/**
 * The app's state as one JSON file in its data directory. Every change is written to a temporary
 * file and renamed over the old one, so a crash never leaves half a file, and changes are applied one
 * at a time, so two webhooks arriving together never lose one of them. An app with more than one
 * process keeps this in a database instead.
 */
export class JsonStorage {
  private state: Saved = { installations: {}, events: [], handled: {} };
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(private readonly file: string) {}

  static async open(dataDir: string): Promise<JsonStorage> {
    await fs.mkdir(dataDir, { recursive: true });
    const storage = new JsonStorage(path.join(dataDir, 'state.json'));
    try {
      storage.state = { ...storage.state, ...(JSON.parse(await fs.readFile(storage.file, 'utf8')) as Partial<Saved>) };
      // A file written before ids were kept apart: the events it shows were handled.
      for (const event of storage.state.events) storage.state.handled[event.id] ??= event.occurredAt;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    return storage;
  }

  installation(storeId: string): Installation | undefined {
    return this.state.installations[storeId];
  }

  storeIds(): string[] {
    return Object.keys(this.state.installations);
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

  /** Keeps the mark of a walk that has ended (unless the installation was forgotten meanwhile). */
  saveFeedMark(storeId: string, feed: FeedMark): Promise<void> {
    return this.change((state) => {
      const installation = state.installations[storeId];
      if (installation) installation.feed = feed;
    });
  }

  forget(storeId: string): Promise<void> {
    return this.change((state) => {
      delete state.installations[storeId];
    });
  }

  /**
   * Keeps an event unless its id was handled already (a webhook comes at least once, and the feed
   * lists what webhooks brought too); answers whether it was new. Checked and kept in one change,
   * so a webhook and a reconciliation bringing the same event together keep it once.
   */
  recordEvent(event: ReceivedEvent): Promise<boolean> {
    return this.change((state) => {
      if (state.handled[event.id] !== undefined) return false;
      const keptAfter = Date.now() - IDS_KEPT_MS;
      state.handled = Object.fromEntries(Object.entries(state.handled).filter(([, occurredAt]) => Date.parse(occurredAt) > keptAfter));
      state.handled[event.id] = event.occurredAt;
      // Newest first by when it happened: the feed brings missed events late, and newest first.
      state.events = [event, ...state.events].sort((a, b) => Date.parse(b.occurredAt) - Date.parse(a.occurredAt)).slice(0, EVENTS_KEPT);
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
