/**
 * How far apart the clocks of two instances may be: a delivery is queued, and an attempt made, by
 * whichever instance does it, stamped by its own clock, after the event (or the delivery) it
 * follows was stamped by another's. A day covers any disagreement the rest of the service survives
 * (an access token lives 15 minutes).
 */
export const CLOCK_SKEW_ALLOWED_MS = 24 * 60 * 60 * 1000;

/**
 * The earliest stamp of something that happened after `instant` on another instance: a delivery of
 * an event that occurred then, an attempt of a delivery queued then. Only a lower bound of the days
 * a read looks at (on PostgreSQL `webhook_deliveries` is partitioned by `created_at` and
 * `webhook_attempts` by `attempted_at`: the read prunes the days before), never an order.
 */
export const stampedNoEarlierThan = (instant: number): number => instant - CLOCK_SKEW_ALLOWED_MS;
