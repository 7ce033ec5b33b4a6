/**
 * Bench section (m), "history": the platform's reads on a store that holds a realistic history.
 *
 * `fillHistory` fills workspaces of one store with months of history; `measureHistory` times
 * every list, aggregate, search and the per-turn budget check over HTTP on two sides, each an API
 * over a store of its own: a small workspace (1,000 of each kind of row) and a big one (the
 * issue's history), each beside small tenants, interleaved request by request on the same machine;
 * `historySummary` prints the ratio big ÷ small of each (goal ≤ 1.5) beside the absolute p50s.
 * The two sides have separate stores because the embedded store scans whole collections: on a
 * shared store the small workspace pays for the big one's rows and the ratio says nothing.
 * The fill is also the realistic store other sections (e.g. a load test) can reuse: call
 * `fillHistory` on their own database with the sizes they want (BIG_HISTORY, SMALL_HISTORY).
 *
 * What is written how (stated in the output too):
 * - usage-ledger rows go through the platform's own write path, `services.usage.record` (as a
 *   run's model call records them, `placed: false`), so whatever that path maintains besides the
 *   row is maintained for the filled rows as well;
 * - the one intervention per workspace whose public token is timed goes through
 *   `services.interventions.create`; the three budgets per timed workspace through `POST /v1/budgets`
 *   (scripts/bench.ts);
 * - jobs, traces, engrams with their places, the other interventions, memories, assets,
 *   artifacts (with their first version) and chunks (with 100-dimension vectors of the offline
 *   embedder's layout) are inserted in batches with `insertMany`, typed with the platform's own
 *   document types (the areas' model.ts and store.mongo.ts), shaped as their services write them. Inserted directly, they
 *   reach no Redis stream: the search index sees them when it builds from the store (an
 *   in-process API builds it at its first search, after the fill).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Binary, type Db, type OptionalUnlessRequiredId } from 'mongodb';
import { encodeBlob } from '../../../src/kernel/store/codec.js';
import type { JobDoc } from '../../../src/jobs/model.js';
import type {
  ChunkDoc,
  DocumentDoc,
  DocumentVersionDoc,
  IngestState,
  MemoryDoc,
} from '../../../src/knowledge/index.js';
import type { InterventionDoc, InterventionStatus } from '../../../src/interventions/model.js';
import {
  placeKey,
  traceKey,
  type CostSummary,
  type EngramDoc,
  type EngramPlaceDoc,
  type TraceDoc,
} from '../../../src/traces/model.js';
import type { JobKind, JobState } from '../../../src/temporal/definitions.js';
import type { Scope } from '../../../src/kernel/scope.js';
import type { Services } from '../../../src/compose/services.js';
import type { TestClient } from '../../../test/support/app.js';

// ─── Sizes ──────────────────────────────────────────────────────────────────────────────────

/** How much history one workspace holds. */
export interface HistorySize {
  ledger: number;
  jobs: number;
  engrams: number;
  traces: number;
  interventions: number;
  chunks: number;
  /** Engrams of the trace whose messages are timed (the same length in every workspace). */
  longTrace: number;
  /** A few traces far longer than the rest (beside the timed one). */
  hugeTraces: number;
  hugeTraceLength: number;
}

/** The issue's history: ≥ 100,000 ledger rows, 100,000 jobs, 100,000 engrams over 10,000 traces, 20,000 interventions, 50,000 chunks. */
export const BIG_HISTORY: HistorySize = {
  ledger: 100_000,
  jobs: 100_000,
  engrams: 100_000,
  traces: 10_000,
  interventions: 20_000,
  chunks: 50_000,
  longTrace: 200,
  hugeTraces: 3,
  hugeTraceLength: 2_000,
};
/** The yardstick: 1,000 of each (engrams over 100 traces). */
export const SMALL_HISTORY: HistorySize = {
  ledger: 1_000,
  jobs: 1_000,
  engrams: 1_000,
  traces: 100,
  interventions: 1_000,
  chunks: 1_000,
  longTrace: 200,
  hugeTraces: 0,
  hugeTraceLength: 0,
};

/** BIG_HISTORY scaled (BENCH_HISTORY_SCALE=0.1 for a quick run), never below the small size. */
export function scaledHistory(scale: number): HistorySize {
  const s = (n: number, min: number) => Math.max(min, Math.round(n * scale));
  return {
    ledger: s(BIG_HISTORY.ledger, SMALL_HISTORY.ledger),
    jobs: s(BIG_HISTORY.jobs, SMALL_HISTORY.jobs),
    engrams: s(BIG_HISTORY.engrams, SMALL_HISTORY.engrams),
    traces: s(BIG_HISTORY.traces, SMALL_HISTORY.traces),
    interventions: s(BIG_HISTORY.interventions, SMALL_HISTORY.interventions),
    chunks: s(BIG_HISTORY.chunks, SMALL_HISTORY.chunks),
    longTrace: BIG_HISTORY.longTrace,
    hugeTraces: BIG_HISTORY.hugeTraces,
    hugeTraceLength: s(BIG_HISTORY.hugeTraceLength, 400),
  };
}

/** A workspace to fill: what buildWorkspace / provisionWorkspace returns. */
export interface HistoryWorkspace {
  workspaceId: string;
  brainId: string;
  key: string;
  apiKeyId: string;
}

/** Ids the timed routes need, per filled workspace. */
export interface FilledWorkspace {
  ws: HistoryWorkspace;
  size: HistorySize;
  /** The trace of `size.longTrace` engrams. */
  longTraceId: string;
  /** A pathway id that a share of the jobs carries (filtered job page). */
  pathwayId: string;
  /** The public token of an intervention created through the service. */
  publicToken: string;
  /** A word that occurs in some trace titles, memory names and chunk texts. */
  term: string;
}

