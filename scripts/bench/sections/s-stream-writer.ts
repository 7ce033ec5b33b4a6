/**
 * (s) Stream writer (scripts/bench/measures/streams.ts): entries per second appended through src/kernel/streams.ts by 50
 * concurrent writers (job streams' fenced script, and the resource feed's append), on one Redis and on
 * a local 3-master Redis Cluster (REDIS_CLUSTER_NODES, or started for it), side by side.
 */
import { measureStreamWriter, streamWriterSummary } from '../measures/streams.js';
import type { BenchSection } from '../section.js';
import { say } from '../support.js';

export const streamWriter: BenchSection = {
  letter: 's',
  title: 'Stream writer: entries per second by 50 writers on one Redis and on a Redis Cluster',
  // Redis alone: no build, no platform worker when only (m) and (s) are selected.
  noWorker: true,
  run: async ({ app }) => streamWriterSummary(await measureStreamWriter(app.config.REDIS_URL, say)),
};
