import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { z, type ZodType } from 'zod';
import {
  AppError,
  authRequired,
  forbidden,
  notFound,
  unsupportedMediaType,
  validationError,
} from '../src/kernel/errors.js';
import type { Logger } from '../src/kernel/logger.js';
import { hasRole, type Role, type Scope } from '../src/kernel/scope.js';
import type { Services } from '../src/compose/services.js';
import type { ShareAccess } from '../src/shares/index.js';
import { currentRequest } from '../src/kernel/request-context.js';
import type { Idempotency } from './middleware/idempotency.js';
import type { RequestGuard } from './middleware/guard.js';
import type { RequestTiming } from './middleware/request.js';
import type { RateLimit } from './middleware/rate-limit.js';
import { setSseAdmission, type SseGate } from './sse.js';

/**
 * required: API key or JWT; jwt: JWT only (key management); optional: credential used when
 * present (public routes with attribution); none: never authenticated; operator: the platform
 * operator's token (OPERATOR_TOKEN, docs/roles.md), never a tenant credential.
 */
type AuthMode = 'required' | 'jwt' | 'optional' | 'none' | 'operator';

type Infer<S> = S extends ZodType ? z.output<S> : Record<string, never>;

export interface HandlerInput<P, Q, B, A = Services> {
  params: P;
  query: Q;
  body: B;
  scope: Scope;
  /** The services of the route's own area (`areaRoutes`), not the whole bag. */
  services: A;
  ctx: Context;
  log: Logger;
  /** Set when the request came with a share token (routes with `share`). */
  share?: ShareAccess;
}

/** A route is data: method, path, schemas and a short handler; OpenAPI reads the same objects. */
export interface RouteDef<PS = unknown, QS = unknown, BS = unknown, A = Services> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  /**
   * The operation's summary in the OpenAPI document: a short title written for the route ("Invoke a
   * neuron", "Stream a job's tokens and progress"), never one made from the path. Required, so a
   * new route cannot be added without one (test/unit/openapi.test.ts also refuses path-like ones).
   */
  summary: string;
  /** One or two sentences about the route: the operation's description. */
  description?: string;
  /** Overrides the derived operation id (`operationIdOf`) where derivation reads poorly or collides. */
  operationId?: string;
  /** OpenAPI examples for a main flow: a request body and the success response. */
  examples?: { request?: unknown; response?: unknown };
  tags?: string[];
  auth?: AuthMode;
  /** required: X-Brain-Id must be present (400) and a brain of the workspace (404). optional: checked when sent. */
  brain?: 'required' | 'optional';
  roles?: Role[];
  /**
   * A per-resource role the route needs beyond its route-level roles (docs/roles.md), enforced by
   * the resource's service; declared here so the generated authorization suite tests it.
   */
  resourceRole?: { kind: 'pathway'; role: 'viewer' | 'editor' | 'owner' };
  /**
   * The path names a resource of the caller's own workspace that this route creates on first use
   * (a trace by its id): another workspace's resource with the same id is never touched.
   */
  createsByPath?: boolean;
  /**
   * Share links (docs/shares.md): `only`: the route takes a share token (`?t=` or body
   * `share_token`), a bearer JWT only attributes; `accept`: normal credentials, or a share token in
   * their place. Share traffic is rate limited per token and per client address.
   */
  share?: 'only' | 'accept';
  /**
   * `stream`: an SSE route (its set-up is bounded, the stream is not, and it takes no admission
   * slot); `health`: a health probe (answers while dependencies are down, no admission slot).
   */
  kind?: 'stream' | 'health';
  /** A deadline of the route's own, where its work is known to take longer than REQUEST_DEADLINE_MS. */
  deadlineMs?: number;
  params?: PS;
  query?: QS;
  body?: BS;
  status?: number;
  response?: ZodType;
  handler: (input: HandlerInput<Infer<PS>, Infer<QS>, Infer<BS>, A>) => Promise<unknown>;
  /**
   * The services the route's handler is given, picked from the bag once when the route is mounted
   * (`areaRoutes`): a route reaches its own area's API and the few others it names, nothing else.
   */
  uses?: (services: Services) => unknown;
}

