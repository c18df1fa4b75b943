import { createHash } from 'node:crypto';
import { safeEqual } from '../credentials/secrets';

/** RFC 7636 §4.2: S256 challenge = BASE64URL(SHA256(ASCII(code_verifier))), unpadded. */
export const s256 = (verifier: string): string => createHash('sha256').update(verifier, 'ascii').digest('base64url');

export const verifierMatches = (verifier: string, challenge: string): boolean => safeEqual(s256(verifier), challenge);
