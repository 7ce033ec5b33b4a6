import type { Resource } from '@opentelemetry/resources';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Config } from './config.js';
import { VERSION } from './config.js';

/**
 * OpenTelemetry tracing for one process (docs/observability.md). The API opens a span per request
 * (api/middleware/request.ts); the Temporal OpenTelemetry interceptors carry its context through
 * the workflow start into the workflow and each activity (worker/index.ts), so one trace runs from
 * the HTTP request to the last activity. Spans leave over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT;
 * without it nothing is recorded or sent (the API's spans are non-recording, context still flows).
 * The SDK and its exporters are imported only when tracing starts: a process without an endpoint
 * never holds them (docs/decisions.md, "Compiled services and memory").
 */
export interface Telemetry {
  /** Where spans go; the worker hands it to the workflow span sink (spans made inside the sandbox). */
  exporter: SpanExporter;
  resource: Resource;
  /** Sends what is buffered now (tests; shutdown). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

let current: Telemetry | undefined;

/**
 * Starts tracing for this process when OTEL_EXPORTER_OTLP_ENDPOINT is set (once; later calls
 * return the running one). `component` names the service (`cortex-api`, `cortex-worker`).
 */
export async function startTelemetry(
  config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_PROTOCOL'>,
  component: string,
): Promise<Telemetry | undefined> {
  if (current || !config.OTEL_EXPORTER_OTLP_ENDPOINT) return current;
  const [
    { OTLPTraceExporter: OtlpJsonExporter },
    { OTLPTraceExporter: OtlpProtoExporter },
    { Resource },
    { BatchSpanProcessor },
    { NodeSDK },
  ] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/sdk-node'),
  ]);
  if (current) return current; // started meanwhile by another caller
  // The generic endpoint names the collector; the traces path is appended, as the OTLP spec says.
  const url = `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
  const exporter =
    config.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json' ? new OtlpJsonExporter({ url }) : new OtlpProtoExporter({ url });
  const resource = new Resource({ 'service.name': `cortex-${component}`, 'service.version': VERSION });
  const processor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000 });
  // No automatic instrumentations: the request span is ours (route template as its name), and the
  // Temporal interceptors make the rest; module-patching hooks do not apply to ES modules anyway.
  const sdk = new NodeSDK({ resource, spanProcessors: [processor], instrumentations: [] });
  sdk.start();
  current = {
    exporter,
    resource,
    flush: () => processor.forceFlush(),
    shutdown: async () => {
      current = undefined;
      await sdk.shutdown();
    },
  };
  return current;
}

/** The running telemetry of this process, if any (the worker reads it to export workflow spans). */
export const activeTelemetry = (): Telemetry | undefined => current;
