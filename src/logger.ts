import { pino, type Logger } from 'pino';

/** Structured JSON logs; request handlers use a child logger carrying the request id. */
export function createLogger(level: string, bindings: Record<string, unknown> = {}, destination?: { write(line: string): void }): Logger {
  return pino({
    level,
    base: { service: 'cortex', ...bindings },
    // Secrets never reach a log line: credentials by any of the names they travel under (docs/roles.md).
    redact: {
      paths: [
        'req.headers.authorization', 'headers.authorization', 'authorization', 'apiKey', 'api_key', 'key', 'token', 't', 'share_token', 'secret', 'password',
        '*.authorization', '*.apiKey', '*.api_key', '*.token', '*.share_token', '*.secret', '*.password', 'query.t', 'body.share_token',
      ],
      censor: '[redacted]',
    },
    timestamp: pino.stdTimeFunctions.isoTime,
  }, destination);
}
export type { Logger };
