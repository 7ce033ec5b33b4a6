/**
 * Bench section (p), lists that page by key (docs/decisions.md, "Lists that page by key"): what a
 * page of `GET /v1/jobs`, `/v1/traces` and `/v1/interventions` (and its summary, and one public
 * token) costs with 1,000 rows in the workspace and again after it has grown to
 * BENCH_LISTS_ROWS (100,000) rows of each. Goal: the large/small ratio of each ≤ 1.5. Rows are
 * written straight into the store (the bench measures reads); each figure is the median of RUNS
 * requests through the API (BENCH_LISTS_RUNS, default 15). Run alone with `npm run bench:lists` (embedded services unless
 * MONGODB_URI, REDIS_URL and TEMPORAL_ADDRESS are set).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeBlob } from '../../../src/kernel/store/codec.js';
import { newDeliveryToken, type InterventionDoc } from '../../../src/interventions/model.js';
import type { JobDoc } from '../../../src/jobs/model.js';
import { encodeCursor } from '../../../src/kernel/store/paging.js';
import { emptyCost, type TraceDoc } from '../../../src/traces/model.js';
import { buildWorkspace, startTestApp, type TestApp } from '../../../test/support/app.js';
import { startEmbedded } from '../../embedded.js';

const SMALL = 1_000;
const LARGE = Number(process.env.BENCH_LISTS_ROWS ?? 100_000);
const RUNS = Number(process.env.BENCH_LISTS_RUNS ?? 15);
const BATCH = 2_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The requests measured at each size; `deep` pages start halfway into the workspace's rows. */
const CASES = [
  'jobs first page',
  'jobs status=completed',
  'jobs cursor at half depth',
  'jobs offset=500',
  'traces first page',
  'traces search',
  'traces sort=message_count asc',
  'traces cursor at half depth',
  'interventions first page',
  'interventions summary=1',
  'public intervention token',
] as const;
type Case = (typeof CASES)[number];
export interface ListFigures {
  small: number;
  large: number;
  ms: Record<'small' | 'large', Record<Case, number>>;
}

const T0 = Date.parse('2026-01-01T00:00:00Z');
function job(workspaceId: string, i: number): JobDoc {
  const at = new Date(T0 + i * 1000);
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: null,
    kind: 'neuron',
    status: i % 4 === 0 ? 'running' : 'completed',
    progress: 100,
    currentStep: null,
    failedReason: null,
    result: null,
    waitingFor: null,
    neuronId: null,
    pathwayId: null,
    receptorId: null,
    traceId: null,
    parentJobId: null,
    clientNonce: null,
    createdBy: null,
    createdAt: at,
    processedAt: at,
    finishedAt: at,
    updatedAt: at,
  };
}
function trace(workspaceId: string, i: number): TraceDoc {
  const at = new Date(T0 + i * 1000);
  return {
    _id: randomUUID(),
    traceId: randomUUID(),
    workspaceId,
    brainId: null,
    userId: null,
    apiKeyId: null,
    receptorId: null,
    neuronId: null,
    title: `conversation ${i}${i % 50 === 0 ? ' about invoices' : ''}`,
    titleSource: 'manual',
    traceType: 'thread',
    messageCount: i % 40,
    cost: emptyCost(),
    memoryIds: [],
    metadata: encodeBlob({}),
    createdAt: at,
    updatedAt: at,
  };
}
function intervention(workspaceId: string, i: number): InterventionDoc {
  const at = new Date(T0 + i * 1000);
  const id = randomUUID();
  return {
    _id: id,
    workspaceId,
    brainId: null,
    jobId: randomUUID(),
    traceId: null,
    pathwayId: null,
    nodeIndex: 0,
    kind: 'approval',
    title: `t${i}`,
    prompt: 'p',
    options: ['approve', 'reject'],
    status: (['pending', 'approved', 'rejected', 'expired'] as const)[i % 4]!,
    action: null,
    comment: null,
    fields: null,
    respondedBy: null,
    respondedAt: null,
    expiresAt: null,
    createdAt: at,
    updatedAt: at,
    deliveries: [
      {
        id: randomUUID(),
        channel: 'link',
        token: newDeliveryToken(id),
        status: 'pending',
        createdAt: at,
        respondedAt: null,
      },
    ],
  };
}

/** The raw collections the bench seeds and reads positions from (the repositories hand out none). */
const collectionsOf = (app: TestApp) => ({
  jobs: app.deps.db.collection<JobDoc>('jobs'),
  traces: app.deps.db.collection<TraceDoc>('traces'),
  interventions: app.deps.db.collection<InterventionDoc>('interventions'),
});

async function fill(app: TestApp, workspaceId: string, from: number, to: number): Promise<void> {
  const r = collectionsOf(app);
  for (let i = from; i < to; i += BATCH) {
    const n = Math.min(BATCH, to - i);
    const idx = Array.from({ length: n }, (_, k) => i + k);
    await Promise.all([
      r.jobs.insertMany(idx.map((k) => job(workspaceId, k))),
      r.traces.insertMany(idx.map((k) => trace(workspaceId, k))),
      r.interventions.insertMany(idx.map((k) => intervention(workspaceId, k))),
    ]);
  }
}

