import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import type { Config } from '../kernel/config.js';
import { SLUG_RE, type ApiKeyDoc, type WorkspaceDoc } from './model.js';
import type { PageQuery, WorkspaceStore } from './store.js';
import { AppError, authRequired, conflict, forbidden, notFound, validationError } from '../kernel/errors.js';
import { hasRole, type Role, type Scope } from '../kernel/scope.js';
import type { RecentCredentials } from './recent-credentials.js';
import { bestEffort } from '../kernel/best-effort.js';
import type { Logger } from '../kernel/logger.js';

/** JWT claims the platform accepts: `sub`, `workspace_id`, `roles` (docs/roles.md). */
const JwtClaims = z.object({
  sub: z.uuid(),
  workspace_id: z.uuid(),
  roles: z.array(z.string()).default([]),
});

const KNOWN_ROLES: Role[] = ['workspace_admin', 'core_admin', 'member'];
const toRoles = (rs: string[]): Role[] => rs.filter((r): r is Role => (KNOWN_ROLES as string[]).includes(r));

/** API keys are shown once and stored as a SHA-256 digest (high-entropy secrets need no slow hash). */
export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');
export const newApiKeySecret = (): string => `ctx_${randomBytes(24).toString('base64url')}`;
const looksLikeJwt = (t: string) => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(t);

/** Credentials: API keys, HS256 JWTs and the bootstrap identity. */
/** How long a verified key is trusted without a lookup (revocation through this process is immediate). */
export const KEY_CACHE_MS = 5_000;
/** last_used_at is a coarse signal: written at most once a minute per key, never on every request. */
const LAST_USED_WRITE_MS = 60_000;

/** The auth service's deps. */
interface AuthDeps {
  config: Config;
  repo: WorkspaceStore;
  recent: RecentCredentials;
  log?: Logger;
  /** Whether the platform operator deleted the workspace (src/tenancy): a JWT for it is refused, not re-provisioned. */
  isDeleted?: (workspaceId: string) => Promise<boolean>;
}

/** What the auth groups share: the deps, the JWT key, and this process's caches (one of each, never replaced). */
interface AuthContext extends AuthDeps {
  // Workspaces seen not deleted, for a few seconds (one read per workspace per process, not per request).
  liveUntil: Map<string, number>;
  secret: Uint8Array;
  keyCache: Map<string, { key: ApiKeyDoc; until: number }>;
  lastUsedWrite: Map<string, number>;
}

async function fromApiKey({ repo, recent, log, keyCache, lastUsedWrite }: AuthContext, token: string): Promise<Scope> {
  const hash = hashApiKey(token);
  const now = Date.now();
  const cached = keyCache.get(hash);
  let key = cached && cached.until > now ? cached.key : null;
  if (!key) {
    key = await repo.liveKeyByHash(hash);
    if (!key) {
      recent.forget('key', hash);
      throw authRequired('Invalid API key');
    }
    if (keyCache.size > 10_000) keyCache.clear();
    keyCache.set(hash, { key, until: now + KEY_CACHE_MS });
    recent.remember('key', hash);
  }
  if (now - (lastUsedWrite.get(key._id) ?? 0) > LAST_USED_WRITE_MS) {
    lastUsedWrite.set(key._id, now);
    void bestEffort(log, "writing an API key's last_used_at", repo.touchKey(key._id, new Date(now)));
  }
  // The key acts for the user who created it (per-resource roles apply as to that user), with the roles it was given.
  return {
    workspaceId: key.workspaceId,
    userId: key.createdBy,
    apiKeyId: key._id,
    roles: toRoles(key.roles),
    credential: 'api_key',
    ...(key.rateLimit ? { rateLimit: key.rateLimit } : {}),
  };
}

/**
 * Verifies a JWT (docs/roles.md, "JWTs"): HS256 only (the header's `alg` is never trusted, so no
 * `none` and no other algorithm), a signature by JWT_SECRET, `exp` required and at most
 * JWT_MAX_LIFETIME_SECONDS after `iat` (or after now, without `iat` or with one in the future),
 * `nbf` honoured, and `iss` / `aud` when configured; 30 s of clock skew is tolerated. Each
 * refusal is a 401 that says which rule the token broke.
 */