export interface FillReport {
  filled: FilledWorkspace[];
  /** Wall time per kind of row, ms (all workspaces). */
  ms: Record<string, number>;
  /** Documents written per collection (all workspaces). */
  written: Record<string, number>;
  totalMs: number;
}

// ─── Deterministic randomness ──────────────────────────────────────────────────────────────

/** mulberry32: the same seed fills the same history. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  /** Picks by weight: `[[value, weight], …]`. */
  const weighted = <T>(xs: readonly (readonly [T, number])[]): T => {
    const total = xs.reduce((s, [, w]) => s + w, 0);
    let r = next() * total;
    for (const [v, w] of xs) {
      if ((r -= w) < 0) return v;
    }
    return xs[xs.length - 1][0];
  };
  /** A name-based UUID-shaped id (deterministic per seed and counter). */
  const uuid = () => {
    const h = createHash('sha1').update(`${seed}:${a}:${next()}`).digest('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  return { next, int, pick, weighted, uuid };
}
type Rng = ReturnType<typeof rng>;

const DAY = 86_400_000;
/** Timestamps spread over the last ~3 months. */
const SPAN_MS = 90 * DAY;

const WORDS = (
  'roadmap budget invoice onboarding release incident customer contract pricing hiring security audit migration ' +
  'forecast quarterly review design sprint backlog meeting summary partner renewal support ticket outage latency database ' +
  'index cluster deploy rollback feature request feedback survey churn revenue margin vendor legal policy compliance training ' +
  'workshop launch campaign analytics dashboard metric goal objective milestone deadline risk dependency estimate'
).split(' ');
/** The word the search, grep and trace search look for: rare (about 1 in 50 texts). */
const TERM = 'kestrel';

function sentence(r: Rng, words: number, withTerm: boolean): string {
  const out = Array.from({ length: words }, () => r.pick(WORDS));
  if (withTerm) out[r.int(words)] = TERM;
  return out.join(' ');
}

/** A unit vector of `dim` floats, as the ingest step stores it (Float32 bytes in a Binary). */
function vector(r: Rng, dim: number): Binary {
  const v = new Float32Array(dim);
  let norm = 0;
  for (let i = 0; i < dim; i++) {
    v[i] = r.next() * 2 - 1;
    norm += v[i] * v[i];
  }
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < dim; i++) v[i] /= norm;
  return new Binary(Buffer.from(v.buffer, v.byteOffset, v.byteLength));
}

const contentHash = (c: { type: string; content: string }) =>
  createHash('sha256').update(`${c.type}\n${c.content}`).digest('hex');

// ─── Writing ───────────────────────────────────────────────────────────────────────────────

const BATCH = 1000;

/** Inserts `n` documents made by `make(i)` in batches of BATCH (unordered). */
async function insertAll<T extends { _id: string }>(
  db: Db,
  collection: string,
  n: number,
  make: (i: number) => T | T[],
  count: Record<string, number>,
): Promise<void> {
  const coll = db.collection<T>(collection);
  let batch: T[] = [];
  const flush = async () => {
    if (!batch.length) return;
    await coll.insertMany(batch as OptionalUnlessRequiredId<T>[], { ordered: false });
    count[collection] = (count[collection] ?? 0) + batch.length;
    batch = [];
  };
  for (let i = 0; i < n; i++) {
    const made = make(i);
    if (Array.isArray(made)) batch.push(...made);
    else batch.push(made);
    if (batch.length >= BATCH) await flush();
  }
  await flush();
}

/** Runs `fn(0..count-1)` with at most `concurrency` in flight. */
async function pool(count: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
}

/** How many engrams each trace holds: the timed long trace, a few huge ones, the rest spread evenly. */
function traceLengths(size: HistorySize): number[] {
  const lengths = new Array<number>(size.traces).fill(0);
  let left = size.engrams;
  const take = (i: number, n: number) => {
    const k = Math.min(n, left);
    lengths[i] = k;
    left -= k;
  };
  take(0, size.longTrace);
  for (let h = 1; h <= size.hugeTraces && h < size.traces; h++) take(h, size.hugeTraceLength);
  const first = 1 + size.hugeTraces;
  const rest = size.traces - first;
  for (let i = first; i < size.traces && rest > 0; i++) {
    const share = Math.floor(left / (size.traces - i));
    lengths[i] = share;
    left -= share;
  }
  return lengths;
}

interface Cast {
  neurons: string[];
  pathways: string[];
  receptors: string[];
  users: string[];
}

/**
 * Fills one workspace with `size` history: jobs, the ledger (through services.usage.record), traces
 * with engrams and places, interventions, knowledge (memories, assets, artifacts, chunks).
 */
