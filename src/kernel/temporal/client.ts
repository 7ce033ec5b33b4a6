import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
import type { Config } from '../config.js';
import { activeTelemetry } from '../telemetry.js';
import { gated } from './gated.js';

/**
 * The OpenTelemetry client interceptor, in effect only while tracing is on (src/kernel/telemetry.ts).
 * Without it a start carries no trace header, and the workflow decides from its own history to
 * make no spans (workflows/interceptors.ts): spans nobody exports cost each workflow task about
 * 5 ms of the first token's time (`npm run bench`, docs/decisions.md). A process that connects
 * with tracing off never loads the interceptor package (tracing starts before the connection).
 */
async function tracingClientInterceptors(): Promise<WorkflowClientInterceptor[]> {
  if (!activeTelemetry()) return [];
  const { OpenTelemetryWorkflowClientInterceptor } = await import('@temporalio/interceptors-opentelemetry');
  return [
    gated<WorkflowClientInterceptor>(
      new OpenTelemetryWorkflowClientInterceptor(),
      () => activeTelemetry() !== undefined,
    ),
  ];
}

/**
 * The API-side Temporal client: starts, signals, queries and cancels workflows by name. While
 * tracing is on, its OpenTelemetry interceptor puts the caller's span (the HTTP request) into the
 * workflow's headers, so the workflow and its activities join the request's trace (docs/observability.md).
 */
export async function connectTemporal(config: Config): Promise<{ connection: Connection; client: Client }> {
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS, connectTimeout: '10s' });
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    interceptors: { workflow: await tracingClientInterceptors() },
  });
  return { connection, client };
}
