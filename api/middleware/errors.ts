import type { Context, Next } from 'koa';
import { ZodError } from 'zod';
import { WorkflowNotFoundError } from '@temporalio/client';
import { storeFailure } from '../../src/kernel/store/errors.js';
import {
  AppError,
  conflict,
  notFound,
  payloadTooLarge,
  unsupportedMediaType,
  validationError,
} from '../../src/kernel/errors.js';
import { redactPath } from './request.js';
import type { Logger } from '../../src/kernel/logger.js';

/** "field: message" from the first zod issue, so a 400 says exactly what to fix. */
export function firstIssue(err: ZodError): string {
  const i = err.issues[0];
  if (!i) return 'Invalid request';
  const path = i.path.length ? `${i.path.map(String).join('.')}: ` : '';
  return `${path}${i.message}`;
}

/** Connectivity failures of MongoDB, Redis or Temporal (by class name or message, without importing each client's internals). */
function isUnreachable(err: unknown): boolean {
  const e = err as { name?: string; message?: string; code?: string | number };
  if (storeFailure(err) === 'unreachable') return true;
  // Temporal calls cut by the request's deadline or abort (gRPC CANCELLED, DEADLINE_EXCEEDED) and Redis command timeouts.
  if (
    e?.name === 'AbortError' ||
    /DEADLINE_EXCEEDED|CANCELLED|Command timed out|operation was aborted/i.test(String(e?.message ?? ''))
  )
    return true;
  if (e?.name === 'MaxRetriesPerRequestError') return true;
  if (
    typeof e?.code === 'string' &&
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH'].includes(e.code)
  )
    return true;
  // A Redis Cluster that lost a master (CLUSTERDOWN), is moving a slot (TRYAGAIN) or cannot be reached at all.
  return /Connection is closed|Stream isn't writeable|UNAVAILABLE|Connection refused|connect ECONNREFUSED|CLUSTERDOWN|TRYAGAIN|Failed to refresh slots cache|None of startup nodes is available/i.test(
    String(e?.message ?? ''),
  );
}

/** The one place where any thrown value becomes an AppError (error codes: ERROR_CODES in src/kernel/errors.ts). */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ZodError) return validationError(firstIssue(err));
  if (err instanceof WorkflowNotFoundError) return notFound('Job');
  // FerretDB 1.x reports a unique violation caused by an update as code 1 "UNIQUE constraint failed".
  if (storeFailure(err) === 'duplicate') return conflict('Already exists');
  // A store, Redis or Temporal that cannot be reached is a retryable 503, never a 500.
  if (isUnreachable(err))
    return new AppError('SERVICE_UNAVAILABLE', 503, 'A platform component is unreachable; retry shortly', {
      'Retry-After': '2',
    });
  // Koa/bodyparser client errors (malformed JSON, payload too large, bad encoding) carry a 4xx status.
  const e = err as { status?: number; expose?: boolean; message?: string };
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    if (e.status === 413) return payloadTooLarge();
    if (e.status === 415) return unsupportedMediaType('application/json');
    return validationError(e.expose && e.message ? e.message : 'Malformed request');
  }
  return new AppError('INTERNAL_SERVER_ERROR', 500, 'Internal server error');
}

/** Maps errors to `{ message, code }`; 5xx bodies never carry internal detail. */
export function errorMiddleware() {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
      // Responses no handler wrote (the router's 404, 405 and 501) get the error body too.
      if (ctx.status === 404 && ctx.body == null) {
        ctx.status = 404;
        ctx.body = { message: `Route ${ctx.method} ${redactPath(ctx.path)} not found`, code: 'NOT_FOUND' };
      } else if ((ctx.status === 405 || ctx.status === 501) && ctx.body == null) {
        const allowed = ctx.response.get('Allow') || 'none';
        ctx.status = 405;
        ctx.body = {
          message: `Method ${ctx.method} is not allowed on this path; allowed: ${allowed}`,
          code: 'METHOD_NOT_ALLOWED',
        };
      }
    } catch (err) {
      const app = toAppError(err);
      const log = ctx.state.log as Logger | undefined;
      // A 5xx the platform answers on purpose (at capacity, a breaker open, past the deadline) is a
      // warning without a stack: a burst refused by design writes a line per request, not a trace
      // each (metrics count them: cortex_requests_shed_total). Anything else keeps its stack.
      if (app.status >= 500 && err !== app) log?.error({ err }, 'request failed');
      else if (app.status >= 500) log?.warn({ code: app.code, message: app.message }, 'request refused');
      else log?.debug({ code: app.code, message: app.message }, 'request rejected');
      ctx.status = app.status;
      for (const [k, v] of Object.entries(app.headers)) ctx.set(k, v);
      ctx.body = { message: app.message, code: app.code };
    }
  };
}