async function fillWorkspace(
  db: Db,
  services: Services,
  ws: HistoryWorkspace,
  size: HistorySize,
  seed: number,
  ms: Record<string, number>,
  written: Record<string, number>,
  log: (line: string) => void,
): Promise<FilledWorkspace> {
  const r = rng(seed);
  const now = Date.now();
  const past = () => new Date(now - Math.floor(r.next() * SPAN_MS));
  const cast: Cast = {
    neurons: Array.from({ length: 8 }, () => r.uuid()),
    pathways: Array.from({ length: 5 }, () => r.uuid()),
    receptors: Array.from({ length: 4 }, () => r.uuid()),
    users: Array.from({ length: 6 }, () => r.uuid()),
  };
  const timed = async (label: string, fn: () => Promise<void>) => {
    const t0 = performance.now();
    await fn();
    ms[label] = (ms[label] ?? 0) + performance.now() - t0;
  };

  // Traces and their engrams (with places): ids first, the jobs refer to them.
  const lengths = traceLengths(size);
  const traceIds = lengths.map(() => r.uuid());
  const traceStart = lengths.map(() => now - Math.floor(r.next() * SPAN_MS));
  await timed('traces', () =>
    insertAll<TraceDoc>(
      db,
      'traces',
      size.traces,
      (t) => {
        const n = lengths[t];
        const createdAt = new Date(traceStart[t]);
        const neuronId = r.pick(cast.neurons);
        return {
          _id: traceKey(ws.workspaceId, traceIds[t]),
          traceId: traceIds[t],
          workspaceId: ws.workspaceId,
          brainId: ws.brainId,
          userId: r.next() < 0.5 ? null : r.pick(cast.users),
          apiKeyId: r.next() < 0.5 ? ws.apiKeyId : null,
          receptorId: r.next() < 0.2 ? r.pick(cast.receptors) : null,
          neuronId,
          title: `${sentence(r, 4, r.next() < 0.02)} #${t}`,
          titleSource: 'generated',
          traceType: r.next() < 0.05 ? 'system' : 'thread',
          messageCount: n,
          cost: { totalCostUsd: n * 0.0004, totalTokens: n * 300, inputTokens: n * 250, outputTokens: n * 50 },
          memoryIds: [],
          metadata: encodeBlob({}),
          createdAt,
          updatedAt: new Date(traceStart[t] + n * 60_000),
        };
      },
      written,
    ),
  );
  await timed('engrams', async () => {
    // One engram and its place per (trace, seq); a trace's engrams a minute apart.
    const flat: [number, number][] = [];
    for (let t = 0; t < lengths.length; t++) for (let s = 1; s <= lengths[t]; s++) flat.push([t, s]);
    const engrams: EngramDoc[] = [];
    const places: EngramPlaceDoc[] = [];
    const flush = async () => {
      await Promise.all([
        engrams.length ? db.collection<EngramDoc>('engrams').insertMany(engrams.splice(0), { ordered: false }) : null,
        places.length
          ? db.collection<EngramPlaceDoc>('engram_places').insertMany(places.splice(0), { ordered: false })
          : null,
      ]);
    };
    for (const [t, seq] of flat) {
      const human = seq % 2 === 1;
      const content = {
        type: human ? 'human' : 'neuron',
        content: `${human ? 'Question' : 'Answer'} ${seq}: ${sentence(r, 30, r.next() < 0.02)}`,
      };
      const totals: CostSummary = {
        totalCostUsd: Math.floor(seq / 2) * 0.0008,
        totalTokens: Math.floor(seq / 2) * 600,
        inputTokens: Math.floor(seq / 2) * 500,
        outputTokens: Math.floor(seq / 2) * 100,
      };
      const id = r.uuid();
      engrams.push({
        _id: id,
        workspaceId: ws.workspaceId,
        traceId: traceIds[t],
        seq,
        content,
        contentHash: contentHash(content),
        metadata: encodeBlob({}),
        sourceType: human ? 'api_key' : 'neuron',
        sourceId: human ? ws.apiKeyId : cast.neurons[t % cast.neurons.length],
        targetType: null,
        targetId: null,
        traceType: 'thread',
        memoryIds: [],
        jobId: null,
        createdAt: new Date(traceStart[t] + seq * 60_000),
        totals,
      });
      places.push({ _id: placeKey(traceKey(ws.workspaceId, traceIds[t]), seq), engramId: id, seq, totals });
      if (engrams.length >= BATCH) await flush();
    }
    await flush();
    written.engrams = (written.engrams ?? 0) + flat.length;
    written.engram_places = (written.engram_places ?? 0) + flat.length;
  });

  // Jobs: neuron runs mostly, pathways and receptors; most completed, some failed, a few open.
  const jobKinds: (readonly [JobKind, number])[] = [
    ['neuron', 60],
    ['pathway', 25],
    ['receptor', 10],
    ['ingest', 5],
  ];
  const jobStates: (readonly [JobState, number])[] = [
    ['completed', 80],
    ['failed', 12],
    ['running', 3],
    ['pending', 2],
    ['waiting', 2],
    ['paused', 1],
  ];
  const jobs: Pick<
    JobDoc,
    '_id' | 'kind' | 'neuronId' | 'pathwayId' | 'receptorId' | 'traceId' | 'createdAt' | 'createdBy'
  >[] = [];
  await timed('jobs', () =>
    insertAll<JobDoc>(
      db,
      'jobs',
      size.jobs,
      () => {
        const kind = r.weighted(jobKinds);
        const status = r.weighted(jobStates);
        const createdAt = past();
        const done = status === 'completed' || status === 'failed';
        const job: JobDoc = {
          _id: r.uuid(),
          workspaceId: ws.workspaceId,
          brainId: ws.brainId,
          kind,
          status,
          progress: done ? 100 : 40,
          currentStep: done ? null : 'model turn 1',
          failedReason: status === 'failed' ? 'provider answered 500' : null,
          result: status === 'completed' ? encodeBlob({ text: sentence(r, 12, false) }) : null,
          waitingFor: status === 'waiting' ? encodeBlob({ intervention: true }) : null,
          neuronId: kind === 'neuron' || kind === 'receptor' ? r.pick(cast.neurons) : null,
          pathwayId: kind === 'pathway' ? r.pick(cast.pathways) : null,
          receptorId: kind === 'receptor' ? r.pick(cast.receptors) : null,
          traceId: kind === 'ingest' ? null : r.pick(traceIds),
          parentJobId: null,
          clientNonce: null,
          createdBy: r.next() < 0.5 ? ws.apiKeyId : r.pick(cast.users),
          createdAt,
          processedAt: status === 'pending' ? null : new Date(createdAt.getTime() + 40),
          finishedAt: done ? new Date(createdAt.getTime() + 2_000 + r.int(30_000)) : null,
          updatedAt: new Date(createdAt.getTime() + 2_000),
        };
        jobs.push(job);
        return job;
      },
      written,
    ),
  );

  // The ledger, through the platform's write path: one row per model call, most jobs one call, some several.
  const models: (readonly [string, number])[] = [
    ['openai/gpt-4o-mini', 60],
    ['openai/gpt-4o', 20],
    ['anthropic/claude-sonnet-4', 15],
    ['openai/my-finetune', 5],
  ];
  await timed('usage_ledger', () =>
    pool(size.ledger, 16, async (i) => {
      const job = jobs[i % jobs.length];
      const turn = Math.floor(i / jobs.length);
      const input = 200 + r.int(3000);
      const output = 20 + r.int(800);
      const embedding = job.kind === 'ingest';
      await services.usage.record({
        key: `${job._id}:${embedding ? 'embed' : 'chat'}:${turn}:0`,
        workspaceId: ws.workspaceId,
        kind: embedding ? 'embedding' : 'chat',
        modelId: embedding ? 'openai/text-embedding-3-small' : r.weighted(models),
        usage: {
          inputTokens: input,
          outputTokens: embedding ? 0 : output,
          totalTokens: input + (embedding ? 0 : output),
          cachedInputTokens: r.next() < 0.3 ? Math.floor(input / 2) : 0,
        },
        attribution: {
          brainId: ws.brainId,
          userId: job.createdBy === ws.apiKeyId ? null : job.createdBy,
          apiKeyId: job.createdBy === ws.apiKeyId ? ws.apiKeyId : null,
          jobId: job._id,
          traceId: job.traceId,
          receptorId: job.receptorId,
          neuronId: job.neuronId,
          pathwayId: job.pathwayId,
          runId: job._id,
        },
        at: new Date(job.createdAt.getTime() + 500 + turn * 1500),
        placed: false,
      });
    }),
  );
  written.usage_ledger = (written.usage_ledger ?? 0) + size.ledger;
  // What the hourly reconciler schedule would have done over those months: the closed hours and
  // days stored as rollups (their Redis hour counters then are no longer read).
  const since = jobs.reduce((m, j) => (j.createdAt < m ? j.createdAt : m), new Date());
  await timed('usage rollups (reconciler)', async () => {
    await services.usageReconciler.workspace(ws.workspaceId, new Date(), { since });
  });

  // Interventions: pathway human nodes and budget pauses, most answered long ago.
  const statuses: (readonly [InterventionStatus, number])[] = [
    ['pending', 10],
    ['approved', 40],
    ['rejected', 10],
    ['answered', 25],
    ['expired', 10],
    ['cancelled', 5],
  ];
  await timed('interventions', () =>
    insertAll<InterventionDoc>(
      db,
      'interventions',
      size.interventions - 1,
      () => {
        const job = jobs[r.int(jobs.length)];
        const kind = r.weighted([
          ['approval', 70],
          ['pause', 20],
          ['budget', 10],
        ] as const);
        const status = r.weighted(statuses);
        const createdAt = past();
        const answered = status !== 'pending' && status !== 'expired' && status !== 'cancelled';
        const respondedAt = answered ? new Date(createdAt.getTime() + 60_000 + r.int(3_600_000)) : null;
        return {
          _id: r.uuid(),
          workspaceId: ws.workspaceId,
          brainId: ws.brainId,
          jobId: job._id,
          traceId: job.traceId,
          pathwayId: job.pathwayId ?? r.pick(cast.pathways),
          nodeIndex: r.int(6),
          kind,
          title: `Approve ${sentence(r, 3, false)}`,
          prompt: sentence(r, 20, false),
          options: ['approve', 'reject'],
          status,
          action: answered ? (status === 'rejected' ? 'reject' : 'approve') : null,
          comment: null,
          fields: null,
          respondedBy: answered ? r.pick(cast.users) : null,
          respondedAt,
          expiresAt: r.next() < 0.3 ? new Date(createdAt.getTime() + DAY) : null,
          deliveries: (kind === 'budget' ? (['api'] as const) : (['api', 'link'] as const)).map((channel) => ({
            id: r.uuid(),
            channel,
            token: randomBytes(24).toString('base64url'),
            status: answered
              ? ('responded' as const)
              : status === 'pending'
                ? ('pending' as const)
                : ('closed' as const),
            createdAt,
            respondedAt,
          })),
          createdAt,
          updatedAt: respondedAt ?? createdAt,
        };
      },
      written,
    ),
  );
  // The one whose public link is timed: through the service, as a pathway's human node creates it.
  const scope: Scope = {
    workspaceId: ws.workspaceId,
    userId: null,
    apiKeyId: ws.apiKeyId,
    brainId: ws.brainId,
    roles: ['workspace_admin'],
    credential: 'api_key',
  };
  const open = await services.interventions.create(scope, {
    id: randomUUID(),
    jobId: jobs[0]._id,
    traceId: jobs[0].traceId,
    pathwayId: cast.pathways[0],
    brainId: ws.brainId,
    nodeIndex: 1,
    kind: 'approval',
    title: 'Approve the release',
    prompt: 'Ship it?',
    options: ['approve', 'reject'],
  });
  written.interventions = (written.interventions ?? 0) + 1;
  const publicToken = open.deliveries.find((d) => d.channel === 'link')!.token;

  // Knowledge: resources of ten chunks each (40% memories, 40% assets, 20% artifacts) in a few folders.
  const perResource = 10;
  const resources = Math.max(1, Math.round(size.chunks / perResource));
  const folders = [
    '',
    'projects/alpha',
    'projects/alpha/specs',
    'projects/beta',
    'notes/2026-09',
    'notes/2026-10',
    'notes/2026-11',
    'customers/acme',
    'customers/globex',
    'policies',
  ];
  const ready = (chunkCount: number): IngestState => ({
    status: 'ready',
    jobId: r.uuid(),
    version: 1,
    chunkCount,
    embeddedCount: chunkCount,
    embeddingModel: 'local/wink-sg-100d',
    error: null,
  });
  const kindOf = (i: number): 'memory' | 'asset' | 'artifact' =>
    i % 5 < 2 ? 'memory' : i % 5 < 4 ? 'asset' : 'artifact';
  const resourceIds = Array.from({ length: resources }, () => r.uuid());
  const resourceAt = resourceIds.map(() => past());
  const resourcePath = resourceIds.map(() => r.pick(folders));
  const resourceName = resourceIds.map((_, i) => `${sentence(r, 3, r.next() < 0.02)} ${i}`);
  await timed('knowledge', async () => {
    const memories = resourceIds.map((id, i) => ({ id, i })).filter(({ i }) => kindOf(i) === 'memory');
    const documents = resourceIds.map((id, i) => ({ id, i })).filter(({ i }) => kindOf(i) !== 'memory');
    await insertAll<MemoryDoc>(
      db,
      'memories',
      memories.length,
      (k) => {
        const { id, i } = memories[k];
        const at = resourceAt[i];
        return {
          _id: id,
          workspaceId: ws.workspaceId,
          brainId: ws.brainId,
          name: resourceName[i],
          description: sentence(r, 12, false),
          sourceType: 'text',
          ownerType: r.next() < 0.5 ? 'neuron' : null,
          ownerId: null,
          tags: [r.pick(WORDS)],
          metadata: encodeBlob({}),
          contentType: 'text/plain',
          size: 4000,
          blobKey: null,
          fileName: null,
          skipEmbedding: false,
          titleSource: 'caller',
          titleModel: null,
          ingest: ready(perResource),
          createdBy: ws.apiKeyId,
          createdAt: at,
          updatedAt: at,
        };
      },
      written,
    );
    const docs = documents.map(({ id, i }): DocumentDoc => {
      const lane = kindOf(i) === 'asset' ? 'asset' : 'artifact';
      const at = resourceAt[i];
      return {
        _id: id,
        workspaceId: ws.workspaceId,
        brainId: ws.brainId,
        lane,
        name: resourceName[i],
        path: resourcePath[i],
        metadata: encodeBlob({}),
        skipEmbedding: false,
        contentType: lane === 'asset' ? 'text/markdown' : 'text/markdown',
        size: 4000,
        sha256: null,
        blobKey: null,
        source: lane === 'asset' ? { type: 'text', value: null } : { type: 'artifact', value: null },
        version: 1,
        ...(lane === 'artifact' ? { content: sentence(r, 200, false) } : {}),
        ingest: ready(perResource),
        createdBy: ws.apiKeyId,
        createdAt: at,
        updatedAt: at,
      };
    });
    for (let k = 0; k < docs.length; k += BATCH) {
      const part = docs.slice(k, k + BATCH);
      await db.collection<DocumentDoc>('documents').insertMany(part, { ordered: false });
      await db.collection<DocumentVersionDoc>('document_versions').insertMany(
        part.map((d) => ({
          _id: `${d._id}:1`,
          documentId: d._id,
          workspaceId: d.workspaceId,
          lane: d.lane,
          version: 1,
          name: d.name,
          path: d.path,
          metadata: d.metadata,
          skipEmbedding: false,
          changes: ['created'],
          ...(d.content !== undefined ? { content: d.content } : {}),
          contentType: d.contentType,
          size: d.size,
          createdBy: d.createdBy,
          createdAt: d.createdAt,
        })),
        { ordered: false },
      );
    }
    written.documents = (written.documents ?? 0) + docs.length;
    written.document_versions = (written.document_versions ?? 0) + docs.length;
    await insertAll<ChunkDoc>(
      db,
      'chunks',
      resources * perResource,
      (c) => {
        const i = Math.floor(c / perResource);
        const index = c % perResource;
        const kind = kindOf(i);
        return {
          _id: `${resourceIds[i]}:1:${index}`,
          workspaceId: ws.workspaceId,
          brainId: ws.brainId,
          resourceKind: kind,
          resourceId: resourceIds[i],
          version: 1,
          index,
          source: 'body',
          text: sentence(r, 60, r.next() < 0.02),
          tokens: 80,
          path: kind === 'memory' ? '' : resourcePath[i],
          embedding: { model: 'local/wink-sg-100d', dimension: 100, vector: vector(r, 100) },
          createdAt: resourceAt[i],
        };
      },
      written,
    );
  });
  log(
    `filled workspace ${ws.workspaceId.slice(0, 8)}: ${size.jobs} jobs, ${size.ledger} ledger rows, ${size.engrams} engrams over ${size.traces} traces, ${size.interventions} interventions, ${resources} resources with ${resources * perResource} chunks`,
  );
  return {
    ws,
    size: { ...size, chunks: resources * perResource },
    longTraceId: traceIds[0],
    pathwayId: cast.pathways[0],
    publicToken,
    term: TERM,
  };
}

