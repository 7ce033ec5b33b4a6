/**
 * Vitest globalSetup of the `cluster` project (vitest.config.ts), after global-setup.ts: the same
 * FerretDB and Temporal, and a local 3-master Redis Cluster (scripts/embedded.ts) in place of the
 * single redis-server. Its nodes go to CORTEX_TEST_REDIS_CLUSTER_NODES, which test/support/app.ts
 * turns into REDIS_CLUSTER_NODES only in the workers of this project (CORTEX_TEST_REDIS=cluster),
 * so the other projects keep running on one server. With REDIS_CLUSTER_NODES set, that cluster is
 * used and nothing is started.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startRedisCluster } from '../../scripts/embedded.js';

const log = (line: string): void => console.log(`[cluster-setup] ${line}`);

export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.REDIS_CLUSTER_NODES) {
    log(`using REDIS_CLUSTER_NODES=${process.env.REDIS_CLUSTER_NODES}`);
    process.env.CORTEX_TEST_REDIS_CLUSTER_NODES = process.env.REDIS_CLUSTER_NODES;
    return async () => undefined;
  }
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-cluster-'));
  try {
    const cluster = await startRedisCluster({ dataDir, log });
    process.env.CORTEX_TEST_REDIS_CLUSTER_NODES = cluster.nodes;
    return async () => {
      await cluster.stop();
      await rm(dataDir, { recursive: true, force: true });
    };
  } catch (err) {
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
}
