import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): a secret is `whsec_` followed
 * by base64 of random bytes (the HMAC key is the decoded part after the prefix); a message is
 * signed as `v1,<base64 of HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")>`, and the
 * `webhook-signature` header carries one such signature per valid secret, separated by spaces.
 */
const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** A new secret: 32 random bytes. */
export const newWebhookSecret = (): string => WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64');

/** One `v1,` signature of a message under one secret. */
function signWebhook(secret: string, id: string, timestampS: number, body: string): string {
  const key = Buffer.from(
    secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret,
    'base64',
  );
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampS}.${body}`).digest('base64')}`;
}

/** The three headers of a signed message, signed with every secret given (current first). */
export function webhookHeaders(
  secrets: string[],
  id: string,
  timestampS: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': secrets.map((s) => signWebhook(s, id, timestampS, body)).join(' '),
  };
}