/**
 * Fills each workspace of `plan` with its history, in order, into one store (`services` built
 * over `db`); other tenants' rows share the collections, as in a real store. `seed` makes the
 * history reproducible (default: the workspace's position in the plan).
 */
export async function fillHistory(
  db: Db,
  services: Services,
  plan: { ws: HistoryWorkspace; size: HistorySize; seed?: number }[],
  log: (line: string) => void = () => undefined,
): Promise<FillReport> {
  const t0 = performance.now();
  const ms: Record<string, number> = {};
  const written: Record<string, number> = {};
  const filled: FilledWorkspace[] = [];
  for (const [k, p] of plan.entries())
    filled.push(await fillWorkspace(db, services, p.ws, p.size, p.seed ?? k + 1, ms, written, log));
  return { filled, ms, written, totalMs: performance.now() - t0 };
}

// ─── Timing ────────────────────────────────────────────────────────────────────────────────

/** Per-request timeout: a slower answer is reported as "> REQUEST_TIMEOUT_MS". */
export const REQUEST_TIMEOUT_MS = 30_000;
/** Timed requests per workspace and route (after one warm-up), and the time one route may take for both. */
export const SAMPLES = 7;
const ROUTE_BUDGET_MS = 60_000;
const MIN_SAMPLES = 3;
/** After a timed-out request, how long the bench waits for the API to finish it before the next route. */
const DRAIN_MAX_MS = 90_000;
/** Goal for every ratio big ÷ small. */
export const AIM_RATIO = 1.5;

