import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { allowedClientSecretEnv, type Config } from '../kernel/config.js';
import type { SecretBox } from '../crypto/secrets.js';
import type { ConnectionDoc, IntegrationDoc } from './model.js';
import type { ConnectionStore } from './store.js';
import type { ReflexRecord as Reflex, ReflexRepo } from '../reflexes/index.js';
import { conflict, forbidden, notFound, validationError } from '../kernel/errors.js';
import type { Guard } from '../net/guard.js';
import type { IntegrationBody } from './schemas.js';
import { hasRole, type Scope } from '../kernel/scope.js';
import type { Logger } from '../kernel/logger.js';

const sha256 = (s: string) => createHash('sha256').update(s).digest();
/** A connect attempt is good for ten minutes. */
const REQUEST_TTL_MS = 10 * 60_000;
/** Tokens are refreshed when they expire within this margin. */
const REFRESH_MARGIN_MS = 60_000;
/** A refresh claim older than this was left by a process that died mid-refresh: it may be taken over. */
const REFRESH_LEASE_MS = 30_000;
/** How long a caller waits for another process's refresh of the same token. */
const REFRESH_WAIT_MS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The integrations a reflex needs a connection for: its tool sets' integration ids and metadata.integration_id. */
function requiredIntegrations(r: Pick<Reflex, 'tools' | 'metadata'>): string[] {
  const meta = r.metadata;
  const ids = [
    ...r.tools.map((t) => t.integrationId),
    ...(typeof meta.integration_id === 'string' ? [meta.integration_id] : []),
  ];
  return [...new Set(ids)];
}

interface TokenAnswer {
  access_token?: string;
  refresh_token?: string;
  expires_in?: number;
  scope?: string;
  error?: string;
  error_description?: string;
}

/** What the connection service's groups share: the deps it was created with. */
interface ConnectionContext {
  repo: ConnectionStore;
  reflexes: ReflexRepo;
  box: SecretBox;
  guard: Guard;
  config: Config;
  log?: Logger;
}

/** Whose connection a call uses: the user's, or the workspace's for a workspace-wide integration. */
function ownerOf(
  scope: { userId: string | null; apiKeyId: string | null },
  i: Pick<IntegrationDoc, 'per'>,
): string | null {
  if (i.per === 'workspace') return 'workspace';
  return scope.userId ?? (scope.apiKeyId ? `key:${scope.apiKeyId}` : null);
}

/**
 * The steps the groups share: the reflex a call names, the provider's token endpoint (the client
 * secret, the token request, the refresh), the stored connections and a reflex's connection status.
 */
