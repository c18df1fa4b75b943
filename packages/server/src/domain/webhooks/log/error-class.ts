import type { components } from '@svc/contract';
import ipaddr from 'ipaddr.js';
import { NO_ANSWER, noAnswerText } from '../../../services/webhook-transport';

export type AttemptErrorClass = NonNullable<components['schemas']['WebhookLoggedAttempt']['error_class']>;

/**
 * Why an attempt got no HTTP status, as a class an app can branch on, read from the reason the
 * attempt logged (services/webhook-transport writes its class in words with Node's error code, and
 * its own words for a timeout, a refused address and an unsigned send; attempts stored before it
 * did hold Node's message). The first rule that matches wins, so a name or address inside an older
 * text (`ssl.example.com`) does not decide before the code does.
 */
const RULES: ReadonlyArray<readonly [AttemptErrorClass, RegExp]> = [
  ['timeout', /did not answer within|\bETIMEDOUT\b|\bESOCKETTIMEDOUT\b/],
  ['not_sent', /^Not sent:/],
  ['address_refused', /\bEREFUSEDADDRESS\b|webhooks may not reach|non-public address/],
  ['dns', /\bENOTFOUND\b|\bEAI_AGAIN\b|\bEAI_NONAME\b|\bEAI_NODATA\b|\bEAI_FAIL\b|has no address/],
  ['connection_refused', /\bECONNREFUSED\b/],
  ['connection_reset', /\bECONNRESET\b|\bEPIPE\b|\bECONNABORTED\b|socket hang up/],
  ['tls', /\bEPROTO\b|\bERR_TLS_|\bERR_SSL_|CERT_|_CERT\b|\bSELF_SIGNED|\bUNABLE_TO_VERIFY|\bHOSTNAME_MISMATCH\b|certificate|SSL routines|TLS handshake/i],
];

/** The class of a failed attempt that got no HTTP status; `other` when no rule knows its reason. */
export function errorClassOf(error: string | null): AttemptErrorClass {
  const reason = error ?? '';
  return RULES.find(([, pattern]) => pattern.test(reason))?.[0] ?? 'other';
}

const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}\b/;
/** Runs of hex digits and at least two colons: IPv6 candidates (`::1:443`, `fd00::7`), judged by ipaddr.js. */
const IPV6_CANDIDATES = /[0-9a-f]*:[0-9a-f]*:[0-9a-f:.]*/gi;

/**
 * Whether a reason quotes an address: Node's messages do (`connect ECONNREFUSED 10.0.0.7:443`), and
 * so did a name's DNS answer (`<name> resolves to <address>, which …`).
 */
export function quotesAddress(reason: string): boolean {
  if (IPV4.test(reason)) return true;
  return [...reason.matchAll(IPV6_CANDIDATES)].some(([candidate]) => ipaddr.isValid(candidate) || ipaddr.isValid(candidate.replace(/:\d+$/, '')));
}

/** The first Node error code in a reason (`ECONNREFUSED`, `ERR_TLS_CERT_ALTNAME_INVALID`, `DEPTH_ZERO_SELF_SIGNED_CERT`). */
const NODE_CODE = /\b(E[A-Z0-9_]{2,}|ERR_[A-Z0-9_]+|HPE_[A-Z0-9_]+|[A-Z_]*CERT[A-Z_]*)\b/;

/**
 * The reason of an attempt without an answer as the app is shown it: its class and code, never an
 * address or a DNS answer. What the transport stores today is already so; a reason stored before
 * (kept 30 days) that quotes one is shown in today's words instead.
 */
export function shownError(reason: string | null): string | null {
  if (reason === null || !quotesAddress(reason)) return reason;
  return errorClassOf(reason) === 'address_refused' ? NO_ANSWER.nonPublic : noAnswerText(NODE_CODE.exec(reason)?.[1]);
}
