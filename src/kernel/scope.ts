/** Roles a credential may carry (docs/roles.md, "Roles"). */
export type Role = 'workspace_admin' | 'core_admin' | 'member';

/**
 * Who is calling and where: every service and repository call takes a Scope first, so a
 * query can never forget to filter by workspace.
 */
export interface Scope {
  workspaceId: string;
  /** Set when the route is brain-scoped (X-Brain-Id) or a body/query names a brain. */
  brainId?: string;
  userId: string | null;
  apiKeyId: string | null;
  roles: Role[];
  credential: 'api_key' | 'jwt' | 'share' | 'system' | 'anonymous';
  /** Set for share-token callers: the receptor the token belongs to. */
  receptorId?: string;
  /** Set for share-token callers: the share link (its budget and rate limit). */
  shareTokenId?: string;
  /** An API key's own request limit (admin-set); absent: the platform default. */
  rateLimit?: { points: number; durationS: number };
}

/**
 * Who a scope acts as, for anything keyed by request values (an Idempotency-Key, a client_nonce):
 * the API key, the JWT's user, the share link (with the user a JWT attributes its calls to), or the
 * platform; null for an anonymous caller (keyed by its address instead). Two callers of one
 * workspace never share such a key's outcome.
 */
export function callerOf(scope: Scope): string | null {
  switch (scope.credential) {
    case 'api_key':
      return `key:${scope.apiKeyId ?? ''}`;
    case 'jwt':
      return `user:${scope.userId ?? ''}`;
    case 'share':
      return `share:${scope.shareTokenId ?? ''}:${scope.userId ?? ''}`;
    case 'system':
      return 'system';
    case 'anonymous':
      return null;
  }
}

export const hasRole = (scope: Scope, role: Role): boolean =>
  scope.roles.includes(role) || (role === 'workspace_admin' && scope.roles.includes('core_admin'));

/** A scope for work the platform does on its own behalf (schedules, workflows). */
export const systemScope = (workspaceId: string, brainId?: string): Scope => ({
  workspaceId,
  brainId,
  userId: null,
  apiKeyId: null,
  roles: ['workspace_admin'],
  credential: 'system',
});
