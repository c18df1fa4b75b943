import { createHmac, randomBytes } from 'node:crypto';
import { hashSecret, safeEqual } from '../credentials/secrets';
import { findOwner, type StoreOwner } from '../platform/stores';
import type { Deps } from '../services/container';
import { readCookie } from './cookies';

export const SESSION_COOKIE = 'svc_session';
/** A dashboard session lasts 12 hours. */
export const SESSION_MS = 12 * 60 * 60 * 1000;

export interface DashboardSession {
  sessionHash: string;
  owner: StoreOwner;
  /** The CSRF token of every form in this session, derived from the session secret (so never stored). */
  csrfToken: string;
}

/** Derived, not stored: only the holder of the session cookie can compute it. */
const csrfOf = (sessionToken: string) => createHmac('sha256', sessionToken).update('dashboard csrf').digest('base64url');

/** Starts a session for an owner who signed in; the cookie value is returned once, its hash stored. */
export async function startSession({ db, clock }: Deps, ownerId: string): Promise<{ token: string; csrfToken: string }> {
  const token = randomBytes(32).toString('base64url');
  const csrfToken = csrfOf(token);
  const now = clock.now();
  await db('dashboard_sessions').insert({
    session_hash: hashSecret(token),
    owner_id: ownerId,
    csrf_token: hashSecret(csrfToken),
    created_at: now,
    expires_at: now + SESSION_MS,
  });
  return { token, csrfToken };
}

/** The live session named by the request's cookie, if any. */
export async function currentSession({ db, clock }: Deps, cookieHeader: string | undefined): Promise<DashboardSession | undefined> {
  const token = readCookie(cookieHeader, SESSION_COOKIE);
  if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const sessionHash = hashSecret(token);
  const row = await db('dashboard_sessions').where({ session_hash: sessionHash }).first<{ owner_id: string; expires_at: number } | undefined>();
  if (!row || clock.now() >= row.expires_at) return undefined;
  const owner = await findOwner(db, row.owner_id);
  return owner && { sessionHash, owner, csrfToken: csrfOf(token) };
}

export async function endSession({ db }: Deps, session: DashboardSession): Promise<void> {
  await db('dashboard_sessions').where({ session_hash: session.sessionHash }).delete();
}

export const csrfMatches = (session: DashboardSession, presented: unknown): boolean => typeof presented === 'string' && safeEqual(presented, session.csrfToken);
