/**
 * One error hierarchy for the whole platform. Services throw these; the API maps them to
 * `{ message, code }` in api/middleware/errors.ts and activities turn 4xx ones into
 * non-retryable failures.
 */
export type ErrorCode =
  | 'AUTH_REQUIRED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'VALIDATION_ERROR'
  | 'CONFLICT'
  | 'GONE'
  | 'RATE_LIMIT'
  | 'INTERNAL_SERVER_ERROR'
  | 'SERVICE_UNAVAILABLE'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'BUDGET_EXCEEDED';

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
export const gone = (msg: string) => new AppError('GONE', 410, msg);
export const methodNotAllowed = (allowed: string[]) => new AppError('METHOD_NOT_ALLOWED', 405, `Method not allowed; this path accepts ${allowed.join(', ')}`, { Allow: allowed.join(', ') });
export const payloadTooLarge = (msg = 'Request body too large') => new AppError('PAYLOAD_TOO_LARGE', 413, msg);
export const unsupportedMediaType = (accepted: string) => new AppError('UNSUPPORTED_MEDIA_TYPE', 415, `Unsupported content type; send ${accepted}`);
export const rateLimited = (retryAfterS: number) =>
  new AppError('RATE_LIMIT', 429, 'Rate limit exceeded', { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterS))) });