/**
 * The route builder of one area's route file: `uses` picks the services its handlers are given
 * (its own area's, and any other it names), so a handler cannot reach the rest of the bag.
 *
 *   const route = areaRoutes((s) => ({ skills: s.skills }));
 */
export function areaRoutes<A>(uses: (services: Services) => A) {
  return function areaRoute<
    PS extends ZodType | undefined = undefined,
    QS extends ZodType | undefined = undefined,
    BS extends ZodType | undefined = undefined,
  >(def: RouteDef<PS, QS, BS, A>): RouteDef {
    return { ...def, uses } as unknown as RouteDef;
  };
}

export interface RouteContext {
  services: Services;
  /** SSE streams open on this process, shared fairly between workspaces (api/sse.ts). */
  sse: SseGate;
  rateLimit: RateLimit;
  guard: RequestGuard;
  idempotency: Idempotency;
}

const bearer = (ctx: Context): string | undefined => {
  const h = ctx.get('authorization');
  const m = /^Bearer\s+(.+)$/i.exec(h);
  return m?.[1]?.trim();
};

/** A share-token request: the link, its scope, and its rate limits. */
async function resolveShare(ctx: Context, rc: RouteContext): Promise<ShareAccess> {
  const q = ctx.query.t;
  const body = (ctx.request as { body?: unknown }).body as { share_token?: unknown } | undefined;
  const token = typeof q === 'string' ? q : typeof body?.share_token === 'string' ? body.share_token : undefined;
  // Share-link requests per client address and per token, per minute (SHARE_REQUESTS_PER_MINUTE).
  const SHARE_LIMIT = { points: rc.services.config.SHARE_REQUESTS_PER_MINUTE, durationS: 60 };
  await rc.rateLimit.consume(ctx, `share-ip:${ctx.ip}`, SHARE_LIMIT);
  let user: Scope | null = null;
  const jwt = bearer(ctx);
  if (jwt)
    user = await rc.services.auth.authenticate(jwt).then(
      (s) => (s.credential === 'jwt' ? s : null),
      () => null,
    );
  // As for keys (authenticateLimited): a link recently seen valid passes an address over its failure limit.
  const blocked = await rc.rateLimit.authFailureBlock(ctx);
  if (blocked && !(await rc.services.shares.recentlyValid(token))) throw blocked;
  const access = await rc.services.shares.authenticate(token, user).catch(async (e: unknown) => {
    if (e instanceof AppError && e.status === 401) throw (await rc.rateLimit.recordAuthFailure(ctx)) ?? e;
    throw e;
  });
  await rc.rateLimit.consume(ctx, `share:${access.share._id}`, SHARE_LIMIT);
  return access;
}

/** Counts one request of an authenticated credential against its rate limit (429 past it). */
const countRequest = async (ctx: Context, rc: RouteContext, scope: Scope): Promise<void> => {
  await Promise.all([
    // A JWT's counter names its workspace too: deleting the workspace finds it (src/tenancy, "redis" step).
    rc.rateLimit.consume(ctx, `cred:${scope.apiKeyId ?? `jwt:${scope.workspaceId}:${scope.userId}`}`, scope.rateLimit),
    // The workspace's share: every credential of it together (minting keys does not multiply it).
    rc.rateLimit.consumeWorkspace(ctx, scope.workspaceId),
  ]);
};

/**
 * Authenticates a bearer credential under the failed-authentication limiter: failures slow
 * further failures only (docs/decisions.md, "Auth, scoping and roles"). A credential that authenticates
 * passes whatever its address's failure count: a JWT or a key this process verified recently is
 * checked without the limiter at all, and a key any API process verified recently (Redis) reaches
 * its lookup. Any other key from an address over its limit is a 429 before the store is read; a
 * credential that fails costs its address a point, and is a 429 once that puts it over the limit.
 */
async function authenticateLimited(ctx: Context, rc: RouteContext, token: string): Promise<Scope> {
  const { auth } = rc.services;
  if (!auth.needsNoLookup(token)) {
    const blocked = await rc.rateLimit.authFailureBlock(ctx);
    if (blocked && !(await auth.recentlyValid(token))) throw blocked;
  }
  try {
    return await auth.authenticate(token);
  } catch (e) {
    if (e instanceof AppError && e.status === 401) throw (await rc.rateLimit.recordAuthFailure(ctx)) ?? e;
    throw e;
  }
}

