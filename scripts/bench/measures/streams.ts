/**
 * (s) The stream writer on one Redis and on a Redis Cluster (scripts/bench.ts): entries appended
 * per second through src/kernel/streams.ts, the fenced script every job stream entry goes through
 * (STREAM_WRITERS concurrent writers, each on a job stream of its own: one turn of
 * STREAM_ENTRIES tokens, then its terminal entry), and the resource feed's append (one workspace
 * per writer, so the partitions spread). The same client code on both topologies: one ioredis
 * client (one connection; on the cluster one per master), as an API or worker process has.
 *
 * The cluster is local (three redis-servers on this machine, scripts/embedded.ts), so it shows what
 * the keys' layout costs and that nothing is serialised through one key, not what three machines
 * would add: here the three masters share the machine's cores with the bench itself.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRedis, deleteKeys, redisTarget, scanKeys, type Redis } from '../../../src/kernel/redis.js';
import { createStreams } from '../../../src/kernel/streams.js';
import { startRedisCluster } from '../../embedded.js';

/** Concurrent writers (streaming runs writing at once). */
const STREAM_WRITERS = Number(process.env.BENCH_STREAM_WRITERS ?? 50);
/** Token entries each writer appends before its terminal entry. */
const STREAM_ENTRIES = Number(process.env.BENCH_STREAM_ENTRIES ?? 400);
/** Untimed entries per writer first (JIT, connections, script load). */
const WARMUP_ENTRIES = 40;
/** Rounds per topology; the median is reported. */
const ROUNDS = 3;

/** One topology's figures. */
export interface StreamWriterFigures {
  topology: string;
  /** Stream entries appended per second (median of the rounds) and the p50/p99 latency of one append (ms). */
  streamPerS: number;
  appendP50: number;
  appendP99: number;
  /** Resource-feed entries appended per second (median of the rounds). */
  feedPerS: number;
}

export interface StreamWriterResult {
  writers: number;
  entries: number;
  single: StreamWriterFigures;
  cluster: StreamWriterFigures;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

/** Appends through the streams module on `redis`: `entries` tokens and a terminal entry per writer, timed. */
async function round(redis: Redis, prefix: string, entries: number, latencies?: number[]) {
  const streams = createStreams(redis, prefix, { feedPartitions: 16, feedMaxLen: 100_000 });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: STREAM_WRITERS }, async () => {
      const key = streams.keys.job(randomUUID());
      for (let i = 0; i < entries; i++) {
        const s = performance.now();
        await streams.append(
          key,
          { type: 'token', turn: 0, attempt: 1, text: `t${i} ` },
          { kind: 'turn', turn: 0, attempt: 1 },
        );
        latencies?.push(performance.now() - s);
      }
      await streams.append(key, { type: 'complete' }, { kind: 'terminal' });
    }),
  );
  const streamMs = performance.now() - t0;
  const f0 = performance.now();
  await Promise.all(
    Array.from({ length: STREAM_WRITERS }, async () => {
      const ws = randomUUID();
      for (let i = 0; i < entries; i++)
        await streams.feed.append(ws, { workspace_id: ws, action: 'updated', resource: { kind: 'memory', id: ws } });
    }),
  );
  const feedMs = performance.now() - f0;
  const n = STREAM_WRITERS * (entries + 1);
  return { streamPerS: (n / streamMs) * 1000, feedPerS: ((STREAM_WRITERS * entries) / feedMs) * 1000 };
}

async function measure(topology: string, redis: Redis, say: (l: string) => void): Promise<StreamWriterFigures> {
  const prefix = `bench-streams-${randomUUID().slice(0, 8)}:`;
  try {
    await round(redis, prefix, WARMUP_ENTRIES);
    const rounds = [];
    const latencies: number[] = [];
    for (let i = 0; i < ROUNDS; i++) rounds.push(await round(redis, prefix, STREAM_ENTRIES, latencies));
    const figures = {
      topology,
      streamPerS: median(rounds.map((r) => r.streamPerS)),
      appendP50: pct(latencies, 0.5),
      appendP99: pct(latencies, 0.99),
      feedPerS: median(rounds.map((r) => r.feedPerS)),
    };
    say(
      `(s) ${topology}: ${figures.streamPerS.toFixed(0)} stream entries/s (append p50 ${figures.appendP50.toFixed(2)} ms, p99 ${figures.appendP99.toFixed(2)} ms), ${figures.feedPerS.toFixed(0)} feed entries/s`,
    );
    return figures;
  } finally {
    for await (const keys of scanKeys(redis, `${prefix}*`)) await deleteKeys(redis, keys);
    for await (const keys of scanKeys(redis, `{${prefix}*`)) await deleteKeys(redis, keys);
  }
}

/**
 * Section (s): the writer on the Redis at `redisUrl`, then on a Redis Cluster (REDIS_CLUSTER_NODES,
 * or a local 3-master one started for the measure and removed after).
 */
export async function measureStreamWriter(redisUrl: string, say: (l: string) => void): Promise<StreamWriterResult> {
  const single = createRedis(redisTarget({ REDIS_URL: redisUrl }));
  let dataDir: string | undefined;
  let stopCluster: (() => Promise<void>) | undefined;
  try {
    const singleFigures = await measure('one Redis', single, say);
    let nodes = process.env.REDIS_CLUSTER_NODES;
    if (!nodes) {
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-bench-cluster-'));
      const c = await startRedisCluster({ dataDir, log: (l) => say(l) });
      nodes = c.nodes;
      stopCluster = c.stop;
    }
    const cluster = createRedis(redisTarget({ REDIS_URL: '', REDIS_CLUSTER_NODES: nodes }));
    try {
      const clusterFigures = await measure(`Redis Cluster (${nodes.split(',').length} masters)`, cluster, say);
      return { writers: STREAM_WRITERS, entries: STREAM_ENTRIES, single: singleFigures, cluster: clusterFigures };
    } finally {
      cluster.disconnect();
    }
  } finally {
    single.disconnect();
    await stopCluster?.();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

export function streamWriterSummary(r: StreamWriterResult): string[] {
  const row = (f: StreamWriterFigures) =>
    `      ${f.topology.padEnd(32)} ${f.streamPerS.toFixed(0).padStart(7)} entries/s   append p50 ${f.appendP50.toFixed(2).padStart(6)} ms  p99 ${f.appendP99.toFixed(2).padStart(6)} ms   feed ${f.feedPerS.toFixed(0).padStart(7)} entries/s`;
  return [
    `  (s) Stream writer: ${r.writers} concurrent writers × ${r.entries} fenced entries + a terminal one (job streams), and the resource feed's append`,
    row(r.single),
    row(r.cluster),
    `      cluster ÷ one Redis: streams ${(r.cluster.streamPerS / r.single.streamPerS).toFixed(2)}, feed ${(r.cluster.feedPerS / r.single.feedPerS).toFixed(2)} (a local cluster: three servers on this machine's cores)`,
  ];
}
