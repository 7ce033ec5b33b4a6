import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config.js';

/** The API-side Temporal client: starts, signals, queries and cancels workflows by name. */
export async function connectTemporal(config: Config): Promise<{ connection: Connection; client: Client }> {
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS, connectTimeout: '10s' });
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  return { connection, client };
}
