import { EVENT_TYPE_SCOPES, type WebhookEventType } from '@svc/contract';
import { ApiError } from '../../core/errors';
import { sortScopes } from '../../platform/scopes';

export type { WebhookEventType };

/**
 * The scope each event type needs, generated from the spec (each webhook's `x-required-scope`): the
 * scope that reads what the event carries. `app.uninstalled` and `webhook.test` need none.
 */
export { EVENT_TYPE_SCOPES };

export const scopeOfEventType = (type: string): string | null | undefined => EVENT_TYPE_SCOPES.get(type as WebhookEventType);

/** Whether an installation holding `scopes` may receive events of `type`. */
export function mayReceive(type: string, scopes: ReadonlySet<string>): boolean {
  const scope = scopeOfEventType(type);
  return scope === null || (scope !== undefined && scopes.has(scope));
}

/**
 * The event types an installation holding `scopes` may receive now: what its delivery log lists,
 * what recover sends again and what the events feed shows (a grant narrowed since a delivery was
 * queued hides it at once).
 */
export const typesReceivable = (scopes: ReadonlySet<string>): string[] => [...EVENT_TYPE_SCOPES.keys()].filter((type) => mayReceive(type, scopes));

/**
 * The scopes that allow `types` (what `issued_scopes` records), or 422 EVENT_TYPE_NOT_ALLOWED naming
 * the first type whose scope the installation does not hold. `field` is where the list is in the body.
 */
export function scopesAllowing(types: readonly string[], held: ReadonlySet<string>, field = '/event_types'): string[] {
  const needed = new Set<string>();
  types.forEach((type, index) => {
    const scope = scopeOfEventType(type);
    if (scope === null) return;
    if (scope === undefined || !held.has(scope)) {
      const message = `needs the scope ${scope ?? 'that does not exist'}`;
      throw new ApiError('EVENT_TYPE_NOT_ALLOWED', `The event type '${type}' ${message}, which this installation does not hold.`, {
        details: [{ location: 'body', field: `${field}/${index}`, message }],
      });
    }
    needed.add(scope);
  });
  return sortScopes(needed);
}
