import { ApiError } from '../../core/errors';
import type { WebhookSettings } from '../../services/container';
import { ipLiteralOf, refusedAddress } from '../../services/webhook-transport';

const refused = (message: string) =>
  new ApiError('VALIDATION_FAILED', `The endpoint URL is refused: ${message}`, { details: [{ location: 'body', field: '/endpoint_url', message }] });

/** Names that always mean this machine (RFC 6761), whatever DNS would say. */
const isLocalhostName = (hostname: string) => /(^|\.)localhost\.?$/i.test(hostname);

/**
 * Judges an endpoint URL at create and update (400 VALIDATION_FAILED): `https` only in production,
 * `http` too elsewhere but then only to this machine; an IP address in the host is parsed (the URL
 * parser turns decimal, hex, octal and short forms and a trailing dot into the plain address) and
 * refused when delivery could not reach it. Names are judged again at every delivery, after DNS.
 */
export function checkEndpointUrl(endpointUrl: string, { environment, policy }: Pick<WebhookSettings, 'environment' | 'policy'>): void {
  let url: URL;
  try {
    url = new URL(endpointUrl);
  } catch {
    throw refused('it is not a URL');
  }
  if (url.username !== '' || url.password !== '') throw refused('it may not carry credentials');
  const literal = ipLiteralOf(url.hostname);
  const loopbackHost =
    isLocalhostName(url.hostname) ||
    (literal !== undefined &&
      refusedAddress(literal, { allowLoopback: false }) !== undefined &&
      refusedAddress(literal, { allowLoopback: true }) === undefined);
  if (url.protocol === 'https:') {
    if (environment === 'production' && isLocalhostName(url.hostname)) throw refused('it names this machine');
  } else if (url.protocol === 'http:') {
    if (environment === 'production') throw refused('it must use https');
    if (!loopbackHost) throw refused('http is allowed only for a receiver on this machine (localhost or 127.0.0.1)');
  } else {
    throw refused('it must use https');
  }
  if (literal !== undefined) {
    const why = refusedAddress(literal, policy);
    if (why) throw refused(`its address ${literal} ${why}`);
  }
}
