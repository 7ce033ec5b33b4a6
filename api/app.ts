import { createHash, timingSafeEqual } from 'node:crypto';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa from 'koa';
import type { Deps } from '../src/compose/deps.js';
import { createServices, type Services } from '../src/compose/services.js';
import { errorMiddleware } from './middleware/errors.js';
import { openAIErrorMiddleware } from './openai/errors.js';
import { createAdmission } from './middleware/admission.js';
import { createRequestGuard } from './middleware/guard.js';
import { createIdempotency } from './middleware/idempotency.js';
import { createRateLimiter } from './middleware/rate-limit.js';
import { requestMiddleware } from './middleware/request.js';
import { createMcpEndpoint } from './mcp.js';
import { createSseGate } from './sse.js';
import { buildOpenApi, withServers } from './openapi.js';
import { mountConsole } from './console.js';
import { mountPages } from './pages.js';
import { authRequired } from '../src/kernel/errors.js';
import { assertJsonDepth } from '../src/kernel/json-depth.js';
import { registry } from '../src/kernel/metrics.js';
import { toKoaHandler } from './route.js';
import { allRoutes } from './routes/index.js';

/** Compares a presented secret with the expected one in constant time (their digests, so lengths do not show). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** Builds the Koa app over a dependency bag; tests mount it on port 0. */
export function createApp(deps: Deps, services: Services = createServices(deps)): Koa {
  // Behind a reverse proxy (TRUST_PROXY_HOPS > 0), the client address comes from X-Forwarded-For.
  const app = new Koa({ proxy: deps.config.TRUST_PROXY_HOPS > 0, maxIpsCount: deps.config.TRUST_PROXY_HOPS });
  const router = new Router();
  const { config } = deps;
  const admission = createAdmission({
    maxInFlight: config.ADMISSION_MAX_INFLIGHT,
    maxQueue: config.ADMISSION_MAX_QUEUE,
    maxWaitMs: config.ADMISSION_QUEUE_WAIT_MS,
    tenantSharePercent: config.ADMISSION_WORKSPACE_SHARE_PERCENT,
    sharedSlots: config.ADMISSION_WORKSPACE_SHARED_SLOTS,
  });
  const rc = {
    services,
    rateLimit: createRateLimiter(deps.redis, config),
    sse: createSseGate({ max: config.SSE_MAX_STREAMS, sharePercent: config.SSE_WORKSPACE_SHARE_PERCENT }),
    guard: createRequestGuard({ config, breakers: deps.breakers, admission, temporal: deps.temporal.connection }),
    idempotency: createIdempotency(deps.redis, { prefix: config.REDIS_PREFIX, ttlS: config.IDEMPOTENCY_TTL_S }),
  };
  // The API watches its dependencies so that requests meet a 503 at once while one is down.
  deps.breakers.start();
  // Every API process follows the webhook outbox (docs/webhooks.md, "Delivery guarantees").
  services.webhooks.follow();
  for (const def of allRoutes()) router[def.method](def.path, toKoaHandler(def, rc));
  // The OpenAPI document of every route above, generated from the same route objects at its first
  // request and kept as JSON text (building it at start cost every process ~25 MB of resident
  // memory for a document most never serve; test/unit/openapi.test.ts builds it on every run).
  // `servers` names the API as the client reached it: PUBLIC_BASE_URL when set, else the request's
  // origin (X-Forwarded-Proto/-Host count only behind a trusted proxy, TRUST_PROXY_HOPS > 0).
  let openapi: string | undefined;
  router.get('/v1/openapi.json', (ctx) => {
    if (openapi === undefined) {
      const { servers: _servers, ...doc } = buildOpenApi(allRoutes());
      openapi = JSON.stringify(doc);
    }
    const url = (deps.config.PUBLIC_BASE_URL ?? `${ctx.protocol}://${ctx.host}`).replace(/\/+$/, '');
    ctx.type = 'application/json';
    ctx.body = withServers(openapi, [{ url, description: 'this API' }]);
  });
  mountPages(router);
  // The console (docs/console.md): the web app built from console/src, same origin as the API.
  mountConsole(router);
  // The MCP server (docs/mcp.md): Streamable HTTP, served by the official SDK's transport.
  const mcp = createMcpEndpoint(rc);
  for (const method of ['get', 'post', 'delete'] as const) router[method]('/v1/mcp', mcp);
  // Prometheus scrape endpoint (src/kernel/metrics.ts); behind METRICS_TOKEN when one is configured.
  router.get('/metrics', async (ctx) => {
    const token = deps.config.METRICS_TOKEN;
    if (token && !sameSecret(ctx.get('authorization'), `Bearer ${token}`))
      throw authRequired('GET /metrics needs the metrics token');
    ctx.set('Content-Type', registry.contentType);
    ctx.body = await registry.metrics();
  });
  // A client that leaves an SSE stream early is normal; anything else Koa reports is logged.
  app.on('error', (err: { code?: string }) => {
    if (err?.code === 'ERR_STREAM_PREMATURE_CLOSE' || err?.code === 'ECONNRESET' || err?.code === 'EPIPE') return;
    deps.log.error({ err }, 'koa error');
  });
  // No response of the API is ever content-sniffed: every one declares its type (JSON, the pages' and the
  // console's own types, stored bodies through api/stored-body.ts).
  app.use((ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    return next();
  });
  app.use(requestMiddleware(deps.log));
  app.use(errorMiddleware());
  // Under /v1/openai only: errors in OpenAI's shape (an OpenAI SDK reads them); everywhere else the one above.
  app.use(openAIErrorMiddleware());
  app.use(
    bodyParser({
      enableTypes: ['json'],
      jsonLimit: '5mb',
      encoding: 'utf-8',
      onError: (err) => {
        // Too large stays 413 (errorMiddleware gives it PAYLOAD_TOO_LARGE); anything else is malformed JSON.
        if ((err as { status?: number }).status === 413) throw err;
        throw Object.assign(err, { status: 400, expose: true, message: 'Malformed JSON body' });
      },
    }),
  );
  // Every JSON body (routes, MCP, the OpenAI-compatible endpoint) nests at most JSON_MAX_DEPTH levels:
  // a deeper one is a 400 naming its field before any handler, schema or encoder walks it.
  app.use(async (ctx, next) => {
    assertJsonDepth((ctx.request as { body?: unknown }).body, 'body');
    await next();
  });
  app.use(router.routes());
  // A known path with a wrong method: 405 with an Allow header; errorMiddleware gives it the error body.
  app.use(router.allowedMethods({ throw: false }));
  return app;
}
