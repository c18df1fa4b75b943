import { Webhook } from 'standardwebhooks';

/**
 * The Standard Webhooks headers of one attempt: `webhook-id` (the event's id, the same on every
 * retry and replay), `webhook-timestamp` (Unix seconds of this attempt) and `webhook-signature`,
 * one `v1,<base64 HMAC-SHA256 of id.timestamp.body>` per secret, separated by spaces (two for 24
 * hours after a rotation, the new secret's first).
 */
export function signedHeaders(eventId: string, now: number, body: string, secrets: readonly string[]): Record<string, string> {
  const timestamp = new Date(Math.floor(now / 1000) * 1000);
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(now / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(eventId, timestamp, body)).join(' '),
  };
}
