/** Where time comes from: injected everywhere, so expiry rules are tested exactly, not by sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told to; for tests. */
export class ManualClock implements Clock {
  constructor(private current: number = Date.parse('2026-11-22T09:00:00Z')) {}

  now(): number {
    return this.current;
  }

  advance(milliseconds: number): void {
    this.current += milliseconds;
  }

  set(instant: number | string): void {
    this.current = typeof instant === 'string' ? Date.parse(instant) : instant;
  }
}

export const toIso = (milliseconds: number): string => new Date(milliseconds).toISOString();
