import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../../src/logger.js';

/** Gives every request an id (X-Request-Id in and out) and a child logger carrying it. */
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
      (ctx.state.log as Logger).info({ method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) }, 'request');
    }
  };
}
