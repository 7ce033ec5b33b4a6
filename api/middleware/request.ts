import { metrics } from '../../src/metrics.js';
import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../../src/logger.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SECRET_LIKE = /^[A-Za-z0-9_\-.~]{20,}$/;

/**
 * A path fit for logs: any segment that could be a credential (a long token-like segment that
 * is not a UUID: public intervention tokens, share tokens) is replaced by `[redacted]`.
 */
export function redactPath(path: string): string {
  return path.split('/').map((seg) => (SECRET_LIKE.test(seg) && !UUID_RE.test(seg) ? '[redacted]' : seg)).join('/');
}

/**
 * Gives every request an id (X-Request-Id in and out) and a child logger carrying it. The request
 * line names the matched route pattern (`/v1/public/interventions/:token`), never the raw path or
 * query, so tokens in paths (`:token`) and queries (`t=`) are never written to the log; an
 * unmatched path is logged through redactPath.
 */
export function requestMiddleware(log: Logger) {
  return async (ctx: Context, next: Next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = /^[\w-]{1,64}$/.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', requestId);
    ctx.state.requestId = requestId;
    ctx.state.log = log.child({ requestId });
    const started = performance.now();
    try {
      await next();
    } finally {
      const route = (ctx as Context & { _matchedRoute?: string | RegExp })._matchedRoute;
      metrics.httpRequests.observe({ method: ctx.method, route: typeof route === 'string' ? route : 'unmatched', status: String(ctx.status) }, (performance.now() - started) / 1000);
      (ctx.state.log as Logger).info({ method: ctx.method, route: typeof route === 'string' ? route : null, path: typeof route === 'string' ? route : redactPath(ctx.path), status: ctx.status, ms: Math.round(performance.now() - started) }, 'request');
    }
  };
}
