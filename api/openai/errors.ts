import type { Context, Next } from 'koa';
import { ZodError } from 'zod';
import { AppError, type ErrorCode } from '../../src/kernel/errors.js';
import type { Logger } from '../../src/kernel/logger.js';
import type { OpenAIErrorBody } from '../../src/runs/index.js';
import { firstIssue, toAppError } from '../middleware/errors.js';
import { redactPath } from '../middleware/request.js';

/** Where the OpenAI-compatible routes live; every response under it uses OpenAI's error shape. */
export const OPENAI_PREFIX = '/v1/openai';

/** The OpenAI `type` and `code` of each platform error code (statuses stay the platform's). */
export const OPENAI_ERRORS: Record<ErrorCode, { type: string; code: string | null }> = {
  VALIDATION_ERROR: { type: 'invalid_request_error', code: null },
  AUTH_REQUIRED: { type: 'invalid_request_error', code: 'invalid_api_key' },
  BUDGET_EXCEEDED: { type: 'insufficient_quota', code: 'insufficient_quota' },
  FORBIDDEN: { type: 'invalid_request_error', code: 'permission_denied' },
  NOT_FOUND: { type: 'invalid_request_error', code: 'not_found' },
  METHOD_NOT_ALLOWED: { type: 'invalid_request_error', code: 'method_not_allowed' },
  CONFLICT: { type: 'invalid_request_error', code: 'conflict' },
  TRACE_BUSY: { type: 'invalid_request_error', code: 'trace_busy' },
  GONE: { type: 'invalid_request_error', code: 'gone' },
  PAYLOAD_TOO_LARGE: { type: 'invalid_request_error', code: 'payload_too_large' },
  UNSUPPORTED_MEDIA_TYPE: { type: 'invalid_request_error', code: 'unsupported_media_type' },
  IDEMPOTENCY_KEY_REUSED: { type: 'invalid_request_error', code: 'idempotency_key_reused' },
  RATE_LIMIT: { type: 'requests', code: 'rate_limit_exceeded' },
  INTERNAL_SERVER_ERROR: { type: 'server_error', code: null },
  SERVICE_UNAVAILABLE: { type: 'server_error', code: 'service_unavailable' },
};

/** A platform error with OpenAI's own `code` and `param` (an unknown model is `model_not_found`). */
export class OpenAIError extends AppError {
  constructor(
    code: ErrorCode,
    status: number,
    message: string,
    readonly openai: { code?: string | null; param?: string | null; type?: string } = {},
  ) {
    super(code, status, message);
  }
}

export const modelNotFound = (model: string, why = '') =>
  new OpenAIError('NOT_FOUND', 404, `The model '${model}' does not exist or you do not have access to it${why}`, {
    code: 'model_not_found',
    param: 'model',
  });

export const invalidRequest = (message: string, param: string | null = null) =>
  new OpenAIError('VALIDATION_ERROR', 400, message, { param });

/** The OpenAI error body and status of anything thrown (the platform's mapping decides status and message). */
export function openAIErrorOf(err: unknown): {
  status: number;
  headers: Record<string, string>;
  body: OpenAIErrorBody;
} {
  const app = toAppError(err);
  const base = OPENAI_ERRORS[app.code];
  const own = err instanceof OpenAIError ? err.openai : {};
  const param =
    own.param !== undefined
      ? own.param
      : err instanceof ZodError && err.issues[0]?.path.length
        ? err.issues[0].path.map(String).join('.')
        : null;
  const message = err instanceof ZodError ? firstIssue(err) : app.message;
  return {
    status: app.status,
    headers: app.headers,
    body: {
      error: { message, type: own.type ?? base.type, param, code: own.code !== undefined ? own.code : base.code },
    },
  };
}

const underPrefix = (path: string) => path === OPENAI_PREFIX || path.startsWith(`${OPENAI_PREFIX}/`);

/**
 * The error mapping of the OpenAI-compatible routes: mounted inside the platform's error
 * middleware, it answers every failure under OPENAI_PREFIX (authentication, validation, a
 * malformed body, an unknown path) as `{ error: { message, type, param, code } }`, which OpenAI's
 * SDKs turn into their typed errors. Every other path is left to the platform's `{ message, code }`.
 */
export function openAIErrorMiddleware() {
  return async (ctx: Context, next: Next) => {
    if (!underPrefix(ctx.path)) return next();
    try {
      await next();
      if (ctx.body == null && (ctx.status === 404 || ctx.status === 405 || ctx.status === 501)) {
        const notFound = ctx.status === 404;
        const message = notFound
          ? `Route ${ctx.method} ${redactPath(ctx.path)} not found`
          : `Method ${ctx.method} is not allowed on this path; allowed: ${ctx.response.get('Allow') || 'none'}`;
        ctx.status = notFound ? 404 : 405;
        ctx.body = {
          error: {
            message,
            type: 'invalid_request_error',
            param: null,
            code: notFound ? 'unknown_url' : 'method_not_allowed',
          },
        };
      }
    } catch (err) {
      const { status, headers, body } = openAIErrorOf(err);
      const log = ctx.state.log as Logger | undefined;
      if (status >= 500) log?.error({ err }, 'request failed');
      else log?.debug({ code: body.error.code, message: body.error.message }, 'request rejected');
      ctx.status = status;
      for (const [k, v] of Object.entries(headers)) ctx.set(k, v);
      ctx.body = body;
    }
  };
}
