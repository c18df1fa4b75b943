import type { ListenOptions, StopListening, WorkListener } from './engine';

/**
 * The listeners of one pool, sharing what was opened to hear (on PostgreSQL a connection kept aside):
 * the server's dispatchers share its connection, which closes with the last of them.
 */
export class SharedListener {
  private readonly listeners = new Set<() => void>();
  private opened: WorkListener | undefined;

  constructor(private readonly open: (tell: () => void, options: ListenOptions) => WorkListener) {}

  listen(onWork: () => void, options: ListenOptions): StopListening {
    this.opened ??= this.open(() => {
      for (const listener of this.listeners) listener();
    }, options);
    const mine = this.opened;
    const call = () => onWork();
    this.listeners.add(call);
    return async () => {
      if (!this.listeners.delete(call) || this.listeners.size > 0) return;
      if (this.opened === mine) this.opened = undefined;
      await mine.close();
    };
  }
}
