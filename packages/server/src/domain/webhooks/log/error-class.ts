import type { components } from '@svc/contract';

export type AttemptErrorClass = NonNullable<components['schemas']['WebhookLoggedAttempt']['error_class']>;

/**
 * Why an attempt got no HTTP status, as a class an app can branch on, read from the reason the
 * attempt logged (services/webhook-transport writes Node's error code into it, and its own words
 * for a timeout, a refused address and an unsigned send). The first rule that matches wins, so
 * a name or address inside the text (`ssl.example.com`) does not decide before the code does.
 */
const RULES: ReadonlyArray<readonly [AttemptErrorClass, RegExp]> = [
  ['timeout', /did not answer within|\bETIMEDOUT\b|\bESOCKETTIMEDOUT\b/],
  ['not_sent', /^Not sent:/],
  ['address_refused', /\bEREFUSEDADDRESS\b|webhooks may not reach/],
  ['dns', /\bENOTFOUND\b|\bEAI_AGAIN\b|\bEAI_NONAME\b|\bEAI_FAIL\b|has no address/],
  ['connection_refused', /\bECONNREFUSED\b/],
  ['connection_reset', /\bECONNRESET\b|\bEPIPE\b|socket hang up/],
  ['tls', /\bEPROTO\b|\bERR_TLS_|\bERR_SSL_|CERT_|_CERT\b|\bSELF_SIGNED|\bUNABLE_TO_VERIFY|\bHOSTNAME_MISMATCH\b|certificate|SSL routines/i],
];

/** The class of a failed attempt that got no HTTP status; `other` when no rule knows its reason. */
export function errorClassOf(error: string | null): AttemptErrorClass {
  const reason = error ?? '';
  return RULES.find(([, pattern]) => pattern.test(reason))?.[0] ?? 'other';
}
