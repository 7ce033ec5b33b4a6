/**
 * Expected failures of the snake service. Rules and routes throw these; the one error middleware in
 * app.ts maps them (and ZodErrors) to `{ message, code }` with the status below.
 */
export type SnakeErrorCode =
  | 'VALIDATION_ERROR'
  | 'GAME_ENDED'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'INTERNAL_SERVER_ERROR';

/** A failure whose message is safe to show to the browser. */
export class SnakeError extends Error {
  constructor(
    readonly code: SnakeErrorCode,
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'SnakeError';
  }
}

/** 400: the body or the state it carries breaks a rule; the message says which. */
export const validationError = (msg: string) => new SnakeError('VALIDATION_ERROR', 400, msg);
/** 409: a move or edit was asked of a finished game; the client should reset. */
export const gameEnded = (reason: string) =>
  new SnakeError('GAME_ENDED', 409, `the game has ended (${reason}); reset to play again`);
/** 404 for unknown paths, so the browser gets JSON rather than Koa's plain text. */
export const notFound = (what: string) => new SnakeError('NOT_FOUND', 404, `${what} not found`);
/** 500 whose message never echoes the underlying error. */
export const internalError = () => new SnakeError('INTERNAL_SERVER_ERROR', 500, 'internal server error');
