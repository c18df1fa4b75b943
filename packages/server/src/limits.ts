import { BODY_BYTES } from './http/body-limit';
import { ACCESS_SECONDS } from './oauth/tokens';
import { QUOTA_WINDOW_MS } from './services';

/** The constants `GET /me` publishes (DESIGN.md § 5), each defined where it is enforced. */
export const PUBLISHED_LIMITS = {
  pageDefault: 25,
  pageMax: 100,
  accessSeconds: ACCESS_SECONDS,
  bodyBytes: BODY_BYTES,
  quotaProofMs: QUOTA_WINDOW_MS,
  policyLeaseMs: 45_000,
} as const;
