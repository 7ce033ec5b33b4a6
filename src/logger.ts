import { pino, type Logger } from 'pino';

/** Structured JSON logs; request handlers use a child logger carrying the request id. */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { service: 'cortex', ...bindings },
    redact: { paths: ['req.headers.authorization', 'authorization', 'apiKey', 'token'], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
export type { Logger };