/** Resolves credentials, brain scope and role for a route. */
async function resolveScope(def: RouteDef, ctx: Context, rc: RouteContext): Promise<Scope> {
  const mode = def.auth ?? 'required';
  const token = bearer(ctx);
  if (def.share === 'only' || (def.share === 'accept' && !token && typeof ctx.query.t === 'string')) {
    const access = await resolveShare(ctx, rc);
    ctx.state.share = access;
    return access.scope;
  }
  if (mode === 'operator') {
    // The operator acts on workspaces from outside them: no workspace scope, its own failure limit.
    const blocked = await rc.rateLimit.authFailureBlock(ctx);
    if (blocked) throw blocked;
    try {
      rc.services.tenancy.checkOperator(token ?? null);
    } catch (e) {
      throw (await rc.rateLimit.recordAuthFailure(ctx)) ?? e;
    }
    return { workspaceId: '', userId: null, apiKeyId: null, roles: [], credential: 'system' };
  }
  let scope: Scope | null = null;
  if (mode !== 'none' && token) {
    try {
      scope = await authenticateLimited(ctx, rc, token);
    } catch (e) {
      // An optional credential that fails leaves the request anonymous; a 429 stays a 429.
      if (mode !== 'optional' || (e instanceof AppError && e.status === 429)) throw e;
    }
  }
  if (!scope) {
    if (mode === 'required' || mode === 'jwt') throw authRequired();
    await rc.rateLimit.consume(ctx, `ip:${ctx.ip}`);
    return { workspaceId: '', userId: null, apiKeyId: null, roles: [], credential: 'anonymous' };
  }
  if (mode === 'jwt' && scope.credential !== 'jwt') throw forbidden('This route accepts a JWT only');
  await countRequest(ctx, rc, scope);
  // Route-level roles (docs/roles.md): the one check every route passes through.
  for (const r of def.roles ?? []) if (!hasRole(scope, r)) throw forbidden(`Requires role ${r}`);
  const brainHeader = ctx.get('x-brain-id');
  if (def.brain === 'required' && !brainHeader) throw validationError('X-Brain-Id header is required');
  if (brainHeader && (def.brain || mode !== 'none')) {
    if (!z.uuid().safeParse(brainHeader).success) {
      if (def.brain) throw validationError('X-Brain-Id must be a UUID');
    } else {
      const brain = await rc.services.workspaces.findBrain(scope.workspaceId, brainHeader);
      if (!brain) {
        if (def.brain) throw notFound('Brain');
      } else scope.brainId = brain._id;
    }
  }
  return scope;
}

/**
 * Resolves the credential (401 without a valid one, rate limits as every route) and X-Brain-Id
 * (optional) of a request served outside the route table, such as the MCP endpoint.
 */
export const resolveRequestScope = (ctx: Context, rc: RouteContext): Promise<Scope> =>
  resolveScope(
    {
      method: 'post',
      path: ctx.path,
      summary: 'A request outside the route table',
      auth: 'required',
      brain: 'optional',
      handler: async () => undefined,
    },
    ctx,
    rc,
  );

