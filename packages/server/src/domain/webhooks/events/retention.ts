import { ApiError } from '../../../core/errors';
import { UUID_PATTERN, uuidV7Time } from '../../../core/ids';
import { OUTBOX_KEPT_MS } from '../../../services/outbox';

/** Events that occurred after this instant are kept (the outbox's 30 days); older ones are past retention. */
export const keptAfter = (now: number): number => now - OUTBOX_KEPT_MS;

/** Whether an event that occurred at `occurredAt` is past the 30 days events are kept. */
export const isPastRetention = (occurredAt: number, now: number): boolean => occurredAt <= keptAfter(now);

export const eventExpired = () => new ApiError('EVENT_EXPIRED', 'The event occurred more than 30 days ago: events are kept 30 days.');

/**
 * Whether an id names an event past retention by its own time: event ids are UUIDv7 of when the
 * event occurred (services/outbox), so this holds after its row is deleted. A v4 id (events stored
 * before ids were v7) tells nothing, and is answered as unknown once deleted.
 */
export function expiredById(id: string, now: number): boolean {
  const made = uuidV7Time(id);
  return made !== undefined && isPastRetention(made, now);
}

/** Whether a path id can name a stored event or subscription at all (the spec's `uuid` format also takes a `urn:uuid:` prefix, which the database does not). */
export const isPlainUuid = (id: string): boolean => UUID_PATTERN.test(id);
