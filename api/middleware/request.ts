import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { metrics } from '../../src/kernel/metrics.js';
import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../../src/kernel/logger.js';

/** The API's tracer (src/kernel/telemetry.ts); a no-op until tracing is started. */
const tracer = trace.getTracer('cortex-api');
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SECRET_LIKE = /^[A-Za-z0-9_\-.~]{20,}$/;

/**
 * A path fit for logs: any segment that could be a credential (a long token-like segment that
 * is not a UUID: public intervention tokens, share tokens) is replaced by `[redacted]`.
 */
export function redactPath(path: string): string {
  return path
    .split('/')
    .map((seg) => (SECRET_LIKE.test(seg) && !UUID_RE.test(seg) ? '[redacted]' : seg))
    .join('/');
}

/** Phases of a request's time inside the API, in ms, set by the route handler (api/route.ts). */
export interface RequestTiming {
  /** Authentication: the credential resolved to a scope. */
  auth?: number;
  /** Waiting for an admission slot (api/middleware/admission.ts). */
  admit?: number;
}

/** The `Server-Timing` value: each measured phase, then the whole request as `app`. */
function serverTiming(phases: RequestTiming | undefined, totalMs: number): string {
  const parts = Object.entries(phases ?? {})
    .filter((e): e is [string, number] => typeof e[1] === 'number')
    .map(([name, ms]) => `${name};dur=${ms.toFixed(1)}`);
  return [...parts, `app;dur=${totalMs.toFixed(1)}`].join(', ');
}

/**
 * Gives every request an id (X-Request-Id in and out) and a child logger carrying it. The request
 * line names the matched route pattern (`/v1/public/interventions/:token`), never the raw path or
 * query, so tokens in paths (`:token`) and queries (`t=`) are never written to the log; an
 * unmatched path is logged through redactPath. Each request is an OpenTelemetry span, and its
 * log lines carry that span's trace id (src/kernel/logger.ts). Every answer whose headers are not yet
 * sent carries `Server-Timing` (authentication, admission wait and the whole request, in ms).
 */
export function requestMiddleware(log: Logger) {
  return async (ctx: Context, next: Next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = /^[\w-]{1,64}$/.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', requestId);
    ctx.state.requestId = requestId;
    ctx.state.startedAt = Date.now();
    ctx.state.log = log.child({ requestId });
    const started = performance.now();
    // The request span: a caller's `traceparent` continues its trace; the span is named after the
    // matched route template once routing is done (never the raw path). Everything the handler
    // does (a workflow start, its activities) runs inside it.
    const parent = propagation.extract(context.active(), ctx.headers);
    const span = tracer.startSpan(
      ctx.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method } },
      parent,
    );
    await context.with(trace.setSpan(parent, span), async () => {
      try {
        await next();
      } finally {
        const route = (ctx as Context & { _matchedRoute?: string | RegExp })._matchedRoute;
        const template = typeof route === 'string' ? route : null;
        metrics.httpRequests.observe(
          { method: ctx.method, route: template ?? 'unmatched', status: String(ctx.status) },
          (performance.now() - started) / 1000,
        );
        if (template) span.updateName(`${ctx.method} ${template}`).setAttribute('http.route', template);
        span.setAttribute('http.response.status_code', ctx.status);
        // Where the API's time went, for any client to read (`Server-Timing`; a stream's headers are sent
        // before its end, so it carries none).
        if (!ctx.headerSent)
          ctx.set(
            'Server-Timing',
            serverTiming(ctx.state.timing as RequestTiming | undefined, performance.now() - started),
          );
        if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        (ctx.state.log as Logger).info(
          {
            method: ctx.method,
            route: template,
            path: template ?? redactPath(ctx.path),
            status: ctx.status,
            ms: Math.round(performance.now() - started),
          },
          'request',
        );
        span.end();
      }
    });
  };
}
