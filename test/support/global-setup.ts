/**
 * Vitest globalSetup of the integration project (vitest.config.ts).
 *
 * Why: integration tests run against real FerretDB, Redis and Temporal (never mocks), and
 * starting those once per run (not per file) keeps the suite fast. Each test isolates itself
 * cheaply (fresh workspace, Redis prefix, task queue), so one set of servers serves all files.
 *
 * - A service whose URL variable (MONGODB_URI, REDIS_URL, TEMPORAL_ADDRESS) is already set is
 *   used as is; that is how the same tests run on MongoDB or a Temporal cluster.
 * - Missing ones are started by scripts/embedded.ts on free ports, with data in a fresh temp
 *   folder (never the `npm run up` data in .data/), Temporal headless, and removed afterwards.
 * - The workflow code is bundled once here, so test workers start in milliseconds instead of
 *   each running webpack.
 * The values are put in process.env (inherited by the test workers, which read config from
 * the environment) and also provided to tests through `inject()`.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { startEmbedded } from '../../scripts/embedded.js';
import { workflowBundleOptions } from '../../worker/index.js';

declare module 'vitest' {
  /** What global setup hands to tests via `inject(key)`. */
  export interface ProvidedContext {
    mongoUri: string;
    redisUrl: string;
    temporalAddress: string;
    /** Absolute path of the prebuilt workflow bundle; '' when workflows/index.ts is missing. */
    workflowBundlePath: string;
    /** Weaviate's REST and gRPC addresses for the `search-weaviate` project ('' when not started). */
    weaviateUrl: string;
    weaviateGrpcAddress: string;
  }
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const log = (line: string): void => console.log(`[global-setup] ${line}`);

/**
 * Bundles workflows/index.ts once (the worker's `workflowBundle: { codePath }` then skips
 * webpack). Returns '' when the workflows entry does not exist yet, so API-only tests still run.
 */
async function bundleWorkflows(): Promise<string> {
  // A second project's setup in the same run (vitest.config.ts, `cluster`) reuses the first one's bundle.
  const earlier = process.env.CORTEX_TEST_WORKFLOW_BUNDLE;
  if (earlier && existsSync(earlier)) return earlier;
  const workflowsPath = path.join(ROOT, 'workflows/index.ts');
  if (!existsSync(workflowsPath)) {
    log('workflows/index.ts not found: no workflow bundle');
    return '';
  }
  const started = Date.now();
  const bundle = await bundleWorkflowCode({
    ...workflowBundleOptions,
    workflowsPath,
    logger: new DefaultLogger('WARN'),
  });
  const outDir = path.join(ROOT, 'test-output');
  await mkdir(outDir, { recursive: true });
  const bundlePath = path.join(outDir, 'workflow-bundle.js');
  await writeFile(bundlePath, bundle.code);
  log(
    `workflow bundle ${path.relative(ROOT, bundlePath)} (${Math.round(bundle.code.length / 1024)} KiB, ${Date.now() - started} ms)`,
  );
  return bundlePath;
}

/** Starts what is missing, provides the addresses, and returns the teardown. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The search-weaviate project (vitest.config.ts) runs the search tests again with the index in
  // Weaviate: it alone starts one. Its address reaches the tests through inject(), never
  // process.env, so the other project's files keep the embedded index.
  const weaviate = (project.config.env?.CORTEX_SEARCH ?? process.env.CORTEX_SEARCH) === 'weaviate';
  const need = {
    mongo: !process.env.MONGODB_URI,
    // A Redis Cluster named by REDIS_CLUSTER_NODES serves every project instead.
    redis: !process.env.REDIS_URL && !process.env.REDIS_CLUSTER_NODES,
    temporal: !process.env.TEMPORAL_ADDRESS,
    weaviate: weaviate && !process.env.WEAVIATE_URL,
  };
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-test-'));
  for (const [name, url] of [
    ['MONGODB_URI', process.env.MONGODB_URI],
    ['REDIS_URL', process.env.REDIS_URL],
    ['TEMPORAL_ADDRESS', process.env.TEMPORAL_ADDRESS],
  ]) {
    if (url) log(`using ${name}=${url}`);
  }

  // Services and the bundle are independent: do both at once.
  const [servicesResult, bundleResult] = await Promise.allSettled([
    startEmbedded({ dataDir, need, temporalUi: false, log }),
    bundleWorkflows(),
  ]);
  if (servicesResult.status === 'rejected' || bundleResult.status === 'rejected') {
    if (servicesResult.status === 'fulfilled') await servicesResult.value.stop();
    await rm(dataDir, { recursive: true, force: true });
    throw servicesResult.status === 'rejected' ? servicesResult.reason : (bundleResult as PromiseRejectedResult).reason;
  }
  const services = servicesResult.value;
  const workflowBundlePath = bundleResult.value;

  const mongoUri = process.env.MONGODB_URI ?? services.mongoUri!;
  const redisUrl = process.env.REDIS_URL ?? services.redisUrl ?? '';
  const temporalAddress = process.env.TEMPORAL_ADDRESS ?? services.temporalAddress!;
  Object.assign(process.env, { MONGODB_URI: mongoUri, TEMPORAL_ADDRESS: temporalAddress });
  if (redisUrl) process.env.REDIS_URL = redisUrl;
  if (workflowBundlePath)
    Object.assign(process.env, {
      CORTEX_WORKFLOW_BUNDLE: workflowBundlePath,
      CORTEX_TEST_WORKFLOW_BUNDLE: workflowBundlePath,
    });

  project.provide('mongoUri', mongoUri);
  project.provide('redisUrl', redisUrl);
  project.provide('temporalAddress', temporalAddress);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('weaviateUrl', process.env.WEAVIATE_URL ?? services.weaviateUrl ?? '');
  project.provide('weaviateGrpcAddress', process.env.WEAVIATE_GRPC_ADDRESS ?? services.weaviateGrpcAddress ?? '');

  return async () => {
    await services.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
