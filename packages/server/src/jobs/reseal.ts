import { subscriptionSecretsSealed } from '../domain/webhooks/subscriptions/changes';
import { idempotentAnswersSealed } from '../http/idempotency';
import { RESEAL_LIMITS, type Reseal, type ResealLimits, resealAll, type SealedColumn, type SealingDeps } from '../services/sealing-key';

/** Every column that holds sealed values, each described beside the code that writes it (a test holds the list to the schema). */
export const SEALED_COLUMNS: readonly SealedColumn[] = [...subscriptionSecretsSealed, idempotentAnswersSealed];

/** `svc secrets reseal`: everything the database holds sealed, under the first key of the ring, then the database's check. */
export const resealEverything = (deps: SealingDeps, limits: ResealLimits = RESEAL_LIMITS): Promise<Reseal> => resealAll(deps, SEALED_COLUMNS, limits);
