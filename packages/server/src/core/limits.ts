/**
 * The limits the service publishes (`GET /me` → `limits`), defined once here and imported by the
 * modules that enforce them, so the published value and the enforced one cannot drift apart.
 */

/** `pageDefault`: a list's page size when `limit` is left out. */
export const PAGE_DEFAULT = 25;
/** `pageMax`: the largest `limit` a list takes. */
export const PAGE_MAX = 100;
/** `accessSeconds`: an access token's lifetime. */
export const ACCESS_SECONDS = 900;
/** `bodyBytes`: the largest request body, store API and OAuth alike. */
export const BODY_BYTES = 65536;
/** `quotaProofMs`: quotas are counted per installation (or client) per window of this length. */
export const QUOTA_WINDOW_MS = 5000;
/** `policyLeaseMs`: the lease a webhook worker holds on a claimed delivery before another may take it. */
export const POLICY_LEASE_MS = 45_000;

/** The constants `GET /me` publishes. */
export const PUBLISHED_LIMITS = {
  pageDefault: PAGE_DEFAULT,
  pageMax: PAGE_MAX,
  accessSeconds: ACCESS_SECONDS,
  bodyBytes: BODY_BYTES,
  quotaProofMs: QUOTA_WINDOW_MS,
  policyLeaseMs: POLICY_LEASE_MS,
} as const;
