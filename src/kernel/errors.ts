/**
 * One error hierarchy for the whole platform. Services throw these; the API maps them to
 * `{ message, code }` in api/middleware/errors.ts and activities turn 4xx ones into
 * non-retryable failures.
 */
export const ERROR_CODES = {
  VALIDATION_ERROR: {
    status: 400,
    meaning: 'A path parameter, query, header or body failed validation; the message names the field',
  },
  AUTH_REQUIRED: { status: 401, meaning: 'No credential, or an invalid or revoked one' },
  BUDGET_EXCEEDED: {
    status: 402,
    meaning:
      "A budget is spent: a share link's requests or tokens, or a budget set on the workspace, a receptor or a neuron (docs/usage.md)",
  },
  FORBIDDEN: { status: 403, meaning: 'The credential lacks the role the route needs (docs/roles.md)' },
  NOT_FOUND: {
    status: 404,
    meaning: "No such resource in the caller's workspace (another workspace's resource reads the same)",
  },
  METHOD_NOT_ALLOWED: { status: 405, meaning: 'The path exists with other methods (see the Allow header)' },
  CONFLICT: { status: 409, meaning: 'A name or slug is taken, or a version or state precondition failed' },
  TRACE_BUSY: {
    status: 409,
    meaning:
      "An invoke with multitask_strategy reject on a trace whose run has not ended; the message names that run's job",
  },
  GONE: { status: 410, meaning: 'A retired route or an expired link' },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: 'The request body is over the limit' },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    meaning: 'A body that is not application/json (or multipart where a route takes files)',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    meaning:
      'An Idempotency-Key was sent again with a different request (method, path or body) than the one it first came with',
  },
  RATE_LIMIT: { status: 429, meaning: 'Too many requests; wait for Retry-After seconds' },
  INTERNAL_SERVER_ERROR: { status: 500, meaning: 'An unexpected failure; the message never repeats its cause' },
  SERVICE_UNAVAILABLE: {
    status: 503,
    meaning: 'A platform component is unreachable or a run could not start; retry after Retry-After',
  },
} as const satisfies Record<string, { status: number; meaning: string }>;

/** Every `code` an error body may carry; the OpenAPI document lists them from ERROR_CODES. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** An expected failure with an HTTP status; its message is safe to show to the caller. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const authRequired = (msg = 'Authentication required') => new AppError('AUTH_REQUIRED', 401, msg);
export const forbidden = (msg = 'Forbidden') => new AppError('FORBIDDEN', 403, msg);
export const notFound = (what = 'Resource') => new AppError('NOT_FOUND', 404, `${what} not found`);
export const validationError = (msg: string) => new AppError('VALIDATION_ERROR', 400, msg);
export const conflict = (msg = 'Already exists') => new AppError('CONFLICT', 409, msg);
/** 409 TRACE_BUSY: the trace's run has not ended and the invoke asked to be refused then (double-texting). */
export const traceBusy = (traceId: string, jobId: string) =>
  new AppError('TRACE_BUSY', 409, `Trace ${traceId} has a run that has not ended: job ${jobId}`);
export const gone = (msg: string) => new AppError('GONE', 410, msg);
export const payloadTooLarge = (msg = 'Request body too large') => new AppError('PAYLOAD_TOO_LARGE', 413, msg);
export const unsupportedMediaType = (accepted: string) =>
  new AppError('UNSUPPORTED_MEDIA_TYPE', 415, `Unsupported content type; send ${accepted}`);
export const rateLimited = (retryAfterS: number) =>
  new AppError('RATE_LIMIT', 429, 'Rate limit exceeded', {
    'Retry-After': String(Math.max(1, Math.ceil(retryAfterS))),
  });

/**
 * 429 with Retry-After: the workspace holds its share of a shared capacity (MCP sessions, SSE
 * streams, active runs; docs/operations.md, "Fair share"); nothing of the request was stored.
 */
export const workspaceShareExceeded = (msg: string, retryAfterS = 1) =>
  new AppError('RATE_LIMIT', 429, msg, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterS))) });

/** 503 with Retry-After: the platform cannot take the request now; nothing of it was stored. */
export const unavailable = (msg: string, retryAfterS = 1) =>
  new AppError('SERVICE_UNAVAILABLE', 503, msg, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterS))) });
