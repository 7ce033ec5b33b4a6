import { pino, type Logger } from 'pino';
import { isSpanContextValid, trace } from '@opentelemetry/api';

/**
 * The active span's ids for a log line (`trace_id`, `span_id`, as the OpenTelemetry log data
 * model names them; not a conversation's `traceId`). Empty outside a span or without tracing.
 */
function traceFields(): { trace_id?: string; span_id?: string } {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && isSpanContextValid(ctx) ? { trace_id: ctx.traceId, span_id: ctx.spanId } : {};
}

/**
 * Structured JSON logs; request handlers use a child logger carrying the request id. A line
 * written inside an OpenTelemetry span (a request, an activity) carries `trace_id` and `span_id`,
 * so a log search and a trace view meet (docs/observability.md).
 */
export function createLogger(
  level: string,
  bindings: Record<string, unknown> = {},
  destination?: { write(line: string): void },
): Logger {
  return pino(
    {
      level,
      base: { service: 'cortex', ...bindings },
      // Secrets never reach a log line: credentials by any of the names they travel under (docs/roles.md).
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'authorization',
          'apiKey',
          'api_key',
          'key',
          'token',
          't',
          'share_token',
          'secret',
          'password',
          '*.authorization',
          '*.apiKey',
          '*.api_key',
          '*.token',
          '*.share_token',
          '*.secret',
          '*.password',
          'query.t',
          'body.share_token',
        ],
        censor: '[redacted]',
      },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: traceFields,
    },
    destination,
  );
}
export type { Logger };
