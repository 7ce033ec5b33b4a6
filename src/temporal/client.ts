import { Client, Connection } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { Config } from '../config.js';

/**
 * The API-side Temporal client: starts, signals, queries and cancels workflows by name. Its
 * OpenTelemetry interceptor puts the caller's span (the HTTP request) into the workflow's headers,
 * so the workflow and its activities join the request's trace (docs/observability.md).
 */
export async function connectTemporal(config: Config): Promise<{ connection: Connection; client: Client }> {
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS, connectTimeout: '10s' });
  const client = new Client({
    connection, namespace: config.TEMPORAL_NAMESPACE,
    interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
  });
  return { connection, client };
}