async function verifyJwt({ config, secret }: AuthContext, token: string): Promise<z.infer<typeof JwtClaims>> {
  const max = config.JWT_MAX_LIFETIME_SECONDS;
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, secret, {
      algorithms: ['HS256'],
      requiredClaims: ['exp'],
      clockTolerance: 30,
      ...(config.JWT_ISSUER ? { issuer: config.JWT_ISSUER } : {}),
      ...(config.JWT_AUDIENCE ? { audience: config.JWT_AUDIENCE } : {}),
    }));
  } catch (e) {
    if (e instanceof joseErrors.JWTExpired) throw authRequired('Token expired');
    if (e instanceof joseErrors.JWTClaimValidationFailed) {
      if (e.claim === 'exp' && e.reason === 'missing')
        throw authRequired(`Token has no exp claim: a JWT must expire, at most ${max} s after it is issued`);
      if (e.claim === 'nbf') throw authRequired('Token is not valid yet (nbf)');
      if (e.claim === 'iss' || e.claim === 'aud') throw authRequired(`Token ${e.claim} is not accepted here`);
    }
    throw authRequired('Invalid or expired token');
  }
  const now = Math.floor(Date.now() / 1000);
  const exp = payload.exp as number;
  const iat = typeof payload.iat === 'number' ? payload.iat : now;
  if (exp - Math.min(iat, now) > max)
    throw authRequired(`Token lifetime is longer than the ${max} s a JWT may live: issue one with a nearer exp`);
  const claims = JwtClaims.safeParse(payload);
  if (!claims.success) throw authRequired('Invalid or expired token');
  return claims.data;
}

async function fromJwt(ctx: AuthContext, token: string): Promise<Scope> {
  const { repo, isDeleted, liveUntil } = ctx;
  const claims = await verifyJwt(ctx, token);
  if (isDeleted && (liveUntil.get(claims.workspace_id) ?? 0) < Date.now()) {
    if (await isDeleted(claims.workspace_id)) throw authRequired('The workspace was deleted');
    if (liveUntil.size > 10_000) liveUntil.clear();
    liveUntil.set(claims.workspace_id, Date.now() + KEY_CACHE_MS);
  }
  // A JWT for a workspace the platform has not seen yet provisions it (its slug: `ws-<first 8 of id>`).
  // A deleted workspace is never provisioned again (asked afresh, whatever the cache above says).
  const ws = await repo.ensureWorkspace(
    claims.workspace_id,
    `ws-${claims.workspace_id.slice(0, 8)}`,
    `Workspace ${claims.workspace_id.slice(0, 8)}`,
    isDeleted ? async () => !(await isDeleted(claims.workspace_id)) : undefined,
  );
  if (!ws) {
    liveUntil.delete(claims.workspace_id);
    throw authRequired('The workspace was deleted');
  }
  return {
    workspaceId: claims.workspace_id,
    userId: claims.sub,
    apiKeyId: null,
    roles: toRoles(claims.roles),
    credential: 'jwt',
  };
}

/** Credentials: resolving a bearer token (API key or JWT) into a Scope, and signing JWTs. */
function createAuthCredentials(ctx: AuthContext) {
  const { recent, secret, keyCache } = ctx;
  return {
    /** Whether authenticating this credential reads no store: a JWT, or an API key this process has looked up recently. */
    needsNoLookup(bearer: string): boolean {
      if (looksLikeJwt(bearer)) return true;
      const cached = keyCache.get(hashApiKey(bearer));
      return cached !== undefined && cached.until > Date.now();
    },

    /**
     * Whether an API key was recently seen valid, by this process or (through Redis) by any API
     * process: such a key reaches its store lookup even while its address is over the
     * failed-authentication limit. A JWT never needs this (it verifies without a lookup).
     */
    async recentlyValid(bearer: string): Promise<boolean> {
      return !looksLikeJwt(bearer) && (this.needsNoLookup(bearer) || recent.seen('key', hashApiKey(bearer)));
    },

    /** Resolves a bearer token (API key or JWT) into a Scope, or throws 401. */
    async authenticate(bearer: string | undefined): Promise<Scope> {
      if (!bearer) throw authRequired();
      return looksLikeJwt(bearer) ? fromJwt(ctx, bearer) : fromApiKey(ctx, bearer);
    },

    /** Signs a JWT (used by tests and tooling; dashboards receive theirs from an identity provider). */
    async signJwt(claims: { sub: string; workspace_id: string; roles: string[] }, expiresIn = '1h'): Promise<string> {
      return new SignJWT({ workspace_id: claims.workspace_id, roles: claims.roles })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(claims.sub)
        .setIssuedAt()
        .setExpirationTime(expiresIn)
        .sign(secret);
    },
  };
}