/** The Koa handler for one route: guard → authenticate → admit → validate → handler → status and body. */
export function toKoaHandler(def: RouteDef, rc: RouteContext) {
  const parse = (schema: unknown, value: unknown) => (schema ? (schema as ZodType).parse(value) : value);
  const guarded = { kind: def.kind ?? 'request', deadlineMs: def.deadlineMs } as const;
  // The handler's services: its area's pick, made once here.
  const services = def.uses ? def.uses(rc.services) : rc.services;
  return async (ctx: Context) => {
    // A body in anything but JSON is refused before it is read (415), on every route that takes one.
    if (def.body && ctx.request.length && !ctx.is('application/json', '+json'))
      throw unsupportedMediaType('application/json');
    await rc.guard.run(guarded, ctx, async (admit) => {
      const t0 = performance.now();
      const scope = await resolveScope(def, ctx, rc);
      const t1 = performance.now();
      // Admission is fair between workspaces (anonymous callers: per address), and so are SSE streams.
      await admit(scope.workspaceId || `ip:${ctx.ip}`);
      ctx.state.timing = { auth: t1 - t0, admit: performance.now() - t1 } satisfies RequestTiming;
      if (def.kind === 'stream') setSseAdmission(ctx, { gate: rc.sse, tenant: scope.workspaceId || `ip:${ctx.ip}` });
      const params = parse(def.params, ctx.params);
      const query = parse(def.query, ctx.query);
      const rawBody = (ctx.request as { body?: unknown }).body;
      const body = parse(def.body, rawBody === undefined && def.body ? {} : rawBody);
      const share = ctx.state.share as ShareAccess | undefined;
      const respond = async (seed: string | undefined) => {
        // The ids this request creates derive from its Idempotency-Key (src/kernel/request-context.ts newId).
        const req = currentRequest();
        if (req && seed) req.idempotency = seed;
        const result = await def.handler({
          params,
          query,
          body,
          scope,
          services,
          ctx,
          log: ctx.state.log as Logger,
          share,
        } as HandlerInput<never, never, never>);
        if (result === undefined && ctx.body != null) return; // the handler wrote the response itself
        if (result instanceof Readable) {
          ctx.status = 200;
          ctx.body = result;
          return;
        }
        ctx.status = def.status ?? (result === undefined ? 204 : 200);
        if (result !== undefined) ctx.body = result;
      };
      if (def.method !== 'post' || def.kind) return respond(undefined);
      const request = {
        method: def.method,
        path: ctx.path,
        query,
        body: ctx.is('application/json', '+json') || !ctx.request.length ? body : { length: ctx.request.length },
      };
      // The outcome is the caller's own: workspace, credential, route and key (api/middleware/idempotency.ts).
      await rc.idempotency.run(ctx, scope, `${def.method} ${def.path}`, request, respond);
    });
  };
}

/*
 * Operation ids (`neurons.invoke`, `jobs.stream`, `neurons.versions.list`), derived from method and
 * path so every route, including ones added later, gets a readable id without per-route work:
 *   - the static path segments after `/v1` (kebab → camel) name the resource, parameters are skipped;
 *   - a path ending in a parameter is an item: get, update (put/patch), delete;
 *   - ending in a collection (a plural segment): list (get), create (post), replace (put),
 *     update (patch), deleteAll (delete);
 *   - ending in any other segment: a post or get names that action or view (`neurons.invoke`,
 *     `jobs.status`), put/patch/delete act on it as a singular sub-resource (`reflexes.connection.delete`).
 * `buildOpenApi` refuses duplicates, so a collision is fixed with an explicit `operationId` on the route.
 */
const NOT_COLLECTIONS = new Set(['status', 'stimuli', 'by-source', 'stats', 'events']);
const camel = (seg: string) => seg.replace(/[-_]+([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const isParam = (seg: string) => seg.startsWith(':');
const isCollection = (seg: string) => !NOT_COLLECTIONS.has(seg) && /s$/.test(seg);

/** The route's operation id: the explicit override, else derived from method and path (rules above). */
export function operationIdOf(def: Pick<RouteDef, 'method' | 'path' | 'operationId'>): string {
  if (def.operationId) return def.operationId;
  const segs = def.path.split('/').filter(Boolean);
  if (segs[0] === 'v1') segs.shift();
  const statics = segs.filter((s) => !isParam(s)).map(camel);
  const last = segs.at(-1) ?? '';
  const join = (ns: string[], verb: string) => [...ns, verb].join('.');
  if (!last || isParam(last)) {
    const verb = { get: 'get', put: 'update', patch: 'update', delete: 'delete', post: 'post' }[def.method];
    return join(statics, verb);
  }
  if (isCollection(last)) {
    const verb = { get: 'list', post: 'create', put: 'replace', patch: 'update', delete: 'deleteAll' }[def.method];
    return join(statics, verb);
  }
  if (def.method === 'get' || def.method === 'post') {
    // A single segment (`/v1/workspace`, `/health`) reads as the resource itself.
    return statics.length === 1
      ? join(statics, def.method === 'get' ? 'get' : 'post')
      : join(statics.slice(0, -1), statics.at(-1)!);
  }
  return join(statics, def.method === 'delete' ? 'delete' : 'update');
}