async function timed(app: TestApp, key: string, url: string): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    const r = await app.get(url, key);
    ms.push(performance.now() - t);
    if (r.status !== 200) throw new Error(`${url} answered ${r.status}: ${r.text.slice(0, 200)}`);
  }
  return median(ms);
}

async function measureAt(
  app: TestApp,
  ws: { workspaceId: string; key: string },
  rows: number,
  say: (line: string) => void,
): Promise<Record<Case, number>> {
  const r = collectionsOf(app);
  const half = Math.floor(rows / 2);
  // Cursors at half depth, read from the store outside the timing.
  const jobAt = (
    await r.jobs.find({ workspaceId: ws.workspaceId }).sort({ createdAt: -1, _id: -1 }).skip(half).limit(1).toArray()
  )[0]!;
  const traceAt = (
    await r.traces
      .find({ workspaceId: ws.workspaceId, traceType: 'thread' })
      .sort({ updatedAt: -1, _id: -1 })
      .skip(half)
      .limit(1)
      .toArray()
  )[0]!;
  const token = (
    await r.interventions.find({ workspaceId: ws.workspaceId }).sort({ createdAt: -1, _id: -1 }).limit(1).toArray()
  )[0]!.deliveries[0]!.token;
  const urls: Record<Case, string> = {
    'jobs first page': '/v1/jobs?limit=20',
    'jobs status=completed': '/v1/jobs?limit=20&status=completed',
    'jobs cursor at half depth': `/v1/jobs?limit=20&cursor=${encodeCursor({ field: 'createdAt', dir: -1 }, jobAt)}`,
    'jobs offset=500': '/v1/jobs?limit=20&offset=500',
    'traces first page': '/v1/traces?limit=20',
    'traces search': '/v1/traces?limit=20&search=invoices',
    'traces sort=message_count asc': '/v1/traces?limit=20&sort=message_count&order=asc',
    'traces cursor at half depth': `/v1/traces?limit=20&cursor=${encodeCursor({ field: 'updatedAt', dir: -1 }, traceAt)}`,
    'interventions first page': '/v1/interventions?limit=20&brain_scope=all',
    'interventions summary=1': '/v1/interventions?summary=1&brain_scope=all',
    'public intervention token': `/v1/public/interventions/${token}`,
  };
  const out = {} as Record<Case, number>;
  for (const c of CASES) {
    out[c] = await timed(app, ws.key, urls[c]);
    say(`lists: ${rows} rows, ${c}: ${out[c].toFixed(1)} ms`);
  }
  return out;
}

export async function measureLists(app: TestApp, say: (line: string) => void): Promise<ListFigures> {
  const ws = await buildWorkspace(app);
  say(`lists: writing ${SMALL} jobs, traces and interventions`);
  await fill(app, ws.workspaceId, 0, SMALL);
  const small = await measureAt(app, ws, SMALL, say);
  const t = performance.now();
  say(`lists: growing the workspace to ${LARGE} rows of each`);
  await fill(app, ws.workspaceId, SMALL, LARGE);
  say(`lists: written in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  const large = await measureAt(app, ws, LARGE, say);
  return { small: SMALL, large: LARGE, ms: { small, large } };
}

export function formatLists(f: ListFigures): string[] {
  const fmt = (ms: number) => ms.toFixed(1).padStart(8);
  return [
    `  (p) Lists that page by key: median of ${RUNS} requests, ${f.small.toLocaleString('en')} vs ${f.large.toLocaleString('en')} rows in the workspace (goal: ratio ≤ 1.5)`,
    ...CASES.map(
      (c) =>
        `      ${c.padEnd(32)} ${fmt(f.ms.small[c])} ms ${fmt(f.ms.large[c])} ms   ×${(f.ms.large[c] / f.ms.small[c]).toFixed(2)}`,
    ),
  ];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const say = (l: string) => console.log(`[bench] ${l}`);
  const need = {
    mongo: !process.env.MONGODB_URI,
    redis: !process.env.REDIS_URL,
    temporal: !process.env.TEMPORAL_ADDRESS,
  };
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-bench-lists-'));
  const services = Object.values(need).some(Boolean)
    ? await startEmbedded({ dataDir, need, temporalUi: false, log: say })
    : null;
  process.env.MONGODB_URI ??= services?.mongoUri;
  process.env.REDIS_URL ??= services?.redisUrl;
  process.env.TEMPORAL_ADDRESS ??= services?.temporalAddress;
  const app = await startTestApp({
    MONGODB_DB: `cortex_bench_lists_${randomUUID().slice(0, 8)}`,
    RATE_LIMIT_POINTS: 1_000_000,
  });
  try {
    console.log(formatLists(await measureLists(app, say)).join('\n'));
  } finally {
    await app.deps.db.dropDatabase().catch(() => undefined);
    await app.close();
    await services?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  process.exit(0);
}
