import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Config } from '../kernel/config.js';

/**
 * Secrets at rest (OAuth access and refresh tokens, PKCE verifiers, integration client secrets):
 * AES-256-GCM with a random 96-bit IV per value, stored as `v1.<key id>.<iv>.<tag>.<ciphertext>`
 * (base64url). The key comes from SECRETS_KEY (`<id>:<32 bytes base64>`); keys being retired go
 * in SECRETS_KEYS_OLD (comma separated, same form) so values written with them still decrypt,
 * and every write uses the current key; `npm run secrets:reseal` re-seals what is stored so the old
 * key can then be dropped (docs/tools.md: rotation). Without SECRETS_KEY (not in production) a key
 * is derived from JWT_SECRET.
 */
export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
  keyId: string;
  /** The id of the key a value was sealed with. */
  keyOf(sealed: string): string;
  /** The value sealed with the current key (the same string when it already is). */
  reseal(sealed: string): string;
}

const parseKey = (spec: string): [string, Buffer] => {
  const i = spec.indexOf(':');
  if (i < 1) throw new Error('a secrets key is "<id>:<base64 of 32 bytes>"');
  const key = Buffer.from(spec.slice(i + 1), 'base64');
  if (key.length !== 32) throw new Error(`secrets key ${spec.slice(0, i)} must be 32 bytes (base64)`);
  return [spec.slice(0, i), key];
};

export function createSecretBox(config: Pick<Config, 'SECRETS_KEY' | 'SECRETS_KEYS_OLD' | 'JWT_SECRET'>): SecretBox {
  const [keyId, key] = config.SECRETS_KEY
    ? parseKey(config.SECRETS_KEY)
    : ['dev', createHmac('sha256', config.JWT_SECRET).update('cortex:secrets-key').digest()];
  const keys = new Map<string, Buffer>([[keyId, key], ...config.SECRETS_KEYS_OLD.map(parseKey)]);
  return {
    keyId,
    keyOf: (sealed: string) => sealed.split('.')[1] ?? '',
    reseal(sealed: string): string {
      return this.keyOf(sealed) === keyId ? sealed : this.seal(this.open(sealed));
    },
    seal(plain: string): string {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return [
        'v1',
        keyId,
        iv.toString('base64url'),
        c.getAuthTag().toString('base64url'),
        ct.toString('base64url'),
      ].join('.');
    },
    open(sealed: string): string {
      const [v, kid, iv, tag, ct] = sealed.split('.');
      const k = keys.get(kid);
      if (v !== 'v1' || !k)
        throw new Error(`cannot open a secret sealed with key ${kid ?? '?'} (add it to SECRETS_KEYS_OLD)`);
      const d = createDecipheriv('aes-256-gcm', k, Buffer.from(iv, 'base64url'));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    },
  };
}