function createConnectionSteps(d: ConnectionContext) {
  const { repo, box, guard, config } = d;
  /** Where the provider sends the browser back: PUBLIC_BASE_URL, else the address the request came in on. */
  const base = (origin?: string) => config.PUBLIC_BASE_URL ?? origin ?? `http://${config.HOST}:${config.PORT}`;

  async function reflexOf(scope: Scope, id: string): Promise<Reflex> {
    const r = await d.reflexes.findById(scope.workspaceId, id);
    if (!r || (scope.brainId && r.brainId && r.brainId !== scope.brainId && r.scope === 'brain'))
      throw notFound('Reflex');
    return r;
  }
  const integration = (workspaceId: string, integrationId: string) => repo.integration(workspaceId, integrationId);
  /** Whether the operator lets integrations name this environment variable (OAUTH_CLIENT_SECRET_ENVS). */
  const envAllowed = (name: string) => config.OAUTH_CLIENT_SECRET_ENVS.includes(name);
  /**
   * The client secret a token request sends: the sealed one, or an environment variable the operator
   * allowlisted. A stored name that is not (any more) on the list is never read: checked here, at use,
   * as well as when the integration is saved.
   */
  function clientSecret(i: IntegrationDoc): string | null {
    if (i.clientSecretSealed) return box.open(i.clientSecretSealed);
    if (i.clientSecretEnv) {
      if (!envAllowed(i.clientSecretEnv)) {
        d.log?.warn(
          { workspaceId: i.workspaceId, integrationId: i.integrationId },
          'integration names a client_secret_env that is not in OAUTH_CLIENT_SECRET_ENVS: no client secret sent',
        );
        return null;
      }
      return allowedClientSecretEnv(config, i.clientSecretEnv);
    }
    return null;
  }

  /** POSTs a form to the token endpoint (through the guard) with the client's credentials. */
  async function tokenRequest(
    i: IntegrationDoc,
    form: Record<string, string>,
  ): Promise<TokenAnswer & { status: number }> {
    const secret = clientSecret(i);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    const body = new URLSearchParams(form);
    if (secret)
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(i.clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    else body.set('client_id', i.clientId);
    const res = await guard.fetch(i.tokenEndpoint, {
      method: 'POST',
      headers,
      body: body.toString(),
      signal: AbortSignal.timeout(15_000),
    });
    const json = (await res.json().catch(() => ({}))) as TokenAnswer;
    return { ...json, status: res.status };
  }

  async function store(
    i: IntegrationDoc,
    ownerId: string,
    t: TokenAnswer,
    previous: ConnectionDoc | null,
  ): Promise<ConnectionDoc> {
    const now = new Date();
    const doc: ConnectionDoc = {
      _id: previous?._id ?? randomUUID(),
      workspaceId: i.workspaceId,
      integrationId: i.integrationId,
      ownerId,
      accessSealed: box.seal(t.access_token!),
      // A kept refresh token is re-sealed too, so the whole record is under the current key.
      refreshSealed: t.refresh_token
        ? box.seal(t.refresh_token)
        : previous?.refreshSealed
          ? box.reseal(previous.refreshSealed)
          : null,
      expiresAt: t.expires_in ? new Date(now.getTime() + t.expires_in * 1000) : null,
      scope: t.scope ?? previous?.scope ?? null,
      keyId: box.keyId,
      createdAt: previous?.createdAt ?? now,
      refreshedAt: previous ? now : null,
      updatedAt: now,
    };
    await repo.putConnection(doc);
    return doc;
  }

  const connectionOf = (workspaceId: string, integrationId: string, ownerId: string | null) =>
    ownerId ? repo.connection(workspaceId, integrationId, ownerId) : Promise.resolve(null);

  /**
   * Refreshes a connection's token once, however many callers (in any process) find it about to
   * expire: the refresh is claimed by a unique insert naming the token it replaces (src/kernel/store/claims.ts);
   * the others wait for the stored token to change. Providers that rotate refresh tokens treat a
   * second use of the old one as a replay (oidc-provider revokes the whole grant), so two refreshes
   * would disconnect the user. A claim left by a process that died is taken over after a lease.
   */
  async function refresh(i: IntegrationDoc, owner: string, c: ConnectionDoc): Promise<string | null> {
    const claimId = `${c._id}:${sha256(c.accessSealed).toString('hex').slice(0, 32)}`;
    const stillValid = () => (c.expiresAt && c.expiresAt.getTime() > Date.now() ? box.open(c.accessSealed) : null);
    const done = await repo.refreshOnce(
      claimId,
      REFRESH_LEASE_MS,
      async () => {
        // Refreshed by someone else between our read and our claim (their claim already released): use theirs.
        const now = await connectionOf(c.workspaceId, c.integrationId, owner);
        if (!now) return null;
        if (now.accessSealed !== c.accessSealed) return box.open(now.accessSealed);
        const t = await tokenRequest(i, { grant_type: 'refresh_token', refresh_token: box.open(c.refreshSealed!) });
        if (t.status !== 200 || !t.access_token) return stillValid();
        return box.open((await store(i, owner, t, c)).accessSealed);
      },
      // Not given back, the hold still ends with its lease (REFRESH_LEASE_MS): worth a line, not a failure.
      (err) => d.log?.warn({ err }, 'releasing a token refresh hold failed; ignored'),
    );
    if (done.held) return done.value;
    for (const until = Date.now() + REFRESH_WAIT_MS; Date.now() < until;) {
      await sleep(100);
      const now = await connectionOf(c.workspaceId, c.integrationId, owner);
      if (!now) return null; // disconnected meanwhile
      if (now.accessSealed !== c.accessSealed) return box.open(now.accessSealed);
    }
    return stillValid();
  }

  async function statusOf(scope: Scope, r: Reflex) {
    const integrations = await Promise.all(
      requiredIntegrations(r).map(async (id) => {
        const i = await integration(scope.workspaceId, id);
        const c = i ? await connectionOf(scope.workspaceId, id, ownerOf(scope, i)) : null;
        const live = Boolean(c && (c.refreshSealed || !c.expiresAt || c.expiresAt.getTime() > Date.now()));
        return {
          integration_id: id,
          configured: Boolean(i),
          per: i?.per ?? null,
          connected: live,
          connectedAccountId: c?._id ?? null,
          expires_at: c?.expiresAt?.toISOString() ?? null,
          refreshable: Boolean(c?.refreshSealed),
          scope: c?.scope ?? null,
          action: (!i ? 'configure' : live ? 'none' : 'connect') as 'none' | 'connect' | 'configure',
        };
      }),
    );
    return { reflexId: r._id, connected: integrations.every((x) => x.connected), integrations };
  }

  return { base, reflexOf, integration, envAllowed, tokenRequest, store, connectionOf, refresh, statusOf };
}
type ConnectionSteps = ReturnType<typeof createConnectionSteps>;

/** The workspace's integrations (admin: PUT, GET, DELETE /v1/integrations). */
function createIntegrationAdmin(d: ConnectionContext, steps: ConnectionSteps) {
  const { repo, box, guard } = d;
  const { integration, envAllowed } = steps;
  return {
    requiredIntegrations,
    /** The workspace's integration of that id (null: not configured). */
    integration,

    async putIntegration(scope: Scope, body: IntegrationBody): Promise<IntegrationDoc> {
      if (body.client_secret && body.client_secret_env)
        throw validationError('send client_secret or client_secret_env, not both');
      if (body.client_secret_env && !envAllowed(body.client_secret_env))
        throw validationError(
          `client_secret_env: ${body.client_secret_env} is not an environment variable the operator allows for client secrets (OAUTH_CLIENT_SECRET_ENVS); send client_secret instead`,
        );
      // The URLs the platform calls later (the token endpoint, the MCP server) and the one it sends browsers to.
      await guard.checkSavedAll([
        [body.authorization_endpoint, 'authorization_endpoint'],
        [body.token_endpoint, 'token_endpoint'],
        ...(body.mcp_server_url ? [[body.mcp_server_url, 'mcp_server_url'] as const] : []),
      ]);
      const now = new Date();
      const existing = await integration(scope.workspaceId, body.integration_id);
      const doc: IntegrationDoc = {
        _id: existing?._id ?? randomUUID(),
        workspaceId: scope.workspaceId,
        integrationId: body.integration_id,
        name: body.name ?? body.integration_id,
        authorizationEndpoint: body.authorization_endpoint,
        tokenEndpoint: body.token_endpoint,
        scopes: body.scopes,
        clientId: body.client_id,
        clientSecretSealed: body.client_secret
          ? box.seal(body.client_secret)
          : body.client_secret_env
            ? null
            : (existing?.clientSecretSealed ?? null),
        clientSecretEnv:
          body.client_secret_env ??
          (body.client_secret || !existing?.clientSecretEnv || !envAllowed(existing.clientSecretEnv)
            ? null
            : existing.clientSecretEnv),
        per: body.per,
        mcpServerUrl: body.mcp_server_url ?? null,
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
      };
      await repo.putIntegration(doc);
      return doc;
    },
    listIntegrations: (scope: Scope) => repo.listIntegrations(scope.workspaceId),
    async removeIntegration(scope: Scope, integrationId: string): Promise<void> {
      if (!(await repo.removeIntegration(scope.workspaceId, integrationId))) throw notFound('Integration');
    },
  };
}

/** The connect flow: the authorization URL with PKCE (initiate) and the provider's callback (the code exchanged). */
function createConnectFlow(d: ConnectionContext, steps: ConnectionSteps) {
  const { repo, box, config } = d;
  const { base, reflexOf, integration, statusOf, tokenRequest, store } = steps;
  return {
    /** POST /v1/reflexes/:id/connect: a connection request and the provider's authorization URL. */
    async initiate(
      scope: Scope,
      reflexId: string,
      body: { callbackUrl?: string; integration_id?: string },
      origin?: string,
    ) {
      const r = await reflexOf(scope, reflexId);
      const needed = requiredIntegrations(r);
      if (!needed.length) throw validationError('This reflex needs no connection (it names no integration)');
      if (body.integration_id && !needed.includes(body.integration_id))
        throw validationError(`integration_id: this reflex needs ${needed.join(', ')}`);
      const status = await statusOf(scope, r);
      const pick = body.integration_id ?? status.integrations.find((x) => !x.connected)?.integration_id ?? needed[0];
      const i = await integration(scope.workspaceId, pick);
      if (!i)
        throw validationError(
          `integration ${pick} is not configured: an admin adds it with PUT /v1/integrations/${pick}`,
        );
      // One account for everyone: only an admin may connect (or replace) it.
      if (i.per === 'workspace' && !hasRole(scope, 'workspace_admin'))
        throw forbidden(
          `${i.integrationId} is connected once for the whole workspace: that needs role workspace_admin`,
        );
      const owner = ownerOf(scope, i);
      if (!owner) throw validationError("A connection belongs to a user: connect with a JWT or with a user's API key");
      if (body.callbackUrl) {
        const back = new URL(body.callbackUrl);
        // The console this API serves (/console on its own origin) is always a callback: a
        // same-origin page, not an open redirect. Any other origin must be on the list.
        const ownConsole = back.origin === new URL(base(origin)).origin && back.pathname.startsWith('/console/');
        if (!ownConsole && !config.OAUTH_CALLBACK_ALLOW.includes(back.origin))
          throw validationError(`callbackUrl: ${back.origin} is not an allowed callback origin (OAUTH_CALLBACK_ALLOW)`);
      }
      const id = randomUUID();
      const state = `${id}.${randomBytes(24).toString('base64url')}`;
      const verifier = randomBytes(32).toString('base64url');
      const redirectUri = `${base(origin)}/v1/reflexes/${r._id}/callback`;
      const now = new Date();
      await repo.createRequest({
        _id: id,
        workspaceId: scope.workspaceId,
        reflexId: r._id,
        integrationId: i.integrationId,
        userId: owner,
        stateHash: sha256(state).toString('hex'),
        verifierSealed: box.seal(verifier),
        redirectUri,
        callbackUrl: body.callbackUrl ?? null,
        createdAt: now,
        expiresAt: new Date(now.getTime() + REQUEST_TTL_MS),
        usedAt: null,
      });
      const url = new URL(i.authorizationEndpoint);
      url.searchParams.set('response_type', 'code');
      url.searchParams.set('client_id', i.clientId);
      url.searchParams.set('redirect_uri', redirectUri);
      if (i.scopes.length) url.searchParams.set('scope', i.scopes.join(' '));
      url.searchParams.set('state', state);
      url.searchParams.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'));
      url.searchParams.set('code_challenge_method', 'S256');
      return { redirectUrl: url.toString(), connectionRequestId: id };
    },

    /**
     * GET /v1/reflexes/:id/callback (the provider sends the browser here): the state must be the
     * request's, the request unused and fresh; the code is exchanged with the PKCE verifier.
     */
    async callback(
      reflexId: string,
      q: {
        connectionRequestId?: string;
        request_id?: string;
        code?: string;
        state?: string;
        error?: string;
        error_description?: string;
      },
    ) {
      const id = q.connectionRequestId ?? q.request_id ?? q.state?.split('.')[0];
      if (!id) throw validationError('connectionRequestId is required');
      const req = await repo.findRequest(id, reflexId);
      if (!req) throw notFound('Connection request');
      if (q.error)
        throw validationError(
          `the provider refused: ${q.error}${q.error_description ? ` (${q.error_description})` : ''}`,
        );
      const given = sha256(q.state ?? '');
      if (!q.state || !timingSafeEqual(given, Buffer.from(req.stateHash, 'hex')))
        throw validationError('state does not match this connection request');
      if (req.expiresAt.getTime() < Date.now())
        throw validationError('this connection request has expired: start again');
      if (!q.code) throw validationError('code is required');
      if (!(await repo.useRequest(req._id))) throw conflict('this connection request was already used');
      const i = await integration(req.workspaceId, req.integrationId);
      if (!i) throw validationError(`integration ${req.integrationId} is no longer configured`);
      const t = await tokenRequest(i, {
        grant_type: 'authorization_code',
        code: q.code,
        redirect_uri: req.redirectUri,
        code_verifier: box.open(req.verifierSealed),
      });
      if (t.status !== 200 || !t.access_token)
        throw validationError(
          `the token exchange failed: ${t.error ?? t.status}${t.error_description ? ` (${t.error_description})` : ''}`,
        );
      const owner = req.userId ?? 'workspace';
      const previous = await repo.connection(req.workspaceId, i.integrationId, owner);
      const doc = await store(i, owner, t, previous);
      return { connectedAccountId: doc._id, success: true as const, callbackUrl: req.callbackUrl };
    },
  };
}

/** A reflex's connections: their status, the caller's disconnect and the access token a tool call sends. */
function createConnectionUse(d: ConnectionContext, steps: ConnectionSteps) {
  const { repo, box } = d;
  const { reflexOf, integration, connectionOf, refresh, statusOf } = steps;
  return {
    async connection(scope: Scope, reflexId: string) {
      const s = await statusOf(scope, await reflexOf(scope, reflexId));
      const first = s.integrations.find((x) => x.connectedAccountId);
      return {
        connectedAccountId: first?.connectedAccountId ?? null,
        connected: s.connected && s.integrations.length > 0,
      };
    },
    check: async (scope: Scope, reflexId: string) => statusOf(scope, await reflexOf(scope, reflexId)),
    async batch(scope: Scope, ids: string[]) {
      return Promise.all(
        ids.map(async (reflexId) => {
          const r = await d.reflexes.findById(scope.workspaceId, reflexId);
          if (!r) return { reflexId, connectedAccountId: null, connected: false };
          const s = await statusOf(scope, r);
          return {
            reflexId,
            connectedAccountId: s.integrations.find((x) => x.connectedAccountId)?.connectedAccountId ?? null,
            connected: s.connected && s.integrations.length > 0,
          };
        }),
      );
    },
    async checkBatch(scope: Scope, ids?: string[]) {
      const reflexes = ids
        ? await d.reflexes.findMany(scope.workspaceId, ids)
        : await d.reflexes.someOfWorkspace(scope.workspaceId, 100);
      return Promise.all(reflexes.map(async (r) => ({ reflexId: r._id, status: await statusOf(scope, r) })));
    },
    /** DELETE /v1/reflexes/:id/connection: removes the caller's connections of the reflex's integrations. */
    async disconnect(scope: Scope, reflexId: string): Promise<void> {
      const r = await reflexOf(scope, reflexId);
      let removed = 0;
      let sharedLeft = false;
      for (const id of requiredIntegrations(r)) {
        const i = await integration(scope.workspaceId, id);
        const owner = i && ownerOf(scope, i);
        if (!owner) continue;
        // The workspace's shared account is an admin's to remove; a member's disconnect leaves it.
        if (owner === 'workspace' && !hasRole(scope, 'workspace_admin')) {
          sharedLeft ||= Boolean(await connectionOf(scope.workspaceId, id, owner));
          continue;
        }
        if (await repo.removeConnection(scope.workspaceId, id, owner)) removed++;
      }
      if (!removed && sharedLeft)
        throw forbidden("This connection is the workspace's shared account: removing it needs role workspace_admin");
      if (!removed) throw notFound('Connection');
    },

    /**
     * The access token a tool call sends for an integration, refreshed first when it expires
     * within a minute; null when the caller has no connection (the model is told "not connected").
     */
    async tokenFor(
      who: { workspaceId: string; userId: string | null; apiKeyId: string | null },
      integrationId: string,
    ): Promise<string | null> {
      const i = await integration(who.workspaceId, integrationId);
      if (!i) return null;
      const owner = ownerOf(who, i);
      const c = await connectionOf(who.workspaceId, integrationId, owner);
      if (!c || !owner) return null;
      if (c.expiresAt && c.expiresAt.getTime() - REFRESH_MARGIN_MS < Date.now()) {
        if (!c.refreshSealed) return c.expiresAt.getTime() > Date.now() ? box.open(c.accessSealed) : null;
        return refresh(i, owner, c);
      }
      return box.open(c.accessSealed);
    },
  };
}

/**
 * Reflex connections over OAuth 2 (issue 12; docs/decisions.md): authorization code with PKCE
 * (S256), `state` bound to the connection request (and so to its user), tokens sealed at rest and
 * refreshed before they expire, every provider request through the outbound guard.
 */
export function createConnectionService(d: {
  repo: ConnectionStore;
  reflexes: ReflexRepo;
  box: SecretBox;
  guard: Guard;
  config: Config;
  log?: Logger;
}) {
  const ctx: ConnectionContext = d;
  const steps = createConnectionSteps(ctx);
  return {
    ...createIntegrationAdmin(ctx, steps),
    ...createConnectFlow(ctx, steps),
    ...createConnectionUse(ctx, steps),
  };
}
export type ConnectionService = ReturnType<typeof createConnectionService>;

/**
 * Key rotation, second half (docs/tools.md): re-seals every stored secret that is not under the
 * current key (integration client secrets, connection tokens, the verifiers of pending connect
 * requests) and deletes expired connect requests, so the old key can be removed from
 * SECRETS_KEYS_OLD. Each update names the value it replaces, so a concurrent refresh wins and is
 * not overwritten. Safe to run again; returns what it changed.
 */
export async function resealSecrets(
  repo: ConnectionStore,
  box: SecretBox,
): Promise<{ integrations: number; connections: number; requests: number; expiredRequests: number }> {
  const out = { integrations: 0, connections: 0, requests: 0, expiredRequests: 0 };
  for (const i of await repo.integrationsWithSecret()) {
    if (!i.clientSecretSealed || box.keyOf(i.clientSecretSealed) === box.keyId) continue;
    if (await repo.resealIntegration(i._id, i.clientSecretSealed, box.reseal(i.clientSecretSealed))) out.integrations++;
  }
  for (const c of await repo.allConnections()) {
    const stale =
      box.keyOf(c.accessSealed) !== box.keyId || (c.refreshSealed !== null && box.keyOf(c.refreshSealed) !== box.keyId);
    if (!stale) continue;
    const set = {
      accessSealed: box.reseal(c.accessSealed),
      refreshSealed: c.refreshSealed ? box.reseal(c.refreshSealed) : null,
      keyId: box.keyId,
    };
    if (await repo.resealConnection(c._id, c.accessSealed, set)) out.connections++;
  }
  out.expiredRequests = await repo.deleteExpiredRequests();
  for (const r of await repo.allRequests()) {
    if (box.keyOf(r.verifierSealed) === box.keyId) continue;
    if (await repo.resealRequest(r._id, r.verifierSealed, box.reseal(r.verifierSealed))) out.requests++;
  }
  return out;
}