export interface RouteTiming {
  route: string;
  /** Median ms of each side; null when it did not answer within REQUEST_TIMEOUT_MS. */
  small: number | null;
  big: number | null;
  samples: [number, number];
  /** Why a side has no figure (a timeout, an error status, the section's time bound). */
  note?: string;
}

/** One side of the comparison: the API over its own store, and the workspace timed on it. */
export interface HistorySide {
  client: TestClient;
  fill: FillReport;
  filled: FilledWorkspace;
}

export interface HistoryMeasure {
  small: HistorySide;
  big: HistorySide;
  routes: RouteTiming[];
  totalMs: number;
  /** The bound on the timing phase, ms. */
  boundMs: number;
  /** Requests still running on the API when the bench moved on after a timeout. */
  undrained: number;
}

/** One timed request: ms, or a status/timeout. */
type Outcome = { ok: true; ms: number; body: unknown } | { ok: false; why: string };

/** What a route sends: a path (GET) or a method, path, body; `null` when it cannot be sent for that workspace. */
type Req = { method?: 'GET' | 'POST'; path: string; body?: unknown; brain?: boolean } | null;

export interface MeasureOptions {
  /** Completed-request count of the API under test (its request metric), to wait for abandoned requests; omitted: no wait. */
  completedRequests?: () => Promise<number>;
  /** Time to first token of one invoke of a neuron covered by the workspace's budgets, ms (the per-turn budget check); omitted: not timed. */
  firstToken?: (ws: HistoryWorkspace, neuronId: string) => Promise<number>;
  /** A neuron of each timed workspace for `firstToken`: [small, big]. */
  neurons?: [string, string];
  /** Bound on the timing phase (routes past it are reported, not run). */
  boundMs: number;
  /** Only the routes whose label contains one of these (case-insensitive); empty: every route. */
  only?: string[];
  log: (line: string) => void;
}

