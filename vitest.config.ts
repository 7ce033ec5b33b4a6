import { defineConfig } from 'vitest/config';

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
        // The search tests again with the index in Weaviate (docs/search.md): global setup starts one.
        test: {
          name: 'search-weaviate',
          include: ['test/api/search.test.ts'],
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
