import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/crypto/secrets.js';

const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const JWT_SECRET = 'unit-secret-0123456789abcdef';

describe('the secrets box (AES-256-GCM under a key id)', () => {
  it('seals to an opaque value under the current key, different every time, and opens it', () => {
    const box = createSecretBox({ SECRETS_KEY: key('k1'), SECRETS_KEYS_OLD: [], JWT_SECRET });
    const a = box.seal('refresh-token-123');
    const b = box.seal('refresh-token-123');
    expect(a).not.toBe(b);
    expect(a).not.toContain('refresh-token-123');
    expect(a.startsWith('v1.k1.')).toBe(true);
    expect(box.keyOf(a)).toBe('k1');
    expect(box.open(a)).toBe('refresh-token-123');
  });

  it('refuses a value that was tampered with, or sealed with a key it does not hold', () => {
    const box = createSecretBox({ SECRETS_KEY: key('k1'), SECRETS_KEYS_OLD: [], JWT_SECRET });
    const parts = box.seal('access-token').split('.');
    const ct = Buffer.from(parts[4], 'base64url');
    ct[0] ^= 1;
    expect(() => box.open([...parts.slice(0, 4), ct.toString('base64url')].join('.'))).toThrow();
    const other = createSecretBox({ SECRETS_KEY: key('k1'), SECRETS_KEYS_OLD: [], JWT_SECRET });
    expect(() => other.open(box.seal('x'))).toThrow(); // same id, different key: the tag does not verify
    expect(() =>
      createSecretBox({ SECRETS_KEY: key('k9'), SECRETS_KEYS_OLD: [], JWT_SECRET }).open(box.seal('x')),
    ).toThrow(/SECRETS_KEYS_OLD/);
  });

  it('rotation: an old key in SECRETS_KEYS_OLD still opens, every new value uses the new key, reseal moves a value over', () => {
    const k1 = key('k1');
    const before = createSecretBox({ SECRETS_KEY: k1, SECRETS_KEYS_OLD: [], JWT_SECRET });
    const old = before.seal('token');
    const after = createSecretBox({ SECRETS_KEY: key('k2'), SECRETS_KEYS_OLD: [k1], JWT_SECRET });
    expect(after.open(old)).toBe('token');
    expect(after.keyOf(after.seal('token'))).toBe('k2');
    const moved = after.reseal(old);
    expect(after.keyOf(moved)).toBe('k2');
    expect(after.reseal(moved)).toBe(moved);
    // Once moved, the old key can go.
    const only = createSecretBox({ SECRETS_KEY: k1, SECRETS_KEYS_OLD: [], JWT_SECRET });
    expect(() => only.open(moved)).toThrow();
  });

  it('refuses a malformed key, and derives a development key from JWT_SECRET when none is set', () => {
    expect(() => createSecretBox({ SECRETS_KEY: 'k1:c2hvcnQ=', SECRETS_KEYS_OLD: [], JWT_SECRET })).toThrow(/32 bytes/);
    expect(() => createSecretBox({ SECRETS_KEY: 'no-id', SECRETS_KEYS_OLD: [], JWT_SECRET })).toThrow(/<id>/);
    const dev = createSecretBox({ SECRETS_KEY: undefined, SECRETS_KEYS_OLD: [], JWT_SECRET });
    expect(dev.keyId).toBe('dev');
    expect(createSecretBox({ SECRETS_KEY: undefined, SECRETS_KEYS_OLD: [], JWT_SECRET }).open(dev.seal('x'))).toBe('x');
  });
});