async function timedRequest(client: TestClient, ws: HistoryWorkspace, req: NonNullable<Req>): Promise<Outcome> {
  const headers: Record<string, string> = { authorization: `Bearer ${ws.key}` };
  if (req.brain) headers['x-brain-id'] = ws.brainId;
  if (req.body !== undefined) headers['content-type'] = 'application/json';
  const t0 = performance.now();
  try {
    const res = await fetch(client.url + req.path, {
      method: req.method ?? 'GET',
      headers,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    const ms = performance.now() - t0;
    if (res.status >= 400) return { ok: false, why: `answered ${res.status}: ${text.slice(0, 120)}` };
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    return { ok: true, ms, body };
  } catch (e) {
    if ((e as Error).name === 'TimeoutError' || (e as Error).name === 'AbortError')
      return { ok: false, why: `> ${REQUEST_TIMEOUT_MS / 1000} s` };
    throw e;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Walks `limit`-row pages by `next_cursor` until `depth` rows are behind it; null when the list offers no cursor. */
async function cursorAt(client: TestClient, ws: HistoryWorkspace, path: string, depth: number): Promise<string | null> {
  let cursor: string | null = null;
  const limit = 200;
  for (let seen = 0; seen < depth; seen += limit) {
    const sep = path.includes('?') ? '&' : '?';
    const o = await timedRequest(client, ws, {
      path: `${path}${sep}limit=${limit}&cursor=${cursor ? encodeURIComponent(cursor) : 'first'}`,
    });
    if (!o.ok) return null;
    const next = (o.body as { next_cursor?: unknown } | null)?.next_cursor;
    if (typeof next !== 'string' || !next) return null;
    cursor = next;
  }
  return cursor;
}

/**
 * Times every list, aggregate and per-turn check on the small and the big side, each an API over
 * its own store: one warm-up each, then up to SAMPLES requests each, alternating, within
 * ROUTE_BUDGET_MS per route; a side whose warm-up times out is reported "> 30 s" and not sampled.
 * Routes that read the search index (built from the store at its first use) come last.
 */
export async function measureHistory(small: HistorySide, big: HistorySide, o: MeasureOptions): Promise<HistoryMeasure> {
  const started = performance.now();
  const { log } = o;
  // Requests this route sent, and the API's completed-request count when it began.
  let sent = 0;
  let baseline = 0;
  let undrained = 0;

  /** Waits (bounded) until the API has finished every request the route sent, abandoned ones included. */
  const drain = async () => {
    if (!o.completedRequests) return;
    const until = performance.now() + DRAIN_MAX_MS;
    let left = sent - ((await o.completedRequests()) - baseline);
    while (left > 0 && performance.now() < until) {
      await new Promise((res) => setTimeout(res, 500));
      left = sent - ((await o.completedRequests()) - baseline);
    }
    if (left > 0) {
      undrained += left;
      log(`(m) moving on with ${left} abandoned request(s) still running on the API`);
    }
  };

  const routes: RouteTiming[] = [];
  const wanted = (route: string) =>
    !o.only?.length || o.only.some((w) => route.toLowerCase().includes(w.toLowerCase()));
  const time = async (route: string, reqOf: (f: FilledWorkspace, client: TestClient) => Req | Promise<Req>) => {
    if (!wanted(route)) return;
    if (performance.now() - started > o.boundMs) {
      routes.push({
        route,
        small: null,
        big: null,
        samples: [0, 0],
        note: "not run: the section's time bound was reached",
      });
      return;
    }
    const sides = [small, big];
    const reqs = await Promise.all(sides.map((s) => reqOf(s.filled, s.client)));
    sent = 0;
    baseline = o.completedRequests ? await o.completedRequests() : 0;
    const samples: number[][] = [[], []];
    const notes: (string | undefined)[] = [undefined, undefined];
    const live = [reqs[0] !== null, reqs[1] !== null];
    reqs.forEach((q, k) => {
      if (!q) notes[k] = 'not offered';
    });
    let timedOut = false;
    const once = async (k: number): Promise<void> => {
      sent++;
      const out = await timedRequest(sides[k].client, sides[k].filled.ws, reqs[k]!);
      if (out.ok) {
        samples[k].push(out.ms);
        return;
      }
      live[k] = false;
      notes[k] = out.why;
      if (out.why.startsWith('>')) timedOut = true;
    };
    // Warm-up (not counted), small first.
    for (const k of [0, 1])
      if (live[k]) {
        await once(k);
        samples[k].length = 0;
      }
    if (timedOut) {
      await drain();
      timedOut = false;
    }
    // At least MIN_SAMPLES of a side that answers, however slow the other.
    const t0 = performance.now();
    for (let i = 0; i < SAMPLES && (i < MIN_SAMPLES || performance.now() - t0 < ROUTE_BUDGET_MS); i++) {
      for (const k of [0, 1]) if (live[k]) await once(k);
      if (timedOut) {
        await drain();
        timedOut = false;
      }
    }
    const fig = (k: number) => (samples[k].length ? median(samples[k]) : null);
    const note =
      notes
        .map((n, k) => (n ? `${k ? 'big' : 'small'}: ${n}` : null))
        .filter(Boolean)
        .join('; ') || undefined;
    const t: RouteTiming = { route, small: fig(0), big: fig(1), samples: [samples[0].length, samples[1].length], note };
    routes.push(t);
    log(
      `(m) ${route}: small ${t.small === null ? '—' : `${t.small.toFixed(1)} ms`}, big ${t.big === null ? '—' : `${t.big.toFixed(1)} ms`}${note ? ` (${note})` : ''}`,
    );
  };

  const deep = (f: FilledWorkspace) => Math.min(5000, Math.floor(f.size.jobs / 2));
  // The per-turn budget check: time to first token of an invoke covered by the workspace's budgets.
  const perTurn = async () => {
    const label = 'invoke → first token (3 budgets, per-turn check)';
    if (!o.firstToken || !o.neurons || !wanted(label)) return;
    if (performance.now() - started > o.boundMs)
      routes.push({
        route: label,
        small: null,
        big: null,
        samples: [0, 0],
        note: "not run: the section's time bound was reached",
      });
    else {
      const sides = [
        { f: small.filled, n: o.neurons[0] },
        { f: big.filled, n: o.neurons[1] },
      ];
      const samples: number[][] = [[], []];
      const notes: (string | undefined)[] = [undefined, undefined];
      const t0 = performance.now();
      const once = async (k: number) => {
        if (notes[k]) return;
        try {
          samples[k].push(await o.firstToken!(sides[k].f.ws, sides[k].n));
        } catch (e) {
          notes[k] = (e as Error).message.slice(0, 160);
        }
      };
      for (const k of [0, 1]) {
        await once(k);
        samples[k].length = 0;
      }
      for (let i = 0; i < SAMPLES && performance.now() - t0 < 2 * ROUTE_BUDGET_MS; i++)
        for (const k of [0, 1]) await once(k);
      const note =
        notes
          .map((n, k) => (n ? `${k ? 'big' : 'small'}: ${n}` : null))
          .filter(Boolean)
          .join('; ') || undefined;
      const fig = (k: number) => (samples[k].length ? median(samples[k]) : null);
      const t: RouteTiming = {
        route: label,
        small: fig(0),
        big: fig(1),
        samples: [samples[0].length, samples[1].length],
        note,
      };
      routes.push(t);
      log(
        `(m) ${label}: small ${t.small?.toFixed(1) ?? '—'} ms, big ${t.big?.toFixed(1) ?? '—'} ms${note ? ` (${note})` : ''}`,
      );
    }
  };

  // The headline routes first (a bounded run times them even when every route is slow), then the variants.
  await time('GET /v1/jobs (first page)', () => ({ path: '/v1/jobs' }));
  await time('GET /v1/traces (first page)', () => ({ path: '/v1/traces' }));
  await time('GET /v1/interventions', () => ({ path: '/v1/interventions?brain_scope=all' }));
  await time('GET /v1/usage', () => ({ path: '/v1/usage' }));
  await perTurn();
  await time('GET /v1/budgets', () => ({ path: '/v1/budgets' }));
  await time('GET /v1/memories', () => ({ path: '/v1/memories', brain: true }));
  await time('GET /v1/public/interventions/:token', (f) => ({ path: `/v1/public/interventions/${f.publicToken}` }));
  await time('GET /v1/traces/:id/messages (200 engrams)', (f) => ({ path: `/v1/traces/${f.longTraceId}/messages` }));
  await time('GET /v1/jobs?status=failed', () => ({ path: '/v1/jobs?status=failed' }));
  await time('GET /v1/jobs?pathway_id=…', (f) => ({ path: `/v1/jobs?pathway_id=${f.pathwayId}` }));
  await time('GET /v1/jobs?offset=5000 (small: 500)', (f) => ({ path: `/v1/jobs?offset=${deep(f)}` }));
  // Deep paging by cursor, when the list offers next_cursor: the page after deep() rows (walked untimed).
  await time('GET /v1/jobs?cursor=… (at 5000 | 500)', async (f, client) => {
    const cursor = await cursorAt(client, f.ws, '/v1/jobs', deep(f));
    return cursor ? { path: `/v1/jobs?cursor=${encodeURIComponent(cursor)}` } : null;
  });
  await time('GET /v1/traces?search=…', (f) => ({ path: `/v1/traces?search=${f.term}` }));
  await time('GET /v1/traces?sort=message_count', () => ({ path: '/v1/traces?sort=message_count' }));
  await time('GET /v1/traces?sort=created_at&order=asc', () => ({ path: '/v1/traces?sort=created_at&order=asc' }));
  await time('GET /v1/interventions?summary=1', () => ({ path: '/v1/interventions?brain_scope=all&summary=1' }));
  await time('GET /v1/assets', () => ({ path: '/v1/assets', brain: true }));
  await time('GET /v1/artifacts', () => ({ path: '/v1/artifacts', brain: true }));
  await time('GET /v1/resources/tree', () => ({ path: '/v1/resources/tree', brain: true }));
  await time('GET /v1/usage/:workspace_id', (f) => ({ path: `/v1/usage/${f.ws.workspaceId}` }));
  await time('GET /v1/usage/:workspace_id/receptors', (f) => ({ path: `/v1/usage/${f.ws.workspaceId}/receptors` }));

  // Last: the search index builds from the store in the background (a search meanwhile answers 503
  // with Retry-After); the routes are timed once it has caught up, and how long that took is logged.
  if (['search', 'grep', 'browse'].some(wanted)) {
    for (const [k, side] of [small, big].entries()) {
      const t0 = performance.now();
      const until = t0 + 15 * 60_000;
      let state = 'answered 503';
      while (performance.now() < until) {
        const o = await timedRequest(side.client, side.filled.ws, {
          method: 'POST',
          path: '/v1/search',
          body: { query: `memories/${side.filled.term}` },
          brain: true,
        });
        state = o.ok ? 'ready' : o.why;
        if (o.ok || !o.why.startsWith('answered 503')) break;
        await new Promise((r) => setTimeout(r, 2_000));
      }
      log(
        `(m) ${k ? 'big' : 'small'} side: search index ${state.slice(0, 60)} after ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
    }
  }
  await time('POST /v1/search (memories)', (f) => ({
    method: 'POST',
    path: '/v1/search',
    body: { query: `memories/${f.term}` },
    brain: true,
  }));
  await time('POST /v1/grep (memories)', (f) => ({
    method: 'POST',
    path: '/v1/grep',
    body: { query: `memories/${f.term}` },
    brain: true,
  }));
  await time('POST /v1/browse/resource-tree', () => ({
    method: 'POST',
    path: '/v1/browse/resource-tree',
    body: {},
    brain: true,
  }));
  await drain();
  return { small, big, routes, totalMs: performance.now() - started, boundMs: o.boundMs, undrained };
}

// ─── Summary ───────────────────────────────────────────────────────────────────────────────

const cell = (ms: number | null, note: string | undefined, side: 'small' | 'big'): string => {
  if (ms !== null) return `${ms.toFixed(1)}`;
  const n = note
    ?.split('; ')
    .find((x) => x.startsWith(`${side}:`))
    ?.slice(side.length + 2);
  if (n?.startsWith('>')) return n;
  if (n === 'not offered') return 'n/a';
  return n ? 'error' : '—';
};

/** The table: route, p50 small, p50 big, ratio, goal met. */
export function historySummary(m: HistoryMeasure): string[] {
  const b = m.big.filled.size;
  const s = m.small.filled.size;
  const others = (side: HistorySide) => side.fill.filled.length - 1;
  const fillLine = (name: string, f: FillReport) =>
    `      ${name} store: filled in ${(f.totalMs / 1000).toFixed(0)} s (${Object.entries(f.ms)
      .map(([k, v]) => `${k} ${(v / 1000).toFixed(0)} s`)
      .join(', ')}); ${Object.entries(f.written)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`;
  const out = [
    `  (m) History: the same routes on a workspace with ${b.jobs} jobs, ${b.ledger} ledger rows, ${b.engrams} engrams over ${b.traces} traces,`,
    `      ${b.interventions} interventions and ${b.chunks} chunks (big, ${others(m.big)} other tenants with ${s.jobs} of each in its store) and on one with`,
    `      ${s.jobs} of each, ${s.traces} traces (small, ${others(m.small)} such tenants beside it), each side an API over its own database on the same FerretDB`,
    fillLine('big', m.big.fill),
    fillLine('small', m.small.fill),
    '      written through services.usage.record (ledger), services.interventions.create (the timed public link) and POST /v1/budgets;',
    "      jobs, traces, engrams + places, other interventions, memories, assets, artifacts, chunks inserted directly (insertMany, the platform's document types)",
    `      p50 of up to ${SAMPLES} requests after a warm-up, alternating small and big; per request ${REQUEST_TIMEOUT_MS / 1000} s at most; timing phase bounded at ${(m.boundMs / 60_000).toFixed(0)} min (took ${(m.totalMs / 1000).toFixed(0)} s)`,
    '',
    `      ${'route'.padEnd(50)} ${'p50 small'.padStart(10)} ${'p50 big'.padStart(10)} ${'ratio'.padStart(7)}  goal ≤ ${AIM_RATIO}`,
  ];
  for (const r of m.routes) {
    const ratio = r.small !== null && r.big !== null ? r.big / r.small : null;
    const bigTimedOut = r.big === null && !!r.note?.includes('big: >');
    const verdict = ratio !== null ? (ratio <= AIM_RATIO ? 'met' : 'NOT met') : bigTimedOut ? 'NOT met' : '—';
    out.push(
      `      ${r.route.padEnd(50)} ${cell(r.small, r.note, 'small').padStart(10)} ${cell(r.big, r.note, 'big').padStart(10)} ${(ratio === null ? '—' : ratio.toFixed(2)).padStart(7)}  ${verdict}`,
    );
  }
  const notes = m.routes.filter((r) => r.note && !r.note.includes('>')).map((r) => `${r.route}: ${r.note}`);
  if (notes.length) out.push('', '      notes:', ...notes.map((n) => `        ${n}`));
  if (m.undrained)
    out.push(
      `      ${m.undrained} abandoned request(s) were still running on the API when the bench moved on (figures after them may be high)`,
    );
  return out;
}