/** A workspace's API keys, and workspaces provisioned with an admin key. */
function createAuthKeys({ repo, recent, keyCache }: AuthContext) {
  return {
    /** Creates a key in the caller's workspace; it may carry at most the caller's roles. */
    async createApiKey(
      scope: Scope,
      input: { name: string; roles?: Role[] },
    ): Promise<{ doc: ApiKeyDoc; secret: string }> {
      const roles = input.roles ?? ['member'];
      for (const r of roles) if (r !== 'member' && !hasRole(scope, r)) throw forbidden(`Cannot grant role ${r}`);
      const secretValue = newApiKeySecret();
      const doc: ApiKeyDoc = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        name: input.name,
        hash: hashApiKey(secretValue),
        prefix: secretValue.slice(0, 10),
        roles,
        createdBy: scope.userId,
        createdAt: new Date(),
        lastUsedAt: null,
        revokedAt: null,
      };
      await repo.insertKey(doc);
      recent.remember('key', doc.hash); // a new key is recognised at once, before its first use
      return { doc, secret: secretValue };
    },

    /** Admins see every key of the workspace; a member sees the keys they created. */
    listApiKeys: (scope: Scope, q: PageQuery) =>
      repo.pageKeys(
        scope.workspaceId,
        hasRole(scope, 'workspace_admin') ? {} : { createdBy: scope.userId ?? '(none)' },
        q,
      ),

    /** A member may revoke their own keys; only an admin may revoke another user's key (docs/roles.md). */
    async revokeApiKey(scope: Scope, id: string): Promise<void> {
      const key = await repo.findLiveKey(scope.workspaceId, id);
      if (!key) throw notFound('API key');
      if (!hasRole(scope, 'workspace_admin') && (key.createdBy === null || key.createdBy !== scope.userId))
        throw forbidden("Only an admin may revoke another user's key");
      await repo.revokeKey(scope.workspaceId, id);
      for (const [hash, entry] of keyCache) if (entry.key._id === id) keyCache.delete(hash);
      recent.forget('key', key.hash);
    },

    /** Admin: sets (or clears, with null) a key's own request limit. */
    async setKeyRateLimit(
      scope: Scope,
      id: string,
      limit: { points: number; durationS: number } | null,
    ): Promise<ApiKeyDoc> {
      const key = await repo.setKeyRateLimit(scope.workspaceId, id, limit);
      if (!key) throw notFound('API key');
      for (const [hash, entry] of keyCache) if (entry.key._id === id) keyCache.delete(hash);
      return key;
    },

    /** Creates a workspace with a brain and an admin key in one call (tests, tooling, `npm run up`). */
    async provisionWorkspace(opts: { roles?: Role[]; slug?: string } = {}) {
      const workspaceId = randomUUID();
      const brainId = randomUUID();
      await repo.ensureWorkspace(workspaceId, opts.slug ?? `ws-${workspaceId.slice(0, 8)}`, 'Workspace');
      await repo.ensureBrain(workspaceId, brainId, 'Brain');
      const scope: Scope = {
        workspaceId,
        userId: null,
        apiKeyId: null,
        roles: ['core_admin', 'workspace_admin'],
        credential: 'system',
      };
      const { secret: key, doc } = await this.createApiKey(scope, {
        name: 'admin',
        roles: opts.roles ?? ['workspace_admin'],
      });
      return { workspaceId, brainId, key, apiKeyId: doc._id };
    },
  };
}

