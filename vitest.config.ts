import { defineConfig } from 'vitest/config';

/**
 * The Redis-bound tests (streams, SSE, rate limits, the first turn's lease, the resource feed and
 * its followers, two API and two worker processes on one Redis) run a second time on a local
 * 3-master Redis Cluster (project `cluster`): the same files, CORTEX_TEST_REDIS=cluster.
 */
const onBothTopologies = [
  'test/api/redis-topology.test.ts',
  'test/api/eventsource.test.ts',
  'test/api/resource-events.test.ts',
  'test/api/platform.test.ts',
  'test/api/search-feed.test.ts',
  'test/api/mcp.test.ts',
  'test/api/replicas.test.ts',
  'test/workflows/first-turn.test.ts',
];

/** Unit tests need no services; integration tests share one set of embedded services per run (test/support/global-setup.ts). */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'snake/**/*.unit.test.ts'],
          environment: 'node',
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: [
            'test/api/**/*.test.ts',
            'test/repos/**/*.test.ts',
            'test/workflows/**/*.test.ts',
            'test/scripts/**/*.test.ts',
            'test/snake/**/*.test.ts',
            'test/pages/**/*.test.ts',
            'test/security/**/*.test.ts',
          ],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: true,
          maxWorkers: 2,
          // Unit tests run first; projects with different maxWorkers need distinct group orders.
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'cluster',
          // test/cluster/: files that run on a Redis Cluster of their own only (they take its slots away or move them).
          include: [...onBothTopologies, 'test/cluster/**/*.test.ts'],
          environment: 'node',
          env: { CORTEX_TEST_REDIS: 'cluster' },
          // The same services as `integration` (reused when that project started them), plus the cluster.
          globalSetup: ['test/support/global-setup.ts', 'test/support/redis-cluster-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: true,
          maxWorkers: 2,
          // Beside the integration files, in the same pool.
          sequence: { groupOrder: 1 },
        },
      },
      {
        // The search tests again with the index in Weaviate (docs/search.md): global setup starts one.
        test: {
          name: 'search-weaviate',
          include: ['test/api/search.test.ts', 'test/api/search-feed.test.ts'],
          environment: 'node',
          env: { CORTEX_SEARCH: 'weaviate' },
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: true,
          maxWorkers: 2,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
