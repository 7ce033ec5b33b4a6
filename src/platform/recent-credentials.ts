import type { Redis } from '../kernel/redis.js';
import { bestEffort } from '../kernel/best-effort.js';
import type { Logger } from '../kernel/logger.js';

/** How long a credential verified against the store stays "recently seen valid" (every API process). */
const RECENTLY_VALID_S = 24 * 60 * 60;

/** The kinds of stored credential: API keys and share-link tokens (JWTs verify without a store). */
export type CredentialKind = 'key' | 'share';

/**
 * The digests of credentials recently verified against the store, shared by every API process
 * through Redis: one key per digest, with a TTL (bounded by the credentials in use, never more
 * than the store holds). Being remembered never authenticates anything: it only lets a credential
 * reach its store lookup while its client address is over the failed-authentication limit
 * (docs/decisions.md, "Auth, scoping and roles"), so a valid key is recognised by an API process that
 * has never seen it without a store read, and a revoked one gains one lookup, after which it is
 * forgotten. A Redis error reads as "not seen" (the limiter then behaves as before).
 */
export function createRecentCredentials(redis: Redis, prefix: string, log?: Logger) {
  const key = (kind: CredentialKind, digest: string) => `${prefix}auth:valid:${kind}:${digest}`;
  return {
    /** Marks a credential as verified just now (fire and forget). */
    remember(kind: CredentialKind, digest: string): void {
      void bestEffort(
        log,
        'remembering a verified credential',
        redis.set(key(kind, digest), '1', 'EX', RECENTLY_VALID_S),
      );
    },
    /** Forgets a credential that failed its lookup or was revoked (fire and forget). */
    forget(kind: CredentialKind, digest: string): void {
      void bestEffort(log, 'forgetting a credential', redis.del(key(kind, digest)));
    },
    /** Whether any API process verified this credential within RECENTLY_VALID_S. */
    async seen(kind: CredentialKind, digest: string): Promise<boolean> {
      return (await redis.exists(key(kind, digest)).catch(() => 0)) === 1;
    },
  };
}
export type RecentCredentials = ReturnType<typeof createRecentCredentials>;