/** The workspace itself: its slug and name, and the bootstrap workspace, brain and key. */
function createAuthWorkspaces({ config, repo }: AuthContext) {
  return {
    /** Admin: renames the caller's workspace or changes its slug (unique; never UUID-shaped). */
    async updateWorkspace(scope: Scope, patch: { slug?: string; name?: string }): Promise<WorkspaceDoc> {
      if (patch.slug !== undefined && (!SLUG_RE.test(patch.slug) || z.uuid().safeParse(patch.slug).success)) {
        throw validationError('slug: lowercase letters, digits and dashes, 1-64 characters, not a UUID');
      }
      const set = {
        ...(patch.slug !== undefined ? { slug: patch.slug } : {}),
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        updatedAt: new Date(),
      };
      if (patch.slug !== undefined) {
        if (await repo.slugTaken(patch.slug, scope.workspaceId)) throw conflict(`slug ${patch.slug} is taken`);
      }
      const ws = await repo.updateWorkspace(scope.workspaceId, set);
      if (!ws) throw notFound('Workspace');
      return ws;
    },

    /**
     * Makes sure the bootstrap workspace, brain and admin key exist (idempotent), so that
     * `npm run up` can print a key that works on a fresh database.
     */
    async bootstrap(): Promise<void> {
      if (config.BOOTSTRAP_WORKSPACE_ID)
        await this.bootstrapWith({
          workspaceId: config.BOOTSTRAP_WORKSPACE_ID,
          brainId: config.BOOTSTRAP_BRAIN_ID,
          apiKey: config.BOOTSTRAP_API_KEY,
        });
    },

    /** The reconciliation behind bootstrap(): a 409 AppError names what to change when the store disagrees. */
    async bootstrapWith(ids: { workspaceId: string; brainId?: string; apiKey?: string }): Promise<void> {
      const { workspaceId: ws, brainId: brain, apiKey: key } = ids;
      await repo.ensureWorkspace(ws, 'default', 'Default workspace');
      if (brain) {
        const other = await repo.brainById(brain);
        if (other && other.workspaceId !== ws) {
          throw new AppError(
            'CONFLICT',
            409,
            `BOOTSTRAP_BRAIN_ID ${brain} is a brain of workspace ${other.workspaceId}, not of BOOTSTRAP_WORKSPACE_ID ${ws}: unset BOOTSTRAP_BRAIN_ID or set BOOTSTRAP_WORKSPACE_ID=${other.workspaceId}`,
          );
        }
        await repo.ensureBrain(ws, brain, 'Default brain');
      }
      if (key) {
        const other = await repo.keyByHash(hashApiKey(key));
        if (other && other.workspaceId !== ws) {
          throw new AppError(
            'CONFLICT',
            409,
            `BOOTSTRAP_API_KEY is already a key of workspace ${other.workspaceId}, not of BOOTSTRAP_WORKSPACE_ID ${ws}: use a new BOOTSTRAP_API_KEY or set BOOTSTRAP_WORKSPACE_ID=${other.workspaceId}`,
          );
        }
        await repo.ensureKey(hashApiKey(key), {
          _id: randomUUID(),
          workspaceId: ws,
          name: 'bootstrap',
          prefix: key.slice(0, 10),
          roles: ['workspace_admin'],
          createdBy: null,
          createdAt: new Date(),
          lastUsedAt: null,
          revokedAt: null,
        });
      }
    },
  };
}

export function createAuthService(deps: AuthDeps) {
  const ctx: AuthContext = {
    ...deps,
    liveUntil: new Map(),
    secret: new TextEncoder().encode(deps.config.JWT_SECRET),
    keyCache: new Map(),
    lastUsedWrite: new Map(),
  };
  return { ...createAuthCredentials(ctx), ...createAuthKeys(ctx), ...createAuthWorkspaces(ctx) };
}
