import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { Config } from '../config.js';
import { activeTelemetry } from '../telemetry.js';

type Method = (input: unknown, next: (input: unknown) => unknown) => unknown;

/**
 * The OpenTelemetry client interceptor, in effect only while tracing is on (src/telemetry.ts).
 * Without it a start carries no trace header, and the workflow decides from its own history to
 * make no spans (workflows/interceptors.ts): spans nobody exports cost each workflow task about
 * 5 ms of the first token's time (`npm run bench`, docs/decisions.md).
 */
function tracingClientInterceptor(): WorkflowClientInterceptor {
  const inner = new OpenTelemetryWorkflowClientInterceptor();
  const out: Record<string, Method> = {};
  for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(inner))) {
    const method = (inner as unknown as Record<string, unknown>)[name];
    if (name === 'constructor' || typeof method !== 'function') continue;
    out[name] = (input, next) => (activeTelemetry() ? (method as Method).call(inner, input, next) : next(input));
  }
  return out as WorkflowClientInterceptor;
}

/**
 * The API-side Temporal client: starts, signals, queries and cancels workflows by name. While
 * tracing is on, its OpenTelemetry interceptor puts the caller's span (the HTTP request) into the
 * workflow's headers, so the workflow and its activities join the request's trace (docs/observability.md).
 */
export async function connectTemporal(config: Config): Promise<{ connection: Connection; client: Client }> {
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS, connectTimeout: '10s' });
  const client = new Client({
    connection, namespace: config.TEMPORAL_NAMESPACE,
    interceptors: { workflow: [tracingClientInterceptor()] },
  });
  return { connection, client };
}
