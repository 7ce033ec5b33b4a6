/**
 * `npm run bench`: what the platform adds on top of the model provider and of Temporal itself.
 *
 * One run, one set of services, one scripted OpenAI-compatible provider (test/support/scripted-openai.ts),
 * the real Koa app on port 0 (startTestApp) and a real worker process (spawnWorkerProcess):
 *
 * (a) Time to first token: a neuron invoke through the API (invoke + job stream), and the same neuron
 *     through the OpenAI-compatible endpoint (`POST /v1/openai/chat/completions`, `stream: true`),
 *     versus the same scripted reply streamed straight from the provider by the real openai adapter.
 *     Shows the latency the platform adds on each route.
 * (b) Throughput: trivial neuron runs completed per second versus a bare one-activity workflow on the
 *     same Temporal server (scripts/bench-workflows.ts, its own worker and task queue).
 * (c) Pathway per-node overhead: a 20-node linear pathway's median run time divided by 20, versus
 *     one bare one-activity workflow run.
 * (r) Console (scripts/bench-console.ts): bytes transferred (gzip) on the first load of /console and for
 *     a run page's graph; the time from a stream entry written to its node's colour changing in the page
 *     (Chromium; median over 50 entries).
 * (q) Pathway parallelism (scripts/bench-pathways.ts): a 20-way fan-out of 1 s delays into a join ÷ one
 *     1 s delay (aim ≤ 1.3); a map of 100 items at concurrency 10 over a 200 ms provider ÷ (10 × one item) (aim ≤ 1.5).
 * (d) A realistic provider (the simulator: slow, different on every call, failing mid-stream).
 * (e) Search (scripts/bench-search.ts): the embedded index and Weaviate at 100k chunks, recall, BM25 agreement,
 *     build time and memory, nDCG@10 on the labelled set over the spec documents, browse, tree and grep on
 *     Weaviate at 2,000 and 20,000 memories (scripts/bench-search-browse.ts), and API start-up
 *     (health, first search, RSS) with 100k and 1M chunks in the store on both homes.
 * (f) Stakeholder maps (scripts/bench-stakeholder-maps.ts): patch, live read, diff and briefing.
 * (g) Budget check: time to first token of runs covered by three budgets (docs/usage.md) versus
 *     runs covered by none, interleaved run by run so both see the same machine.
 * (h) Streaming at scale: STREAM_RUNS concurrent streaming neuron runs, each read by its own SSE reader
 *     on GET /v1/jobs/:id/stream, against the scripted provider streaming STREAM_TOKENS tokens, one every
 *     STREAM_TOKEN_MS ms. Tokens per second delivered to the readers ÷ tokens per second emitted by the
 *     provider, and the delay of each token from the provider's socket write to the reader's parse.
 * (i) Memory: resident memory (RSS) of the API and of the worker process, in the first second after a run,
 *     idle (IDLE_SETTLE_MS after the last run, once V8 has shrunk the heap) and at peak during (h).
 *     Both run compiled, as in production (`npm run build`: `node dist/api/server.js`, and
 *     `node dist/worker/index.js` with the prebuilt workflow bundle), each in a process of its own,
 *     so the figures are theirs alone (VmRSS); the provider and the readers live in the bench process.
 *
 * (j) Round trips per run: MongoDB commands the API and the worker send for one trivial run on a fresh
 *     trace (cortex_mongo_commands_total, read from both processes' metrics), split into reads and
 *     writes, and the Redis commands served meanwhile (INFO commandstats, every client).
 * (k) Soak: BENCH_SOAK_MINUTES (10) of streaming runs at a fixed rate (BENCH_SOAK_RATE per second, 1), readers dropping and resuming, against
 *     a compiled API and worker started for it; their RSS over time and the slope fitted after SOAK_WARMUP_MS (MB/min).
 * (o) Usage at scale (scripts/bench-usage.ts): GET /v1/usage and the budget check with 1,000 and with
 *     100,000 ledger rows (BENCH_USAGE_SMALL, BENCH_USAGE_LARGE); the ratio says whether they grow with the ledger (aim ≤ 1.5).
 * (l) Stored history: a continuing conversation (RUNS_L runs on one trace, each run reading its history
 *     and appending its reply) and GET /v1/traces/:id/messages, timed before and after BENCH_HISTORY
 *     (20,000) engrams of other traces are written into the store; the ratio after ÷ before says
 *     whether a run slows down as the platform's data grows (aim ≤ 1.2).
 * (s) Stream writer (scripts/bench-streams.ts): entries per second appended through src/streams.ts by 50
 *     concurrent writers (job streams' fenced script, and the resource feed's append), on one Redis and on
 *     a local 3-master Redis Cluster (REDIS_CLUSTER_NODES, or started for it), side by side.
 * (t) Noisy neighbour (scripts/bench-noisy.ts): workspace B starts BENCH_NOISY_RUNS (500) streaming runs at once
 *     against the provider simulator, retrying starts refused past its share of runs after Retry-After;
 *     meanwhile workspace A's invoke time to first token, a pathway run's time to completion and a search
 *     answer, idle vs under the flood (median and max), each with whether it stays within 2× of idle.
 *     Against a compiled API with the default per-workspace shares (BENCH_NOISY_SHARE sets the runs share).
 * (p) Lists (scripts/bench-lists.ts, alone: `npm run bench:lists`): pages of jobs, traces and
 *     interventions, the summary and a public token at 1,000 and at 100,000 rows (aim: ratio ≤ 1.5).
 * (m) History (scripts/bench-history.ts): a workspace filled with a realistic history (100,000 ledger
 *     rows, 100,000 jobs, 100,000 engrams over 10,000 traces, 20,000 interventions, 50,000 chunks;
 *     BENCH_HISTORY_SCALE scales it, e.g. 0.1) in one store and one with 1,000 of each in another,
 *     each beside two small tenants, each served by its own in-process API; every list, aggregate,
 *     search and the per-turn budget check timed on both over HTTP: p50 small, p50 big and the
 *     ratio (aim ≤ 1.5). Its timing phase is bounded by BENCH_HISTORY_MINUTES (30), each request by 30 s;
 *     BENCH_HISTORY_ROUTES=usage,jobs times only the routes whose label contains one of those words.
 *
 * Sections (a)–(g) and (j) use an API inside the bench process (startTestApp: its registry, store
 * clients and Temporal client are read directly); (h), (i) and (k) use the compiled API process.
 * Every section's worker is the compiled one. The bench builds dist/ first (about a minute).
 *
 * BENCH_ONLY=h,i (comma-separated letters) runs only those sections; (i) is measured during (h), so
 * selecting either runs both. Unset: every section. `BENCH_ONLY=h,i npm run bench` takes about two
 * minutes with the build; the full bench takes the soak's ten minutes more than its other sections.
 * The summary states the machine the bench ran on (CPUs, model, memory, Node version).
 *
 * Services: a service whose URL variable (MONGODB_URI, REDIS_URL, TEMPORAL_ADDRESS) is set is used as
 * is; missing ones are started by scripts/embedded.ts on free loopback ports with data in a temp folder
 * that is removed at the end. The bench writes into its own database (`cortex_bench_<tag>`, dropped at
 * the end) and Redis prefix (its keys deleted at the end), so it can run against the dev services.
 *
 * Exit code: 0 when every measure ran (whether or not the aims are met), 1 on a real error.
 */
import { loadSummary, measureLoad, type LoadResult } from './bench-load.js';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createOpenAIProvider } from '../src/llm/openai.js';
import { ConfigSchema } from '../src/config.js';
import { buildWorkspace, makeClient, startTestApp, type TestApp, type TestClient } from '../test/support/app.js';
import { measureConsole, sectionR, type ConsoleResult } from './bench-console.js';
import { measurePathwayParallel, sectionQ, type ParallelResult, type StoreCounters } from './bench-pathways.js';
import {
  lastUserText,
  startScriptedOpenAI,
  type ScriptedOpenAI,
  type ScriptedReply,
  type ScriptedRequestBody,
} from '../test/support/scripted-openai.js';
import { createSimulation } from '../test/support/provider-sim.js';
import { createParser } from 'eventsource-parser';
import { dataOf, readSse, shownReply } from '../test/support/sse.js';
import { spawnApiProcess, spawnWorkerProcess } from '../test/support/worker.js';
import { build } from './build.js';
import { createBenchActivities } from './bench-activities.js';
import { measureSearch, searchSummary, type SearchBenchResult } from './bench-search.js';
import type { bareOneActivity } from './bench-workflows.js';
import { freePorts, startEmbedded, type EmbeddedServices } from './embedded.js';
import { metrics, registry } from '../src/metrics.js';
import { deleteKeys, scanKeys } from '../src/redis.js';
import { formatStakeholderMaps, measureStakeholderMaps, type StakeholderMapFigures } from './bench-stakeholder-maps.js';
import { formatUsageScale, measureUsageScale, type UsageScaleFigures } from './bench-usage.js';
import { measureStreamWriter, streamWriterSummary, type StreamWriterResult } from './bench-streams.js';
import { measureNoisyNeighbour, noisySummary, type NoisyResult } from './bench-noisy.js';
import { formatLists, measureLists, type ListFigures } from './bench-lists.js';
import {
  fillHistory,
  historySummary,
  measureHistory,
  REQUEST_TIMEOUT_MS,
  scaledHistory,
  SMALL_HISTORY,
  type HistoryMeasure,
} from './bench-history.js';

// ─── Parameters (bounded: the whole run takes a minute or two on 2 cores) ──────────────────────

/** Model of the benchmark neurons; the `openai` provider points at the scripted server. */
const MODEL = 'openai/gpt-4o-mini';
/** Untimed runs before each measure: JIT, connection pools, Temporal caches. */
const WARMUP = 3;
/** (a) Sequential invokes (and direct provider calls) measured for time to first token. */
const TTFT_RUNS = 30;
/** (a) The reply both paths stream: several chunks, no artificial delay. */
const TTFT_REPLY: ScriptedReply = {
  chunks: ['Hello', ' from', ' the', ' scripted', ' provider.'],
  usage: { prompt_tokens: 20, completion_tokens: 5 },
};
/** (b) Runs per throughput measure and how many are in flight at once. */
const TPUT_RUNS = 60;
const TPUT_CONCURRENCY = 8;
/** (b) The runs of each side are made in this many alternating rounds (platform, then bare). */
const TPUT_ROUNDS = 6;
/** (b) A trivial run: one short chunk. */
const TPUT_REPLY: ScriptedReply = { chunks: ['ok'], usage: { prompt_tokens: 10, completion_tokens: 1 } };
/** (c) Nodes of the linear pathway (start + transforms + output) and its sequential runs. */
const PATHWAY_NODES = 20;
const PATHWAY_RUNS = 10;
/** (c) Sequential bare one-activity runs whose median is the per-node yardstick. */
const BARE_SEQ_RUNS = 20;
/** (j) Sequential trivial runs whose store commands are counted. */
const RT_RUNS = 20;
/** (l) Runs on one trace per phase, and the engrams of other traces stored between the phases. */
const RUNS_L = 12;
const HISTORY_ROWS = Number(process.env.BENCH_HISTORY ?? 20_000);
const AIM_HISTORY_RATIO = 1.2;
/** (m) Size of the big workspace's history (1: the issue's figures) and the bound on its timing phase. */
const HISTORY_SCALE = Number(process.env.BENCH_HISTORY_SCALE ?? 1);
const HISTORY_BOUND_MIN = Number(process.env.BENCH_HISTORY_MINUTES ?? 30);
/** Longest a single run may take before the bench reports an error. */
const RUN_TIMEOUT_MS = 60_000;
/** Aims from the performance brief, printed next to the figures. */
const AIM_ADDED_TTFT_MS = 30;
const AIM_TPUT_RATIO = 0.5;
/**
 * (h) Concurrent streaming runs (one SSE reader each), tokens per reply and the provider's pace.
 * Starting a hundred runs takes the platform 15–20 s on 2 cores, so each run streams for 25 s
 * to have (nearly) all hundred streaming at once; the summary reports the peak actually reached.
 */
const STREAM_RUNS = 100;
const STREAM_TOKENS = 500;
const STREAM_TOKEN_MS = 50;
/** (h) The provider thinks this long before its first token, so most readers are attached before tokens flow. */
const STREAM_FIRST_TOKEN_MS = 500;
/** (h) Aim: delivered ÷ emitted tokens per second. (i) Aims for the API's RSS, MB. */
const AIM_STREAM_RATIO = 0.98;
const AIM_API_IDLE_MB = 150;
const AIM_API_LOAD_MB = 400;
/** (i) Memory sampling period during (h), ms. */
const MEM_SAMPLE_MS = 200;
/**
 * (i) Quiet time before the settled idle figure. V8 shrinks the heap of a process whose allocation
 * rate has dropped (its memory reducer) several seconds after the last work: measured on this
 * machine, the API's RSS fell from 175 to 130 MB 7–8 s after the last run and stayed there.
 */
const IDLE_SETTLE_MS = 15_000;

const say = (line: string): void => console.log(`[bench] ${line}`);
const fmt = (ms: number): string => ms.toFixed(1);
/** Wall clock in epoch ms with sub-ms precision, comparable to Temporal's and Redis's timestamps on this host. */
const epochNow = (): number => performance.timeOrigin + performance.now();

// ─── Statistics ─────────────────────────────────────────────────────────────────────────────

/** Median: the middle value (mean of the two middle ones for an even count). */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** 90th percentile by nearest rank: 9 in 10 samples are at or below it. */
function p90(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.9 * s.length) - 1)];
}

/** Percentile `q` (0–1) by nearest rank. */
function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** Runs `fn(0..count-1)` with at most `concurrency` in flight; rejects on the first failure. */
async function pool(count: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
}

// ─── Platform helpers ─────────────────────────────────────────────────────────────────────────

type Workspace = Awaited<ReturnType<typeof buildWorkspace>>;

/** What one platform run looked like from the client: its job id, first token and terminal event. */
interface RunTrace {
  jobId: string;
  /** Epoch ms just before the POST. */
  startEpoch: number;
  /** performance.now() just before the POST, when the POST answered, at the first token and at the end. */
  t0: number;
  accepted: number;
  firstToken?: number;
  done: number;
  /** Every SSE event of the job stream, with its Redis id (`<ms>-<seq>`). */
  events: { id?: string; data: Record<string, unknown> }[];
}

/**
 * POSTs `path` (an invoke or execute), opens the job stream as soon as it answers and reads it to
 * the terminal event. Throws unless the job completed: a failed run is a real error for a bench.
 */
async function runThroughApi(
  app: TestClient,
  ws: Workspace,
  path: string,
  body: Record<string, unknown>,
  headers?: Record<string, string>,
): Promise<RunTrace> {
  const startEpoch = epochNow();
  const t0 = performance.now();
  const res = await app.post(path, ws.key, body, headers);
  const accepted = performance.now();
  if (res.status !== 202) throw new Error(`POST ${path} answered ${res.status}: ${res.text}`);
  const jobId = String(res.body.job_id);
  let firstToken: number | undefined;
  let seen = 0;
  let terminal = false;
  const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
    headers: { authorization: `Bearer ${ws.key}` },
    timeoutMs: RUN_TIMEOUT_MS,
    until: (events) => {
      for (; seen < events.length; seen++) {
        const type = dataOf(events[seen]).type;
        if (type === 'token' && firstToken === undefined) firstToken = performance.now();
        if (type === 'complete' || type === 'error') terminal = true;
      }
      return terminal;
    },
  });
  const done = performance.now();
  if (sse.status !== 200) throw new Error(`stream of job ${jobId} answered ${sse.status}: ${sse.body}`);
  const events = sse.events.map((e) => ({ id: e.id, data: dataOf(e) }));
  const last = events.at(-1)?.data;
  if (last?.type !== 'complete')
    throw new Error(
      `job ${jobId} did not complete within ${RUN_TIMEOUT_MS} ms (last event: ${JSON.stringify(last ?? null)})`,
    );
  return { jobId, startEpoch, t0, accepted, firstToken, done, events };
}

/** Creates a neuron on the scripted provider in the bench workspace. */
async function createNeuron(app: TestClient, ws: Workspace, name: string): Promise<string> {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: MODEL, system_prompt: `You are ${name}.` },
  });
  if (r.status !== 201) throw new Error(`creating neuron ${name} answered ${r.status}: ${r.text}`);
  return String(r.body.id);
}

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];
type ProtoTime = HistoryEvent['eventTime'];

/** A protobuf Timestamp (Long or number seconds) as epoch ms. */
function tsMs(ts: ProtoTime): number {
  if (!ts) return NaN;
  const s = ts.seconds;
  const seconds = s == null ? 0 : typeof s === 'number' ? s : s.toNumber();
  return seconds * 1000 + (ts.nanos ?? 0) / 1e6;
}

/**
 * Where one invoke's time to first token went, from the client's clock, the first token's Redis
 * stream id (the ms the API's first turn wrote it) and the workflow history (server timestamps),
 * all on this host. The first three segments add up to the platform TTFT.
 */
interface TtftBreakdown {
  /** POST sent → 202 read: auth, the neuron, the run's stores (job, human turn, run context). */
  apiToAccepted: number;
  /** 202 → first token written to the job stream by the API's first turn (it began before the 202). */
  acceptedToEmit: number;
  /** First token written → read by the client's SSE reader (which connected after the 202). */
  emitToClient: number;
  /** Off the path: POST sent → workflow started (the start follows the 202). */
  apiToStart: number;
  /** Off the path: the run's first workflow task, picked up after the start, and run by the worker. */
  taskDispatch: number;
  taskRun: number;
}

async function ttftBreakdown(app: TestApp, run: RunTrace): Promise<TtftBreakdown> {
  const history = await app.deps.temporal.client.workflow.getHandle(run.jobId).fetchHistory();
  const at: Record<string, number> = {};
  for (const e of history.events ?? []) {
    const t = tsMs(e.eventTime);
    if (e.workflowExecutionStartedEventAttributes) at.start = t;
    if (e.workflowTaskStartedEventAttributes) at.taskStarted ??= t;
    if (e.workflowTaskCompletedEventAttributes) at.taskCompleted ??= t;
  }
  const token = run.events.find((e) => e.data.type === 'token');
  const emitted = Number(String(token?.id ?? 'NaN-0').split('-')[0]);
  const acceptedEpoch = run.startEpoch + (run.accepted - run.t0);
  const firstTokenEpoch = run.startEpoch + (run.firstToken! - run.t0);
  return {
    apiToAccepted: run.accepted - run.t0,
    acceptedToEmit: emitted - acceptedEpoch,
    emitToClient: firstTokenEpoch - emitted,
    apiToStart: at.start - run.startEpoch,
    taskDispatch: at.taskStarted - at.start,
    taskRun: at.taskCompleted - at.taskStarted,
  };
}

// ─── (a) Time to first token ──────────────────────────────────────────────────────────────────

/** Median and p90 of a series of milliseconds. */
interface Spread {
  median: number;
  p90: number;
}
const spread = (xs: number[]): Spread => ({ median: median(xs), p90: p90(xs) });

interface TtftResult {
  platform: Spread;
  /** The same neuron through POST /v1/openai/chat/completions with stream: true, to its first content chunk. */
  openai: Spread;
  direct: Spread;
  addedAtMedian: number;
  openaiAddedAtMedian: number;
  accepted: Spread;
  breakdown: TtftBreakdown;
}

/**
 * Time to first token.
 * - Platform: from just before `POST /v1/neurons/:id/invoke` to the first `token` event read on
 *   `GET /v1/jobs/:id/stream` (opened as soon as the invoke answers; that time is included).
 *   Each run is read to its `complete` event before the next starts (sequential).
 * - OpenAI-compatible: from just before `POST /v1/openai/chat/completions` (`model` the neuron's
 *   id, `stream: true`) to the first `chat.completion.chunk` carrying content, read from the same
 *   response; the response is read to `data: [DONE]` before the next run.
 * - Direct: from just before `createOpenAIProvider({ baseURL }).chat()` to its first onToken call,
 *   same scripted reply, same HTTP server. The difference is what the platform adds.
 * The three are measured in turn within each round (direct, invoke, OpenAI-compatible), so a slow
 * spell of this shared machine falls on all of them alike.
 */
async function measureTtft(app: TestApp, ws: Workspace, llm: ScriptedOpenAI): Promise<TtftResult> {
  llm.setDefault(() => TTFT_REPLY);
  const neuronId = await createNeuron(app, ws, 'bench-ttft');
  const direct = createOpenAIProvider({ baseURL: llm.baseURL, apiKey: 'bench' });

  const directOnce = async (i: number): Promise<number> => {
    const t0 = performance.now();
    let first: number | undefined;
    await direct.chat(
      {
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'You are bench-ttft.' },
          { role: 'user', content: `ttft ${i}` },
        ],
      },
      () => void (first ??= performance.now()),
    );
    if (first === undefined) throw new Error('the direct provider call streamed no token');
    return first - t0;
  };
  const platformOnce = async (i: number): Promise<RunTrace> => {
    const run = await runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, { message: `ttft ${i}`, stream: true });
    if (run.firstToken === undefined) throw new Error(`job ${run.jobId} completed without a token event`);
    return run;
  };
  const openaiOnce = async (i: number): Promise<number> => {
    const t0 = performance.now();
    const res = await fetch(`${app.url}/v1/openai/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: neuronId, stream: true, messages: [{ role: 'user', content: `ttft ${i}` }] }),
    });
    if (res.status !== 200 || !res.body)
      throw new Error(`chat/completions answered ${res.status}: ${await res.text()}`);
    let first: number | undefined;
    let done = false;
    const parser = createParser({
      onEvent: (e) => {
        if (e.data === '[DONE]') return void (done = true);
        const chunk = JSON.parse(e.data) as { choices?: { delta?: { content?: string } }[] };
        if (first === undefined && chunk.choices?.[0]?.delta?.content) first = performance.now();
      },
    });
    const decoder = new TextDecoder();
    for await (const part of res.body) parser.feed(decoder.decode(part as Uint8Array, { stream: true }));
    if (first === undefined || !done) throw new Error('the OpenAI-compatible stream ended without content or [DONE]');
    return first - t0;
  };

  say(
    `(a) time to first token: warm-up ${WARMUP} + ${TTFT_RUNS} direct provider calls, sequential invokes and OpenAI-compatible completions, in turn`,
  );
  for (let i = 0; i < WARMUP; i++) {
    await directOnce(i);
    await platformOnce(i);
    await openaiOnce(i);
  }
  const directMs: number[] = [];
  const openaiMs: number[] = [];
  const runs: RunTrace[] = [];
  // In turn, so a slow spell of this shared machine falls on every side alike.
  for (let i = 0; i < TTFT_RUNS; i++) {
    directMs.push(await directOnce(i));
    runs.push(await platformOnce(i));
    openaiMs.push(await openaiOnce(i));
  }
  const platformMs = runs.map((r) => r.firstToken! - r.t0);

  // History reads happen after all timed runs, so they do not disturb them.
  const parts = await Promise.all(runs.map((r) => ttftBreakdown(app, r)));
  const breakdown = Object.fromEntries(
    (Object.keys(parts[0]) as (keyof TtftBreakdown)[]).map((k) => [k, median(parts.map((p) => p[k]))]),
  ) as unknown as TtftBreakdown;

  const result: TtftResult = {
    platform: spread(platformMs),
    openai: spread(openaiMs),
    direct: spread(directMs),
    addedAtMedian: median(platformMs) - median(directMs),
    openaiAddedAtMedian: median(openaiMs) - median(directMs),
    accepted: spread(runs.map((r) => r.accepted - r.t0)),
    breakdown,
  };
  say(`(a) direct   median ${fmt(result.direct.median)} ms  p90 ${fmt(result.direct.p90)} ms`);
  say(
    `(a) platform median ${fmt(result.platform.median)} ms  p90 ${fmt(result.platform.p90)} ms  (invoke POST alone: median ${fmt(result.accepted.median)} ms)`,
  );
  say(
    `(a) openai   median ${fmt(result.openai.median)} ms  p90 ${fmt(result.openai.p90)} ms  (POST /v1/openai/chat/completions, stream: true)`,
  );
  say(
    `(a) added at the median: invoke ${fmt(result.addedAtMedian)} ms, OpenAI-compatible ${fmt(result.openaiAddedAtMedian)} ms`,
  );
  return result;
}

// ─── (j) Round trips per run ──────────────────────────────────────────────────────────────────

interface RoundTrips {
  runs: number;
  /** Per run: MongoDB commands sent by the API and by the worker, split into reads and writes. */
  api: { reads: number; writes: number; other: number };
  worker: { reads: number; writes: number; other: number };
  /** Per run: Redis commands (server side, every client: API, worker, the bench's SSE readers). */
  redis: number;
  /** Per run, every process: commands by name (find, insert, findAndModify, …). */
  byCommand: Record<string, number>;
}

const READ_COMMANDS = new Set(['find', 'aggregate', 'count', 'getMore', 'distinct']);
const WRITE_COMMANDS = new Set(['insert', 'update', 'delete', 'findAndModify']);

/** cortex_mongo_commands_total by command, from Prometheus text. */
function mongoCounts(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^cortex_mongo_commands_total\{command="([^"]+)"\} (\S+)$/gm))
    out.set(m[1], Number(m[2]));
  return out;
}

/** Store commands sent so far: MongoDB by the API (this process) and the worker (its metrics port), Redis in all. */
async function storeCounters(app: TestApp, workerMetricsUrl: string): Promise<StoreCounters> {
  return {
    api: mongoCounts(await registry.metrics()),
    worker: mongoCounts(await (await fetch(workerMetricsUrl)).text()),
    ...(await redisCounts(app)),
  };
}

/** Redis commands served so far (INFO commandstats, every client included): in all, and by command. */
async function redisCounts(app: TestApp): Promise<{ redis: number; redisByCommand: Map<string, number> }> {
  const info = await app.deps.redis.info('commandstats');
  const redisByCommand = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) redisByCommand.set(m[1], Number(m[2]));
  return { redis: [...redisByCommand.values()].reduce((a, b) => a + b, 0), redisByCommand };
}

/**
 * Reads and writes per run: RT_RUNS sequential trivial invokes on a fresh trace, each read to its
 * `complete` event; counters are read before and after (the API's registry in this process, the
 * worker's on its metrics port, Redis's commandstats) and divided by the run count. Nothing else
 * runs meanwhile, so the deltas are the runs' own (the INFO calls themselves are subtracted).
 */
async function measureRoundTrips(
  app: TestApp,
  ws: Workspace,
  llm: ScriptedOpenAI,
  workerMetricsUrl: string,
): Promise<RoundTrips> {
  llm.setDefault(() => TPUT_REPLY);
  const neuronId = await createNeuron(app, ws, 'bench-round-trips');
  const invoke = (i: number) => runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, { message: `rt ${i}` });
  for (let i = 0; i < WARMUP; i++) await invoke(i);
  say(`(j) round trips: ${RT_RUNS} sequential trivial runs, counting store commands`);
  const snapshot = () => storeCounters(app, workerMetricsUrl);
  // The worker finishes a run after its `complete` entry (dropping the run log): let it settle.
  const settle = () => new Promise((r) => setTimeout(r, 300));
  await settle();
  const before = await snapshot();
  for (let i = 0; i < RT_RUNS; i++) await invoke(i);
  await settle();
  const after = await snapshot();
  const split = (a: Map<string, number>, b: Map<string, number>) => {
    const r = { reads: 0, writes: 0, other: 0 };
    for (const [cmd, n] of a) {
      const d = (n - (b.get(cmd) ?? 0)) / RT_RUNS;
      if (READ_COMMANDS.has(cmd)) r.reads += d;
      else if (WRITE_COMMANDS.has(cmd)) r.writes += d;
      else r.other += d;
    }
    return r;
  };
  const byCommand: Record<string, number> = {};
  for (const [which, a] of [
    ['api', after.api],
    ['worker', after.worker],
  ] as const) {
    for (const [cmd, n] of a) byCommand[cmd] = (byCommand[cmd] ?? 0) + (n - (before[which].get(cmd) ?? 0)) / RT_RUNS;
  }
  const result: RoundTrips = {
    runs: RT_RUNS,
    api: split(after.api, before.api),
    worker: split(after.worker, before.worker),
    redis: (after.redis - before.redis - 1) / RT_RUNS,
    byCommand,
  };
  say(
    `(j) per run: API ${fmt(result.api.reads)} reads + ${fmt(result.api.writes)} writes, worker ${fmt(result.worker.reads)} reads + ${fmt(result.worker.writes)} writes, Redis ${fmt(result.redis)} commands`,
  );
  return result;
}

// ─── (l) Runs on a store that holds a history ─────────────────────────────────────────────────

interface HistoryResult {
  rows: number;
  fillMs: number;
  before: { run: Spread; read: Spread };
  after: { run: Spread; read: Spread };
  runRatio: number;
  readRatio: number;
}

/**
 * A continuing conversation on an empty store and on one holding HISTORY_ROWS engrams of other
 * traces (another workspace): each phase runs RUNS_L invokes on one fresh trace, sequentially (each
 * run reads the trace's history and appends its reply), timing invoke → `complete`, and reads the
 * trace's messages after each run. The engrams are written straight into the store in batches.
 */
async function measureStoredHistory(app: TestApp, ws: Workspace, llm: ScriptedOpenAI): Promise<HistoryResult> {
  llm.setDefault(() => TPUT_REPLY);
  const neuronId = await createNeuron(app, ws, 'bench-history');
  const phase = async (label: string) => {
    const traceId = randomUUID();
    const runs: number[] = [];
    const reads: number[] = [];
    for (let i = 0; i < WARMUP + RUNS_L; i++) {
      const r = await runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, {
        message: `turn ${i}`,
        trace_id: traceId,
      });
      const t0 = performance.now();
      const m = await app.get(`/v1/traces/${traceId}/messages`, ws.key);
      if (m.status !== 200) throw new Error(`GET messages answered ${m.status}`);
      if (i >= WARMUP) {
        runs.push(r.done - r.t0);
        reads.push(performance.now() - t0);
      }
    }
    say(`(l) ${label}: run median ${fmt(median(runs))} ms, history read median ${fmt(median(reads))} ms`);
    return { run: spread(runs), read: spread(reads) };
  };
  say(`(l) stored history: ${RUNS_L} runs on one trace, before and after ${HISTORY_ROWS} engrams of other traces`);
  const before = await phase('empty store');
  const fillStarted = performance.now();
  const engrams = app.deps.db.collection('engrams');
  const otherWs = randomUUID();
  for (let from = 0; from < HISTORY_ROWS; from += 1000) {
    await engrams.insertMany(
      Array.from({ length: Math.min(1000, HISTORY_ROWS - from) }, (_, k) => {
        const n = from + k;
        return {
          _id: randomUUID() as never,
          workspaceId: otherWs,
          traceId: `history-${Math.floor(n / 20)}`,
          seq: (n % 20) + 1,
          content: { type: n % 2 ? 'neuron' : 'human', content: `stored turn ${n}: ${'lorem ipsum '.repeat(20)}` },
          contentHash: '',
          metadata: '{}',
          sourceType: 'user',
          sourceId: null,
          targetType: null,
          targetId: null,
          traceType: 'thread',
          memoryIds: [],
          jobId: null,
          createdAt: new Date(),
        };
      }),
    );
  }
  const fillMs = performance.now() - fillStarted;
  say(`(l) wrote ${HISTORY_ROWS} engrams in ${fmt(fillMs)} ms`);
  const after = await phase(`${HISTORY_ROWS} engrams stored`);
  return {
    rows: HISTORY_ROWS,
    fillMs,
    before,
    after,
    runRatio: after.run.median / before.run.median,
    readRatio: after.read.median / before.read.median,
  };
}

// ─── (m) Every list, aggregate and per-turn check on a realistic history ───────────────────────

/**
 * Two APIs in the bench process, each over a database of its own on the same FerretDB: the
 * small store holds a workspace with 1,000 of each kind of row and two other tenants like it;
 * the big store a workspace with the realistic history (scaled by BENCH_HISTORY_SCALE) and two
 * small tenants. Each timed workspace gets a neuron on the scripted provider covered by three
 * monthly budgets (POST /v1/budgets); then scripts/bench-history.ts times the routes on both.
 * No worker serves these APIs: the per-turn check is timed to the first token, which the API's
 * first turn streams (FIRST_TURN_IN_API) after the run's budget check.
 */
async function measureHistorySection(
  llm: ScriptedOpenAI,
  onCleanup: (fn: () => Promise<unknown>) => void,
): Promise<HistoryMeasure> {
  const tag = randomUUID().slice(0, 8);
  const start = async (name: string) => {
    const a = await startTestApp({
      OPENAI_BASE_URL: llm.baseURL,
      OPENAI_API_KEY: 'bench',
      MONGODB_DB: `cortex_bench_${tag}_${name}`,
      RATE_LIMIT_POINTS: 1_000_000,
    });
    onCleanup(() => a.close());
    onCleanup(() => dropRedisKeys(a));
    onCleanup(() => a.deps.db.dropDatabase());
    return a;
  };
  const [smallApp, bigApp] = [await start('small'), await start('big')];
  const size = scaledHistory(HISTORY_SCALE);
  say(
    `(m) history: the big store gets a workspace with ${size.jobs} jobs, ${size.ledger} ledger rows, ${size.engrams} engrams over ${size.traces} traces, ${size.interventions} interventions, ${size.chunks} chunks (scale ${HISTORY_SCALE}); every other workspace ${SMALL_HISTORY.jobs} of each`,
  );
  const fillStore = async (app: TestApp, first: typeof SMALL_HISTORY) => {
    const wss = await Promise.all(Array.from({ length: 3 }, () => buildWorkspace(app)));
    const fill = await fillHistory(
      app.deps.db,
      app.services,
      wss.map((ws, k) => ({ ws, size: k === 0 ? first : SMALL_HISTORY })),
      (l) => say(`(m) ${l}`),
    );
    say(`(m) ${first === SMALL_HISTORY ? 'small' : 'big'} store filled in ${fmt(fill.totalMs / 1000)} s`);
    return { ws: wss[0], fill };
  };
  const small = await fillStore(smallApp, SMALL_HISTORY);
  const big = await fillStore(bigApp, size);
  llm.setDefault(() => TTFT_REPLY);
  const sides = [
    { app: smallApp, ws: small.ws },
    { app: bigApp, ws: big.ws },
  ];
  const neurons = (await Promise.all(sides.map(({ app, ws }) => createNeuron(app, ws, 'bench-history-m')))) as [
    string,
    string,
  ];
  for (const [k, { app, ws }] of sides.entries()) {
    for (const body of [
      { scope: 'workspace', measure: 'tokens', period: 'month', limit: 1e12 },
      { scope: 'workspace', measure: 'usd', period: 'month', limit: 1e9 },
      { scope: 'neuron', target_id: neurons[k], measure: 'tokens', period: 'month', limit: 1e12 },
    ]) {
      const r = await app.post('/v1/budgets', ws.key, body);
      if (r.status !== 201) throw new Error(`POST /v1/budgets answered ${r.status}: ${r.text}`);
    }
  }
  const appOf = new Map<string, TestApp>(sides.map((s) => [s.ws.workspaceId, s.app]));
  return measureHistory(
    { client: smallApp, fill: small.fill, filled: small.fill.filled[0] },
    { client: bigApp, fill: big.fill, filled: big.fill.filled[0] },
    {
      neurons,
      boundMs: HISTORY_BOUND_MIN * 60_000,
      log: say,
      only: (process.env.BENCH_HISTORY_ROUTES ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
      // Requests both in-process APIs have finished (their request metric), to wait for ones the bench gave up on.
      completedRequests: async () =>
        (await metrics.httpRequests.get()).values
          .filter((v) => v.metricName?.endsWith('_count'))
          .reduce((n, v) => n + v.value, 0),
      firstToken: async (w, neuronId) => {
        const app = appOf.get(w.workspaceId)!;
        const t0 = performance.now();
        const res = await app.post(`/v1/neurons/${neuronId}/invoke`, w.key, { message: 'history', stream: true });
        if (res.status !== 202) throw new Error(`invoke answered ${res.status}: ${res.text}`);
        let first: number | undefined;
        const sse = await readSse(`${app.url}/v1/jobs/${String(res.body.job_id)}/stream`, {
          headers: { authorization: `Bearer ${w.key}` },
          timeoutMs: REQUEST_TIMEOUT_MS,
          until: (events) => {
            if (first === undefined && events.some((e) => dataOf(e).type === 'token')) first = performance.now();
            return first !== undefined || events.some((e) => ['complete', 'error'].includes(String(dataOf(e).type)));
          },
        });
        if (first === undefined)
          throw new Error(
            performance.now() - t0 >= REQUEST_TIMEOUT_MS
              ? `> ${REQUEST_TIMEOUT_MS / 1000} s`
              : `job ${String(res.body.job_id)} streamed no token (status ${sse.status})`,
          );
        return first - t0;
      },
    },
  );
}

// ─── (g) What budgets cost a run ───────────────────────────────────────────────────────────────

interface BudgetResult {
  without: Spread;
  with: Spread;
  addedAtMedian: number;
}

/**
 * Budgets are checked before every model turn (sums over the usage ledger). Two workspaces, one
 * with a workspace token budget, a workspace USD budget and a neuron budget (limits far above what
 * the bench spends), one with none; invokes alternate between them, so load and caches are shared.
 */
async function measureBudgets(app: TestApp, llm: ScriptedOpenAI): Promise<BudgetResult> {
  llm.setDefault(() => TTFT_REPLY);
  const plain = await buildWorkspace(app);
  const capped = await buildWorkspace(app);
  const plainNeuron = await createNeuron(app, plain, 'bench-budget');
  const cappedNeuron = await createNeuron(app, capped, 'bench-budget');
  for (const body of [
    { scope: 'workspace', measure: 'tokens', period: 'day', limit: 1e9 },
    { scope: 'workspace', measure: 'usd', period: 'month', limit: 1e6 },
    { scope: 'neuron', target_id: cappedNeuron, measure: 'tokens', period: 'month', limit: 1e9, policy: 'fail' },
  ]) {
    const r = await app.post('/v1/budgets', capped.key, body);
    if (r.status !== 201) throw new Error(`POST /v1/budgets answered ${r.status}: ${r.text}`);
  }
  const once = async (ws: Workspace, neuronId: string, i: number): Promise<number> => {
    const run = await runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, {
      message: `budget ${i}`,
      stream: true,
    });
    if (run.firstToken === undefined) throw new Error(`job ${run.jobId} completed without a token event`);
    return run.firstToken - run.t0;
  };
  say(
    `(g) budgets: warm-up ${WARMUP} + ${TTFT_RUNS} invokes each, alternating a workspace with three budgets and one without`,
  );
  for (let i = 0; i < WARMUP; i++) {
    await once(plain, plainNeuron, i);
    await once(capped, cappedNeuron, i);
  }
  const without: number[] = [];
  const withBudgets: number[] = [];
  for (let i = 0; i < TTFT_RUNS; i++) {
    without.push(await once(plain, plainNeuron, i));
    withBudgets.push(await once(capped, cappedNeuron, i));
  }
  const result = {
    without: spread(without),
    with: spread(withBudgets),
    addedAtMedian: median(withBudgets) - median(without),
  };
  say(
    `(g) without budgets median ${fmt(result.without.median)} ms; with three budgets median ${fmt(result.with.median)} ms (added ${fmt(result.addedAtMedian)} ms)`,
  );
  return result;
}

// ─── (b) Throughput and the bare workflow ─────────────────────────────────────────────────────

/** The bare one-activity workflow: its own bundle, worker and task queue on the app's Temporal server. */
interface Bare {
  /** Starts one bareOneActivity run and waits for its result; returns its workflow id. */
  runOnce(): Promise<string>;
  stop(): Promise<void>;
}

async function startBare(app: TestApp, bundle: Awaited<ReturnType<typeof bundleWorkflowCode>>): Promise<Bare> {
  const taskQueue = `bench-bare-${randomUUID().slice(0, 8)}`;
  const connection = await NativeConnection.connect({ address: app.config.TEMPORAL_ADDRESS });
  const worker = await Worker.create({
    connection,
    namespace: app.config.TEMPORAL_NAMESPACE,
    taskQueue,
    workflowBundle: bundle,
    activities: createBenchActivities(),
  });
  const running = worker.run();
  const client = app.deps.temporal.client;
  return {
    async runOnce() {
      // Started by name with the function's type: this module never loads workflow code.
      const workflowId = `bench-bare-${randomUUID()}`;
      const out = await client.workflow.execute<typeof bareOneActivity>('bareOneActivity', { taskQueue, workflowId });
      if (out !== 'ok') throw new Error(`bareOneActivity returned ${JSON.stringify(out)}`);
      return workflowId;
    },
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

interface ThroughputResult {
  platformPerS: number;
  barePerS: number;
  ratio: number;
  /** CPU time per completed run, ms, by process (this process and its descendants), for each side. */
  cpuPerRun: { platform: Record<string, number>; bare: Record<string, number> };
}

/** CPU seconds (user + system) so far of this process and every descendant, keyed by a readable name. */
function treeCpu(names: Map<number, string>): Map<string, number> {
  const procs: { pid: number; ppid: number; comm: string; s: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const rest = stat.slice(close + 2).split(' ');
      procs.push({
        pid: Number(entry),
        ppid: Number(rest[1]),
        comm: stat.slice(stat.indexOf('(') + 1, close),
        s: (Number(rest[11]) + Number(rest[12])) / 100,
      });
    } catch {
      /* the process ended meanwhile */
    }
  }
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const inTree = (p: { pid: number; ppid: number }): boolean => {
    for (let q: { pid: number; ppid: number } | undefined = p; q; q = byPid.get(q.ppid))
      if (q.pid === process.pid) return true;
    return false;
  };
  const out = new Map<string, number>();
  for (const p of procs) {
    if (!inTree(p)) continue;
    const name = names.get(p.pid) ?? p.comm;
    out.set(name, (out.get(name) ?? 0) + p.s);
  }
  return out;
}

/** CPU ms per run by process between two treeCpu snapshots. */
function cpuDelta(before: Map<string, number>, after: Map<string, number>, runs: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, s] of after) {
    const d = ((s - (before.get(name) ?? 0)) * 1000) / runs;
    if (d >= 0.5) out[name] = d;
  }
  return out;
}

/**
 * Throughput: completed runs per second with TPUT_CONCURRENCY in flight, wall time from the first
 * start to the last completion.
 * - Platform: invoke a neuron whose scripted reply is one short chunk, then read the job stream to
 *   its `complete` event (the job is completed in the database before that event is written).
 * - Bare: `client.workflow.execute(bareOneActivity)` on the same Temporal server.
 */
async function measureThroughput(
  app: TestApp,
  ws: Workspace,
  llm: ScriptedOpenAI,
  bare: Bare,
  workerPid: number | undefined,
): Promise<ThroughputResult> {
  const names = new Map<number, string>([
    [process.pid, 'bench process (API, bare worker, provider, clients)'],
    ...(workerPid ? [[workerPid, 'worker'] as [number, string]] : []),
  ]);
  llm.setDefault(() => TPUT_REPLY);
  const neuronId = await createNeuron(app, ws, 'bench-throughput');
  const invoke = (i: number) =>
    runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, { message: `tput ${i}` }).then(() => undefined);

  const bareOnce = () => bare.runOnce().then(() => undefined);
  say(
    `(b) throughput: warm-up ${WARMUP} of each, then ${TPUT_ROUNDS} rounds of ${TPUT_RUNS / TPUT_ROUNDS} platform runs and ${TPUT_RUNS / TPUT_ROUNDS} bare workflows, ${TPUT_CONCURRENCY} at a time`,
  );
  await pool(WARMUP, TPUT_CONCURRENCY, invoke);
  await pool(WARMUP, TPUT_CONCURRENCY, bareOnce);
  // Rounds alternate the sides, so a slow spell of this shared machine falls on both alike.
  let platformS = 0;
  let bareS = 0;
  const platformCpuS = new Map<string, number>();
  const bareCpuS = new Map<string, number>();
  const add = (into: Map<string, number>, before: Map<string, number>, after: Map<string, number>) => {
    for (const [k, v] of after) into.set(k, (into.get(k) ?? 0) + v - (before.get(k) ?? 0));
  };
  const perRound = TPUT_RUNS / TPUT_ROUNDS;
  for (let round = 0; round < TPUT_ROUNDS; round++) {
    let cpu0 = treeCpu(names);
    let t0 = performance.now();
    await pool(perRound, TPUT_CONCURRENCY, (i) => invoke(round * perRound + i));
    platformS += (performance.now() - t0) / 1000;
    add(platformCpuS, cpu0, treeCpu(names));
    cpu0 = treeCpu(names);
    t0 = performance.now();
    await pool(perRound, TPUT_CONCURRENCY, bareOnce);
    bareS += (performance.now() - t0) / 1000;
    add(bareCpuS, cpu0, treeCpu(names));
  }
  const platformCpu = cpuDelta(new Map(), platformCpuS, TPUT_RUNS);
  const bareCpu = cpuDelta(new Map(), bareCpuS, TPUT_RUNS);

  const result = {
    platformPerS: TPUT_RUNS / platformS,
    barePerS: TPUT_RUNS / bareS,
    ratio: bareS / platformS,
    cpuPerRun: { platform: platformCpu, bare: bareCpu },
  };
  say(
    `(b) platform ${result.platformPerS.toFixed(1)} runs/s (${fmt(platformS * 1000)} ms)  bare ${result.barePerS.toFixed(1)} runs/s (${fmt(bareS * 1000)} ms)  ratio ${result.ratio.toFixed(2)}`,
  );
  return result;
}

// ─── (c) Pathway per-node overhead ────────────────────────────────────────────────────────────

interface PathwayResult {
  runMs: Spread;
  perNodeMs: number;
  bareRunMs: Spread;
  ratio: number;
  /** From the job stream's Redis ids (ms): first node_start → last node_finish, divided by the node count. */
  inWorkflowPerNodeMs: number;
  /** Execute POST → first node_start plus last node_finish → `complete` at the client. */
  fixedMs: number;
  /** Median node_start → node_finish of one node: its Mongo progress patch, the evaluate local activity, the finish event. */
  nodeStartToFinishMs: number;
  /** Median node_finish → next node_start: one local-activity hop that only writes to Redis (pure scheduling cost). */
  finishToNextStartMs: number;
  /** The bare runs' first workflow task (medians): picked up after the start, and run by its worker (ms). */
  bareTaskDispatch: number;
  bareTaskRun: number;
}

/** A workflow's first task from its history: started → picked up by a worker → completed (server times). */
async function firstTask(app: TestApp, workflowId: string): Promise<{ dispatch: number; run: number }> {
  const history = await app.deps.temporal.client.workflow.getHandle(workflowId).fetchHistory();
  let start = NaN;
  let picked = NaN;
  let done = NaN;
  for (const e of history.events ?? []) {
    const t = tsMs(e.eventTime);
    if (e.workflowExecutionStartedEventAttributes) start = t;
    if (e.workflowTaskStartedEventAttributes && Number.isNaN(picked)) picked = t;
    if (e.workflowTaskCompletedEventAttributes && Number.isNaN(done)) done = t;
  }
  return { dispatch: picked - start, run: done - picked };
}

/** Milliseconds part of a Redis stream id (`<ms>-<seq>`). */
const idMs = (id: string | undefined): number => Number((id ?? '').split('-')[0]);

/**
 * Pathway per-node overhead: a linear pathway of PATHWAY_NODES nodes (start, transforms `input.n + 1`
 * then `last + 1`, output) executed PATHWAY_RUNS times in sequence; a run is timed from just before
 * `POST /v1/pathways/:id/execute` to its `complete` stream event. Per-node overhead is the median run
 * time / PATHWAY_NODES, compared with the median latency of one bare one-activity workflow run
 * (BARE_SEQ_RUNS sequential runs): "a pathway node costs this fraction of a whole Temporal round".
 */
async function measurePathway(app: TestApp, ws: Workspace, bare: Bare): Promise<PathwayResult> {
  const transforms = PATHWAY_NODES - 2;
  const nodes = [
    { id: 'start', type: 'start', data: {} },
    ...Array.from({ length: transforms }, (_, i) => ({
      id: `t${i + 1}`,
      type: 'transform',
      data: { expression: i === 0 ? 'input.n + 1' : 'last + 1' },
    })),
    { id: 'out', type: 'output', data: {} },
  ];
  const edges = nodes.slice(1).map((n, i) => ({ source: nodes[i].id, target: n.id }));
  const created = await app.post(
    '/v1/pathways',
    ws.key,
    { name: `bench-linear-${PATHWAY_NODES}`, pathway_graph: { nodes, edges } },
    ws.brainHeaders,
  );
  if (created.status !== 201) throw new Error(`creating the pathway answered ${created.status}: ${created.text}`);
  const pathwayId = String(created.body.id);

  const once = async (): Promise<RunTrace> => {
    const run = await runThroughApi(app, ws, `/v1/pathways/${pathwayId}/execute`, { input: { n: 0 } }, ws.brainHeaders);
    const result = run.events.at(-1)?.data.result as { output?: unknown } | undefined;
    if (result?.output !== transforms)
      throw new Error(`pathway job ${run.jobId} returned ${JSON.stringify(result?.output)}, expected ${transforms}`);
    return run;
  };

  say(`(c) pathway: warm-up ${WARMUP}, then ${PATHWAY_RUNS} sequential runs of a ${PATHWAY_NODES}-node linear pathway`);
  for (let i = 0; i < WARMUP; i++) await once();
  const runs: RunTrace[] = [];
  for (let i = 0; i < PATHWAY_RUNS; i++) runs.push(await once());
  const runMs = runs.map((r) => r.done - r.t0);

  say(`(c) bare: warm-up ${WARMUP}, then ${BARE_SEQ_RUNS} sequential one-activity workflow runs`);
  for (let i = 0; i < WARMUP; i++) await bare.runOnce();
  const bareMs: number[] = [];
  const bareIds: string[] = [];
  for (let i = 0; i < BARE_SEQ_RUNS; i++) {
    const t0 = performance.now();
    bareIds.push(await bare.runOnce());
    bareMs.push(performance.now() - t0);
  }
  const bareTasks = await Promise.all(bareIds.map((id) => firstTask(app, id)));

  const inside: number[] = [];
  const between: number[] = [];
  const nodeSpans = runs.map((r) => {
    const starts = r.events.filter((e) => e.data.type === 'node_start').map((e) => idMs(e.id));
    const finishes = r.events.filter((e) => e.data.type === 'node_finish').map((e) => idMs(e.id));
    starts.forEach((s, i) => inside.push(finishes[i] - s));
    finishes.slice(0, -1).forEach((f, i) => between.push(starts[i + 1] - f));
    return finishes.at(-1)! - starts[0];
  });
  const perNodeMs = median(runMs) / PATHWAY_NODES;
  const result: PathwayResult = {
    runMs: spread(runMs),
    perNodeMs,
    bareRunMs: spread(bareMs),
    ratio: perNodeMs / median(bareMs),
    inWorkflowPerNodeMs: median(nodeSpans) / PATHWAY_NODES,
    fixedMs: median(runMs) - median(nodeSpans),
    nodeStartToFinishMs: median(inside),
    finishToNextStartMs: median(between),
    bareTaskDispatch: median(bareTasks.map((t) => t.dispatch)),
    bareTaskRun: median(bareTasks.map((t) => t.run)),
  };
  say(
    `(c) pathway run median ${fmt(result.runMs.median)} ms  p90 ${fmt(result.runMs.p90)} ms → ${fmt(perNodeMs)} ms per node`,
  );
  say(
    `(c) bare one-activity run median ${fmt(result.bareRunMs.median)} ms  p90 ${fmt(result.bareRunMs.p90)} ms  ratio ${result.ratio.toFixed(2)}`,
  );
  return result;
}

// ─── Service round trips ──────────────────────────────────────────────────────────────────────

/** Median round trip of one call to each backing service, the unit the platform's overhead is made of. */
interface Probes {
  mongoRead: number;
  mongoWrite: number;
  redis: number;
  temporalRpc: number;
}

/**
 * Medians of 20 sequential calls each: a Mongo findOne by _id and an upsert (in the bench's own
 * database), a Redis PING, and a Temporal frontend RPC that touches no persistence (getSystemInfo).
 */
async function probeServices(app: TestApp): Promise<Probes> {
  const time = async (fn: () => Promise<unknown>): Promise<number> => {
    await fn();
    const xs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await fn();
      xs.push(performance.now() - t0);
    }
    return median(xs);
  };
  const probe = app.deps.db.collection<{ _id: string; n: number }>('bench_probe');
  const result: Probes = {
    mongoRead: await time(() => probe.findOne({ _id: 'probe' })),
    mongoWrite: await time(() => probe.updateOne({ _id: 'probe' }, { $inc: { n: 1 } }, { upsert: true })),
    redis: await time(() => app.deps.redis.ping()),
    temporalRpc: await time(() => app.deps.temporal.connection.workflowService.getSystemInfo({})),
  };
  say(
    `service round trips (medians): Mongo read ${fmt(result.mongoRead)} ms, Mongo write ${fmt(result.mongoWrite)} ms, Redis ${fmt(result.redis)} ms, Temporal RPC ${fmt(result.temporalRpc)} ms`,
  );
  return result;
}

// ─── (d) Under a realistic provider ───────────────────────────────────────────────────────────

const REAL_RUNS = 20;
interface RealisticResult {
  completed: number;
  exact: number;
  retried: number;
  wallMs: number;
  addedTtft: Spread;
}

/**
 * (d) REAL_RUNS concurrent runs against the provider simulator (test/support/provider-sim.ts):
 * 300–800 ms think, 10–30 ms between tokens, different text on every call, and 10 % dropped
 * streams, 5 % 429 (Retry-After 1 s), 5 % 500. Reports how many completed, how many streams
 * showed exactly the stored reply (docs/streams.md rules), how many had a retried turn, and the
 * time to first token the platform adds over the simulated think.
 */
async function measureRealistic(app: TestApp, ws: Workspace, llm: ScriptedOpenAI): Promise<RealisticResult> {
  const sim = createSimulation({
    firstTokenMs: [300, 800],
    interTokenMs: [10, 30],
    tokens: 20,
    faultRate: { disconnect: 0.1, '429': 0.05, '500': 0.05 },
    retryAfterS: 1,
    seed: 7,
  });
  llm.setDefault(sim.reply);
  const neuronId = await createNeuron(app, ws, 'bench-realistic');
  say(`(d) realistic provider: ${REAL_RUNS} concurrent runs with faults`);
  const t0 = performance.now();
  const runs = await Promise.allSettled(
    Array.from({ length: REAL_RUNS }, (_, i) =>
      runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, { message: `real ${i}` }),
    ),
  );
  const wallMs = performance.now() - t0;
  let exact = 0;
  let retried = 0;
  const added: number[] = [];
  for (const r of runs) {
    if (r.status !== 'fulfilled') continue;
    const entries = r.value.events.map((e) => e.data);
    const stored = String((entries.at(-1)?.result as { text?: string } | undefined)?.text ?? '');
    if (shownReply(entries) === stored) exact++;
    if (entries.some((e) => e.type === 'reset')) retried++;
    else {
      const msg = `real ${runs.indexOf(r)}`;
      const call = sim.said.find((x) => x.user === msg);
      const think = call ? sim.times[call.call - 1] : undefined;
      if (think !== undefined) added.push(think - r.value.startEpoch);
    }
  }
  return {
    completed: runs.filter((r) => r.status === 'fulfilled').length,
    exact,
    retried,
    wallMs,
    addedTtft: spread(added.length ? added : [NaN]),
  };
}

// ─── (h) Streaming at scale, (i) memory ───────────────────────────────────────────────────────

const MB = 1024 * 1024;
/** A child's RSS from /proc/<pid>/status (VmRSS, kB); NaN where /proc is unavailable. */
function pidRss(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * The API of (h), (i) and (k) as production runs it: the compiled server (`npm run build`,
 * `node dist/api/server.js`) in a process of its own on the bench's stores, so its RSS is the
 * API's alone (the provider and the readers stay in the bench process).
 */
interface ServedApi {
  client: TestClient;
  pid: number | undefined;
  startRss: number;
}

/** RSS in bytes of the API and the worker (both children), idle median and peak under (h). */
interface MemoryResult {
  start: number;
  /** Right after a run (the first second of quiet) and settled (after IDLE_SETTLE_MS of quiet); the heap parts are the settled ones. */
  apiAfterRun: number;
  workerAfterRun: number;
  apiParts: { heapUsed: number; heapTotal: number; external: number };
  apiIdle: number;
  workerIdle: number;
  apiPeak: number;
  workerPeak: number;
  samples: number;
}

/** Where a process's memory is, from its /metrics (prom-client's default Node.js metrics), bytes. */
async function memoryParts(baseUrl: string): Promise<{ heapUsed: number; heapTotal: number; external: number }> {
  const text = await fetch(`${baseUrl}/metrics`).then((r) => r.text());
  const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  return {
    heapUsed: value('cortex_nodejs_heap_size_used_bytes'),
    heapTotal: value('cortex_nodejs_heap_size_total_bytes'),
    external: value('cortex_nodejs_external_memory_bytes'),
  };
}

/** Median of a few samples one MEM_SAMPLE_MS apart, with nothing running. */
async function idleMemory(
  apiPid: number | undefined,
  workerPid: number | undefined,
): Promise<{ api: number; worker: number }> {
  const api: number[] = [];
  const worker: number[] = [];
  for (let i = 0; i < 5; i++) {
    api.push(pidRss(apiPid));
    worker.push(pidRss(workerPid));
    await new Promise((r) => setTimeout(r, MEM_SAMPLE_MS));
  }
  return { api: median(api), worker: median(worker) };
}

interface StreamingResult {
  completed: number;
  failed: number;
  emitted: number;
  received: number;
  /** Tokens per second over the provider's window (first emit → last emit) and the readers' (first → last receipt). */
  emittedPerS: number;
  deliveredPerS: number;
  ratio: number;
  /** Provider emit → reader parse, ms, over every token received. */
  delay: { p50: number; p99: number; max: number };
  /** Most runs whose provider stream was between its first and last token at the same moment. */
  peakConcurrent: number;
  wallMs: number;
  memory: MemoryResult;
}

/**
 * (h) STREAM_RUNS invokes with stream: true, all at once; each opens its own SSE reader on
 * GET /v1/jobs/:id/stream as soon as the POST answers and reads it to the terminal event. The
 * scripted provider streams `r<run>.<i> ` tokens, one every STREAM_TOKEN_MS ms, and records the
 * moment each one is written to its socket; the readers stamp the moment they parse it. Both
 * clocks are this process's performance.now(). Tokens of a superseded attempt (after a `reset`)
 * are not counted as received. (i) RSS is sampled every MEM_SAMPLE_MS ms throughout.
 */
async function measureStreaming(
  served: ServedApi,
  ws: Workspace,
  llm: ScriptedOpenAI,
  workerPid: number | undefined,
): Promise<StreamingResult> {
  const app = served.client;
  const neuronId = await createNeuron(app, ws, 'bench-streaming');
  const emittedAt = new Map<string, number>();
  const runOf = (body: ScriptedRequestBody): number => Number(/^stream (\d+)$/.exec(lastUserText(body))?.[1] ?? -1);
  llm.setDefault((body) => {
    const run = runOf(body);
    return {
      chunks: Array.from({ length: STREAM_TOKENS }, (_, i) => `r${run}.${i} `),
      paceMs: STREAM_TOKEN_MS,
      firstTokenMs: STREAM_FIRST_TOKEN_MS,
      usage: { prompt_tokens: 20, completion_tokens: STREAM_TOKENS },
      onContentChunk: (_i, text) => void emittedAt.set(text, performance.now()),
    };
  });

  // A short warm-up run (same neuron, same path) so the first of the hundred does not pay for JIT.
  llm.script([{ chunks: ['warm'], usage: { prompt_tokens: 5, completion_tokens: 1 } }]);
  await runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, { message: 'warm-up', stream: true });

  const quietSince = performance.now();
  const afterRun = await idleMemory(served.pid, workerPid);
  say(
    `(i) RSS in the first second after a run: API ${(afterRun.api / MB).toFixed(0)} MB, worker ${(afterRun.worker / MB).toFixed(0)} MB; settling for ${IDLE_SETTLE_MS / 1000} s`,
  );
  await new Promise((r) => setTimeout(r, Math.max(0, IDLE_SETTLE_MS - (performance.now() - quietSince))));
  const idle = await idleMemory(served.pid, workerPid);
  const parts = await memoryParts(served.client.url);
  say(
    `(i) settled idle RSS: API ${(idle.api / MB).toFixed(0)} MB (V8 heap used ${(parts.heapUsed / MB).toFixed(0)} of ${(parts.heapTotal / MB).toFixed(0)} MB, external ${(parts.external / MB).toFixed(0)} MB), worker ${(idle.worker / MB).toFixed(0)} MB`,
  );
  let apiPeak = idle.api;
  let workerPeak = idle.worker;
  let samples = 0;
  const sampler = setInterval(() => {
    const a = pidRss(served.pid);
    if (!Number.isNaN(a)) apiPeak = Math.max(apiPeak, a);
    const w = pidRss(workerPid);
    if (!Number.isNaN(w)) workerPeak = Math.max(workerPeak, w);
    samples++;
  }, MEM_SAMPLE_MS);

  const receivedAt = new Map<string, number>();
  const readerTimeout = RUN_TIMEOUT_MS + STREAM_TOKENS * STREAM_TOKEN_MS;
  const one = async (run: number): Promise<void> => {
    const res = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: `stream ${run}`, stream: true });
    if (res.status !== 202) throw new Error(`invoke answered ${res.status}: ${res.text}`);
    const jobId = String(res.body.job_id);
    let seen = 0;
    let terminal: unknown;
    const mine = new Map<string, number>();
    const sse = await readSse(`${app.url}/v1/jobs/${jobId}/stream`, {
      headers: { authorization: `Bearer ${ws.key}` },
      timeoutMs: readerTimeout,
      until: (events) => {
        const now = performance.now();
        for (; seen < events.length; seen++) {
          const data = dataOf(events[seen]);
          if (data.type === 'reset') mine.clear();
          if (data.type === 'token') mine.set(String(data.text), now);
          if (data.type === 'complete' || data.type === 'error') terminal = data;
        }
        return terminal !== undefined;
      },
    });
    if (sse.status !== 200) throw new Error(`stream of job ${jobId} answered ${sse.status}: ${sse.body}`);
    for (const [text, at] of mine) receivedAt.set(text, at);
    if ((terminal as { type?: string } | undefined)?.type !== 'complete')
      throw new Error(`job ${jobId} ended with ${JSON.stringify(terminal ?? 'no terminal event')}`);
  };

  say(
    `(h) streaming: ${STREAM_RUNS} concurrent runs × ${STREAM_TOKENS} tokens every ${STREAM_TOKEN_MS} ms, one SSE reader each`,
  );
  const t0 = performance.now();
  const settled = await Promise.allSettled(Array.from({ length: STREAM_RUNS }, (_, run) => one(run)));
  const wallMs = performance.now() - t0;
  clearInterval(sampler);
  const failures = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  for (const f of failures.slice(0, 3))
    say(`(h) a run failed: ${f.reason instanceof Error ? f.reason.message : String(f.reason)}`);

  const delays: number[] = [];
  for (const [text, at] of receivedAt) {
    const emitted = emittedAt.get(text);
    if (emitted !== undefined) delays.push(at - emitted);
  }
  const emitTimes = [...emittedAt.values()];
  const recvTimes = [...receivedAt.values()];
  const window = (xs: number[]): number => (xs.length > 1 ? Math.max(...xs) - Math.min(...xs) : NaN);
  const emittedPerS = emitTimes.length / (window(emitTimes) / 1000);
  const deliveredPerS = recvTimes.length / (window(recvTimes) / 1000);

  // Peak concurrency: sweep over each run's first and last emit.
  const spans = new Map<string, [number, number]>();
  for (const [text, at] of emittedAt) {
    const run = text.split('.')[0];
    const sp = spans.get(run);
    spans.set(run, sp ? [Math.min(sp[0], at), Math.max(sp[1], at)] : [at, at]);
  }
  const edges = [...spans.values()]
    .flatMap(
      ([a, b]) =>
        [
          [a, 1],
          [b, -1],
        ] as [number, number][],
    )
    .sort((x, y) => x[0] - y[0] || y[1] - x[1]);
  let live = 0;
  let peakConcurrent = 0;
  for (const [, d] of edges) peakConcurrent = Math.max(peakConcurrent, (live += d));

  const result: StreamingResult = {
    completed: settled.length - failures.length,
    failed: failures.length,
    emitted: emitTimes.length,
    received: recvTimes.length,
    emittedPerS,
    deliveredPerS,
    ratio: deliveredPerS / emittedPerS,
    delay: delays.length
      ? { p50: pct(delays, 0.5), p99: pct(delays, 0.99), max: Math.max(...delays) }
      : { p50: NaN, p99: NaN, max: NaN },
    peakConcurrent,
    wallMs,
    memory: {
      start: served.startRss,
      apiAfterRun: afterRun.api,
      workerAfterRun: afterRun.worker,
      apiParts: parts,
      apiIdle: idle.api,
      workerIdle: idle.worker,
      apiPeak,
      workerPeak,
      samples,
    },
  };
  say(
    `(h) ${result.completed}/${STREAM_RUNS} completed, tokens received ${result.received}/${result.emitted}, ratio ${result.ratio.toFixed(3)}, delay p50 ${fmt(result.delay.p50)} ms p99 ${fmt(result.delay.p99)} ms`,
  );
  say(`(i) peak RSS under (h): API ${(apiPeak / MB).toFixed(0)} MB, worker ${(workerPeak / MB).toFixed(0)} MB`);
  return result;
}

function streamingSummary(h: StreamingResult, verdict: (ok: boolean) => string): string[] {
  const mb = (b: number): string => `${(b / MB).toFixed(0)} MB`;
  const m = h.memory;
  return [
    `  (h) Streaming at scale: ${STREAM_RUNS} concurrent runs × ${STREAM_TOKENS} tokens, one every ${STREAM_TOKEN_MS} ms (first after ${STREAM_FIRST_TOKEN_MS} ms), one SSE reader each`,
    `      (provider, readers and API share this process; at full overlap the provider emits ${((STREAM_RUNS * 1000) / STREAM_TOKEN_MS).toFixed(0)} tokens/s)`,
    `      runs completed ${h.completed}/${STREAM_RUNS}   tokens received ${h.received}/${h.emitted}   peak runs streaming at once ${h.peakConcurrent}   wall ${fmt(h.wallMs / 1000)} s`,
    `      emitted by the provider               ${h.emittedPerS.toFixed(0).padStart(7)} tokens/s (first → last emit)`,
    `      delivered to the readers              ${h.deliveredPerS.toFixed(0).padStart(7)} tokens/s (first → last receipt)`,
    `      delivered / emitted                   ${h.ratio.toFixed(3)}   (aim ≥ ${AIM_STREAM_RATIO}: ${verdict(h.ratio >= AIM_STREAM_RATIO)})`,
    `      provider → reader delay per token     p50 ${fmt(h.delay.p50).padStart(7)} ms   p99 ${fmt(h.delay.p99).padStart(7)} ms   max ${fmt(h.delay.max)} ms   (no aim set yet)`,
    '',
    `  (i) Memory (RSS, /proc VmRSS). API = compiled server in its own process (node dist/api/server.js);`,
    `      worker = compiled worker with the prebuilt workflow bundle (node dist/worker/index.js)`,
    `      API just started (health answered)    ${mb(m.start).padStart(7)}`,
    `      API in the first second after a run   ${mb(m.apiAfterRun).padStart(7)}   (before V8's memory reducer has run)`,
    `      API idle, ${IDLE_SETTLE_MS / 1000} s after the last run    ${mb(m.apiIdle).padStart(7)}   (aim < ${AIM_API_IDLE_MB} MB: ${verdict(m.apiIdle < AIM_API_IDLE_MB * MB)})`,
    `        of which V8 heap used ${mb(m.apiParts.heapUsed)} (of ${mb(m.apiParts.heapTotal)} reserved), external (buffers, word vectors) ${mb(m.apiParts.external)}`,
    `      API peak under (h)                    ${mb(m.apiPeak).padStart(7)}   (aim < ${AIM_API_LOAD_MB} MB: ${verdict(m.apiPeak < AIM_API_LOAD_MB * MB)})`,
    `      worker in the first second after a run ${mb(m.workerAfterRun).padStart(6)}`,
    `      worker idle, ${IDLE_SETTLE_MS / 1000} s after the last run ${mb(m.workerIdle).padStart(7)}   (no aim set)`,
    `      worker peak under (h)                 ${mb(m.workerPeak).padStart(7)}   (no aim set; ${m.samples} samples every ${MEM_SAMPLE_MS} ms)`,
  ];
}

// ─── (k) Soak: memory over ten minutes of steady runs and reconnecting readers ──────────────

/** (k) Length of the soak (BENCH_SOAK_MINUTES overrides; the issue asks for ten minutes). */
const SOAK_MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 10);
/**
 * (k) Open loop: a run starts every 1 / SOAK_RATE_PER_S seconds on a fixed schedule, whatever the
 * platform's pace, so the load is the same at the end as at the start and a change of RSS is the
 * processes', not the load's (a closed loop slows down as the store's scans grow). At most
 * SOAK_MAX_IN_FLIGHT at once; an arrival beyond that is skipped and counted. Each run streams
 * SOAK_TOKENS tokens, one every SOAK_TOKEN_MS ms.
 */
const SOAK_RATE_PER_S = Number(process.env.BENCH_SOAK_RATE ?? 1);
const SOAK_MAX_IN_FLIGHT = 16;
const SOAK_TOKENS = 40;
const SOAK_TOKEN_MS = 20;
/** (k) A reader of every other run drops its connection after this many tokens and resumes with `after`. */
const SOAK_DROP_AFTER = 10;
/** (k) RSS sampled this often; the slope is fitted to the samples after the warm-up. */
const SOAK_SAMPLE_MS = 5_000;
/**
 * (k) Warm-up left out of the fit. Freshly started processes take one step up in their first two
 * minutes of steady runs and are flat after it (soaks of 10 and 20 minutes here: the worker
 * 219 → 242 MB by minute 2, then 242 MB at minute 20; the API 155 → 174 MB, then 176–178 MB).
 */
const SOAK_WARMUP_MS = 120_000;
/** (k) Aim: no growth, read as a fitted slope of at most 1 MB per minute (10 MB over the ten minutes); shrinking passes. */
const AIM_SOAK_SLOPE_MB_PER_MIN = 1;

interface SoakResult {
  minutes: number;
  /** Arrivals on the schedule, arrivals skipped because SOAK_MAX_IN_FLIGHT runs were open, most open at once. */
  offered: number;
  skipped: number;
  maxInFlight: number;
  runs: number;
  failed: number;
  reconnects: number;
  /** Runs whose reader, across its reconnect, saw exactly the reply the provider sent. */
  exact: number;
  samples: number;
  api: SoakSeries;
  worker: SoakSeries;
}

/**
 * One process's RSS over the soak: first, last and largest sample, the slope fitted after the
 * warm-up, and the slope of the second half alone (a leak grows in both halves; warming up, the
 * heap reaching its working size, shows in the first only).
 */
interface SoakSeries {
  first: number;
  last: number;
  max: number;
  slopeMbPerMin: number;
  secondHalfMbPerMin: number;
}

/** Least-squares slope of y (bytes) over t (ms), in MB per minute. */
function slopeMbPerMin(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mt = points.reduce((a, [t]) => a + t, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [t, y] of points) {
    num += (t - mt) * (y - my);
    den += (t - mt) ** 2;
  }
  return den === 0 ? NaN : ((num / den) * 60_000) / MB;
}

/**
 * (k) Streaming invokes arrive at SOAK_RATE_PER_S for SOAK_MINUTES, each on a fresh trace, each
 * read over SSE; the reader of every other run disconnects after SOAK_DROP_AFTER tokens and
 * reconnects with `after=<last entry id>`, as a browser losing its connection would. The API's
 * and the worker's RSS are sampled every SOAK_SAMPLE_MS; the slope is fitted after the warm-up.
 */
async function measureSoak(
  served: ServedApi,
  ws: Workspace,
  llm: ScriptedOpenAI,
  workerPid: number | undefined,
): Promise<SoakResult> {
  const app = served.client;
  const neuronId = await createNeuron(app, ws, 'bench-soak');
  const tokens = (run: string): string[] => Array.from({ length: SOAK_TOKENS }, (_, i) => `${run}.${i} `);
  llm.setDefault((body) => ({
    chunks: tokens(/^soak (\S+)$/.exec(lastUserText(body))?.[1] ?? 'x'),
    paceMs: SOAK_TOKEN_MS,
    firstTokenMs: 50,
    usage: { prompt_tokens: 20, completion_tokens: SOAK_TOKENS },
  }));
  const auth = { authorization: `Bearer ${ws.key}` };
  let runs = 0;
  let failed = 0;
  let reconnects = 0;
  let exact = 0;
  const apiPoints: [number, number][] = [];
  const workerPoints: [number, number][] = [];
  const t0 = performance.now();
  const endAt = t0 + SOAK_MINUTES * 60_000;
  const sample = (): void => {
    const t = performance.now() - t0;
    const a = pidRss(served.pid);
    const w = pidRss(workerPid);
    if (!Number.isNaN(a)) apiPoints.push([t, a]);
    if (!Number.isNaN(w)) workerPoints.push([t, w]);
  };
  sample();
  const sampler = setInterval(sample, SOAK_SAMPLE_MS);

  const one = async (run: string, drop: boolean): Promise<void> => {
    const res = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: `soak ${run}`, stream: true });
    if (res.status !== 202) throw new Error(`invoke answered ${res.status}: ${res.text}`);
    const url = `${app.url}/v1/jobs/${String(res.body.job_id)}/stream`;
    const entries: Record<string, unknown>[] = [];
    let lastId: string | undefined;
    let seen = 0;
    let tokenCount = 0;
    let terminal = false;
    let dropNow = drop;
    const until = (events: { id?: string; data: string }[]): boolean => {
      for (; seen < events.length; seen++) {
        const data = JSON.parse(events[seen].data) as Record<string, unknown>;
        entries.push(data);
        lastId = events[seen].id ?? lastId;
        if (data.type === 'token') tokenCount++;
        if (data.type === 'complete' || data.type === 'error') terminal = true;
      }
      return terminal || (dropNow && tokenCount >= SOAK_DROP_AFTER);
    };
    const first = await readSse(url, { headers: auth, timeoutMs: RUN_TIMEOUT_MS, until });
    if (first.status !== 200) throw new Error(`stream answered ${first.status}`);
    if (!terminal) {
      reconnects++;
      seen = 0;
      dropNow = false;
      const again = await readSse(`${url}?after=${encodeURIComponent(lastId ?? '0')}`, {
        headers: auth,
        timeoutMs: RUN_TIMEOUT_MS,
        until,
      });
      if (again.status !== 200) throw new Error(`resumed stream answered ${again.status}`);
    }
    if (entries.at(-1)?.type !== 'complete')
      throw new Error(`run ${run} ended with ${JSON.stringify(entries.at(-1) ?? null)}`);
    if (shownReply(entries) === tokens(run).join('')) exact++;
  };

  say(
    `(k) soak: ${SOAK_MINUTES} min, a streaming run every ${(1 / SOAK_RATE_PER_S).toFixed(1)} s, every other reader drops after ${SOAK_DROP_AFTER} tokens and resumes`,
  );
  let lastReport = t0;
  let offered = 0;
  let skipped = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const open: Promise<void>[] = [];
  for (let i = 0; ; i++) {
    const at = t0 + (i * 1000) / SOAK_RATE_PER_S;
    if (at >= endAt) break;
    const wait = at - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    offered++;
    if (inFlight >= SOAK_MAX_IN_FLIGHT) {
      skipped++;
      continue;
    }
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    open.push(
      one(`k${i}`, i % 2 === 1)
        .then(
          () => {
            runs++;
          },
          (err: unknown) => {
            failed++;
            if (failed <= 3) say(`(k) a run failed: ${err instanceof Error ? err.message : String(err)}`);
          },
        )
        .finally(() => {
          inFlight--;
        }),
    );
    if (performance.now() - lastReport > 60_000) {
      lastReport = performance.now();
      const a = apiPoints.at(-1)?.[1] ?? NaN;
      const w = workerPoints.at(-1)?.[1] ?? NaN;
      say(
        `(k) ${((lastReport - t0) / 60_000).toFixed(0)} min: ${runs} runs done, ${inFlight} open, ${skipped} skipped, ${failed} failed, API ${(a / MB).toFixed(0)} MB, worker ${(w / MB).toFixed(0)} MB`,
      );
    }
  }
  await Promise.all(open);
  clearInterval(sampler);
  sample();
  const half = (SOAK_MINUTES * 60_000) / 2;
  const fit = (points: [number, number][]): SoakSeries => ({
    first: points[0]?.[1] ?? NaN,
    last: points.at(-1)?.[1] ?? NaN,
    max: Math.max(...points.map(([, y]) => y)),
    slopeMbPerMin: slopeMbPerMin(points.filter(([t]) => t >= SOAK_WARMUP_MS)),
    secondHalfMbPerMin: slopeMbPerMin(points.filter(([t]) => t >= half)),
  });
  const result: SoakResult = {
    minutes: (performance.now() - t0) / 60_000,
    offered,
    skipped,
    maxInFlight,
    runs,
    failed,
    reconnects,
    exact,
    samples: apiPoints.length,
    api: fit(apiPoints),
    worker: fit(workerPoints),
  };
  say(
    `(k) ${runs} runs (${failed} failed), ${reconnects} reconnects, API slope ${result.api.slopeMbPerMin.toFixed(2)} MB/min, worker ${result.worker.slopeMbPerMin.toFixed(2)} MB/min`,
  );
  return result;
}

function soakSummary(k: SoakResult, verdict: (ok: boolean) => string): string[] {
  const mb = (b: number): string => `${(b / MB).toFixed(0)} MB`;
  const row = (name: string, x: SoakSeries, aim: string) =>
    `      ${name.padEnd(38)}${mb(x.first).padStart(7)} → ${mb(x.last).padStart(7)} (max ${mb(x.max)})   slope ${x.slopeMbPerMin.toFixed(2)} MB/min ${aim}; second half ${x.secondHalfMbPerMin.toFixed(2)} MB/min`;
  return [
    `  (k) Soak: ${k.minutes.toFixed(1)} min, a streaming run (${SOAK_TOKENS} tokens every ${SOAK_TOKEN_MS} ms) every ${(1 / SOAK_RATE_PER_S).toFixed(1)} s on a fixed schedule; every other reader reconnects with after=`,
    `      arrivals ${k.offered}   skipped (${SOAK_MAX_IN_FLIGHT} already open) ${k.skipped}   most open at once ${k.maxInFlight}`,
    `      runs completed ${k.runs}   failed ${k.failed}   reconnects ${k.reconnects}   reader saw exactly the reply ${k.exact}/${k.runs}`,
    row(
      'API RSS, start → end',
      k.api,
      `(aim ≤ ${AIM_SOAK_SLOPE_MB_PER_MIN}: ${verdict(k.api.slopeMbPerMin <= AIM_SOAK_SLOPE_MB_PER_MIN)})`,
    ),
    row(
      'worker RSS, start → end',
      k.worker,
      `(aim ≤ ${AIM_SOAK_SLOPE_MB_PER_MIN}: ${verdict(k.worker.slopeMbPerMin <= AIM_SOAK_SLOPE_MB_PER_MIN)})`,
    ),
    `      (${k.samples} samples every ${SOAK_SAMPLE_MS / 1000} s; slope = least-squares fit of RSS over time after the first ${SOAK_WARMUP_MS / 60_000} min; both processes freshly started)`,
  ];
}

/** The machine the figures come from. */
function machine(): string {
  const cpus = os.cpus();
  return `  machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GB RAM, Node ${process.version}, ${os.platform()} ${os.release()}`;
}

// ─── Summary and main ─────────────────────────────────────────────────────────────────────────

interface Results {
  a?: TtftResult;
  b?: ThroughputResult;
  c?: PathwayResult;
  q?: ParallelResult;
  r?: ConsoleResult;
  d?: RealisticResult;
  e?: SearchBenchResult;
  f?: StakeholderMapFigures;
  g?: BudgetResult;
  h?: StreamingResult;
  j?: RoundTrips;
  k?: SoakResult;
  l?: HistoryResult;
  n?: LoadResult;
  o?: UsageScaleFigures;
  p?: ListFigures;
  m?: HistoryMeasure;
  s?: StreamWriterResult;
  t?: NoisyResult;
}

function summary(p: Probes, { a, b, c, d, e, f, g, h, j, k, l, m, n, o, p: lists, q, r, s, t }: Results): string {
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const line = '═'.repeat(88);
  return [
    line,
    '  Cortex bench summary (same services, same scripted provider)',
    machine(),
    `  service round trips (medians): Mongo read ${fmt(p.mongoRead)} ms | Mongo write ${fmt(p.mongoWrite)} ms | Redis ${fmt(p.redis)} ms | Temporal RPC ${fmt(p.temporalRpc)} ms`,
    ...(a ? ['', ...sectionA(a)] : []),
    ...(b ? ['', ...sectionB(b)] : []),
    ...(c ? ['', ...sectionC(c)] : []),
    ...(q ? ['', ...sectionQ(q)] : []),
    ...(r ? ['', ...sectionR(r).map((x) => `  ${x}`)] : []),
    ...(d ? ['', ...sectionD(d)] : []),
    ...(e ? ['', ...searchSummary(e)] : []),
    ...(f ? ['', ...formatStakeholderMaps(f, fmt)] : []),
    ...(lists ? ['', ...formatLists(lists)] : []),
    ...(g ? ['', ...sectionG(g)] : []),
    ...(o ? ['', ...formatUsageScale(o)] : []),
    ...(h ? ['', ...streamingSummary(h, verdict)] : []),
    ...(s ? ['', ...streamWriterSummary(s)] : []),
    ...(t ? ['', ...noisySummary(t)] : []),
    ...(j ? ['', ...sectionJ(j)] : []),
    ...(k ? ['', ...soakSummary(k, verdict)] : []),
    ...(l ? ['', ...sectionL(l)] : []),
    ...(m ? ['', ...historySummary(m)] : []),
    ...(n ? ['', ...loadSummary(n, verdict)] : []),
    line,
  ].join('\n');

  function sectionA(a: TtftResult): string[] {
    const bd = a.breakdown;
    return [
      `  (a) Time to first token, ${TTFT_RUNS} sequential runs`,
      `      platform (invoke → first SSE token)   median ${fmt(a.platform.median).padStart(7)} ms   p90 ${fmt(a.platform.p90).padStart(7)} ms`,
      `      OpenAI-compatible (stream → content)  median ${fmt(a.openai.median).padStart(7)} ms   p90 ${fmt(a.openai.p90).padStart(7)} ms   (added ${fmt(a.openaiAddedAtMedian)} ms)`,
      `      direct (openai adapter → onToken)     median ${fmt(a.direct.median).padStart(7)} ms   p90 ${fmt(a.direct.p90).padStart(7)} ms`,
      `      added by the platform at the median   ${fmt(a.addedAtMedian)} ms   (aim < ${AIM_ADDED_TTFT_MS} ms: ${verdict(a.addedAtMedian < AIM_ADDED_TTFT_MS)})`,
      `      where it goes (medians): POST → 202 ${fmt(bd.apiToAccepted)} | 202 → first token written ${fmt(bd.acceptedToEmit)}`,
      `        | written → read by the client ${fmt(bd.emitToClient)} ms (the API's first turn streams it)`,
      `      off that path: POST → workflow started ${fmt(bd.apiToStart)}, its first task picked up ${fmt(bd.taskDispatch)}, run ${fmt(bd.taskRun)} ms`,
    ];
  }
  function sectionL(l: HistoryResult): string[] {
    return [
      `  (l) Stored history: ${RUNS_L} runs continuing one trace, before and after ${l.rows} engrams of other traces (written in ${fmt(l.fillMs / 1000)} s)`,
      `      run, before the fill                  median ${fmt(l.before.run.median).padStart(7)} ms   p90 ${fmt(l.before.run.p90).padStart(7)} ms`,
      `      run, ${String(l.rows).padEnd(6)} engrams stored         median ${fmt(l.after.run.median).padStart(7)} ms   p90 ${fmt(l.after.run.p90).padStart(7)} ms`,
      `      ratio after / before                  ${l.runRatio.toFixed(2)}   (aim ≤ ${AIM_HISTORY_RATIO}: ${verdict(l.runRatio <= AIM_HISTORY_RATIO)})`,
      `      history read (GET messages)           median ${fmt(l.before.read.median)} → ${fmt(l.after.read.median)} ms, ratio ${l.readRatio.toFixed(2)}`,
    ];
  }
  function sectionJ(j: RoundTrips): string[] {
    const cmds = Object.entries(j.byCommand)
      .filter(([, n]) => n > 0)
      .sort((x, y) => y[1] - x[1])
      .map(([c, n]) => `${c} ${n.toFixed(1)}`)
      .join(', ');
    return [
      `  (j) Store round trips per run, ${j.runs} sequential trivial runs on fresh traces`,
      `      MongoDB, API                          ${fmt(j.api.reads)} reads + ${fmt(j.api.writes)} writes${j.api.other ? ` + ${fmt(j.api.other)} other` : ''}`,
      `      MongoDB, worker                       ${fmt(j.worker.reads)} reads + ${fmt(j.worker.writes)} writes${j.worker.other ? ` + ${fmt(j.worker.other)} other` : ''}`,
      `      by command (both)                     ${cmds}`,
      `      Redis commands (every client)         ${fmt(j.redis)}`,
    ];
  }
  function sectionB(b: ThroughputResult): string[] {
    return [
      `  (b) Throughput, ${TPUT_RUNS} trivial runs a side in ${TPUT_ROUNDS} alternating rounds, ${TPUT_CONCURRENCY} in flight`,
      `      platform neuron runs                  ${b.platformPerS.toFixed(1).padStart(7)} runs/s`,
      `      bare one-activity workflows           ${b.barePerS.toFixed(1).padStart(7)} runs/s`,
      `      ratio platform / bare                 ${b.ratio.toFixed(2)}   (aim ≥ ${AIM_TPUT_RATIO}: ${verdict(b.ratio >= AIM_TPUT_RATIO)})`,
      ...(['platform', 'bare'] as const).map((side) => {
        const parts = Object.entries(b.cpuPerRun[side]).sort(([, x], [, y]) => y - x);
        const total = parts.reduce((a, [, v]) => a + v, 0);
        return `      CPU per ${side} run ${fmt(total).padStart(7)} ms: ${parts.map(([k, v]) => `${k} ${fmt(v)}`).join(' | ')}`;
      }),
    ];
  }
  function sectionC(c: PathwayResult): string[] {
    return [
      `  (c) Pathway per-node overhead, ${PATHWAY_NODES}-node linear pathway, ${PATHWAY_RUNS} sequential runs`,
      `      pathway run                           median ${fmt(c.runMs.median).padStart(7)} ms   p90 ${fmt(c.runMs.p90).padStart(7)} ms`,
      `      per node (median run / ${PATHWAY_NODES})            ${fmt(c.perNodeMs).padStart(7)} ms`,
      `      bare one-activity workflow run        median ${fmt(c.bareRunMs.median).padStart(7)} ms   p90 ${fmt(c.bareRunMs.p90).padStart(7)} ms`,
      `      per node / one bare run               ${c.ratio.toFixed(2)}`,
      `      the bare runs' first workflow task (medians): picked up ${fmt(c.bareTaskDispatch)}, run by its worker ${fmt(c.bareTaskRun)} ms`,
      `      split: in-workflow ${fmt(c.inWorkflowPerNodeMs)} ms per node (node events' stream ids) + ${fmt(c.fixedMs)} ms fixed per run (start, finish, API)`,
      `      per node (medians): node_start → node_finish ${fmt(c.nodeStartToFinishMs)} ms | node_finish → next node_start ${fmt(c.finishToNextStartMs)} ms`,
    ];
  }
  function sectionD(d: RealisticResult): string[] {
    return [
      `  (d) Realistic provider (simulator: 300–800 ms think, faults), ${REAL_RUNS} concurrent runs`,
      `      completed ${d.completed}/${REAL_RUNS}   stream shows exactly the stored reply ${d.exact}/${d.completed}   runs with a retried turn ${d.retried}`,
      `      wall time ${fmt(d.wallMs)} ms   platform time before the provider call (unretried runs) median ${fmt(d.addedTtft.median)} ms`,
    ];
  }
  function sectionG(g: BudgetResult): string[] {
    return [
      `  (g) Budget check before each model turn, ${TTFT_RUNS} runs each, interleaved`,
      `      no budget                             median ${fmt(g.without.median).padStart(7)} ms   p90 ${fmt(g.without.p90).padStart(7)} ms`,
      `      three budgets covering the run        median ${fmt(g.with.median).padStart(7)} ms   p90 ${fmt(g.with.p90).padStart(7)} ms`,
      `      added by the check at the median      ${fmt(g.addedAtMedian)} ms`,
    ];
  }
}

/** Deletes the bench's Redis keys (its own prefix) on a shared Redis. */
async function dropRedisKeys(app: TestApp): Promise<void> {
  for await (const keys of scanKeys(app.deps.redis, `${app.config.REDIS_PREFIX}*`))
    await deleteKeys(app.deps.redis, keys);
}

/** BENCH_ONLY=h,i: the sections to run (all when unset). */
const ONLY = new Set(
  (process.env.BENCH_ONLY ?? '')
    .split(',')
    .map((x) => x.trim().toLowerCase())
    .filter(Boolean),
);
const runs = (section: string): boolean => ONLY.size === 0 || ONLY.has(section);

async function main(): Promise<void> {
  // Before any worker exists: keep the Temporal core's INFO lines out of the bench output.
  Runtime.install({ logger: new DefaultLogger('WARN') });

  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const fn of cleanups.reverse())
      await fn().catch((err: unknown) => say(`cleanup: ${err instanceof Error ? err.message : String(err)}`));
  };
  try {
    const need = {
      mongo: !process.env.MONGODB_URI,
      redis: !process.env.REDIS_URL,
      temporal: !process.env.TEMPORAL_ADDRESS,
    };
    for (const [name, value] of [
      ['MONGODB_URI', process.env.MONGODB_URI],
      ['REDIS_URL', process.env.REDIS_URL],
      ['TEMPORAL_ADDRESS', process.env.TEMPORAL_ADDRESS],
    ]) {
      if (value) say(`using ${name}=${value}`);
    }
    const missing = Object.entries(need)
      .filter(([, n]) => n)
      .map(([k]) => k);
    if (missing.length) {
      const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-bench-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      say(`starting embedded ${missing.join(', ')} (data in ${dataDir})`);
      const services: EmbeddedServices = await startEmbedded({ dataDir, need, temporalUi: false, log: (l) => say(l) });
      cleanups.push(() => services.stop());
      process.env.MONGODB_URI ??= services.mongoUri;
      process.env.REDIS_URL ??= services.redisUrl;
      process.env.TEMPORAL_ADDRESS ??= services.temporalAddress;
    }

    // The worker (every section) and the API of (h), (i) and (k) run compiled, as in production.
    // (m) alone needs neither: its APIs run in the bench process and no run goes past its first token;
    // (s) needs Redis alone.
    const needWorker = ONLY.size === 0 || [...ONLY].some((x) => x !== 'm' && x !== 's');
    if (needWorker) {
      say('building dist/ (npm run build) for the compiled worker and API');
      await build((l) => say(`build: ${l}`));
    }
    const bundlePath = fileURLToPath(new URL('../dist/workflow-bundle.js', import.meta.url));

    const llm = await startScriptedOpenAI({ models: ['gpt-4o-mini'] });
    cleanups.push(() => llm.close());
    say(`scripted OpenAI-compatible provider at ${llm.baseURL}`);

    const tag = randomUUID().slice(0, 8);
    const app = await startTestApp({
      OPENAI_BASE_URL: llm.baseURL,
      OPENAI_API_KEY: 'bench',
      MONGODB_DB: `cortex_bench_${tag}`,
      // The bench is one API key sending a few hundred requests a minute; the limiter is not what it measures.
      RATE_LIMIT_POINTS: 1_000_000,
      // One workspace runs every section's load; its share of runs is what (t) measures, against its own API.
      WORKSPACE_MAX_ACTIVE_RUNS: 1_000_000,
      WORKSPACE_RUN_SHARE: 1_000_000,
    });
    cleanups.push(() => app.close());
    cleanups.push(() => dropRedisKeys(app));
    cleanups.push(() => app.deps.db.dropDatabase());
    say(
      `API at ${app.url} (database ${app.config.MONGODB_DB}, Redis prefix ${app.config.REDIS_PREFIX}, task queue ${app.config.TEMPORAL_TASK_QUEUE})`,
    );

    say(`starting the platform worker${runs('b') || runs('c') ? ' and bundling workflows for the bare worker' : ''}`);
    const bundleStarted = performance.now();
    // The platform worker runs in its own process, as `npm run up` runs it beside the API.
    // The bare worker serves (b) and (c) only.
    const needBare = runs('b') || runs('c');
    const [workerMetricsPort] = await freePorts(1);
    /** SIGTERM and wait for the exit; a no-op once the process has exited. */
    const stopperOf = (child: ChildProcess) => {
      let exited = false;
      child.once('exit', () => {
        exited = true;
      });
      return async () => {
        if (exited) return;
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      };
    };
    const startWorker = () =>
      spawnWorkerProcess(
        app,
        {
          OPENAI_BASE_URL: llm.baseURL,
          OPENAI_API_KEY: 'bench',
          CORTEX_WORKFLOW_BUNDLE: bundlePath,
          WORKER_METRICS_PORT: String(workerMetricsPort),
        },
        'compiled',
      ).then((child) => ({ pid: child.pid, stop: stopperOf(child) }));
    const startApi = async (env: Record<string, string> = {}): Promise<ServedApi & { stop(): Promise<void> }> => {
      const [apiPort] = await freePorts(1);
      const child = await spawnApiProcess(
        app,
        apiPort,
        {
          OPENAI_BASE_URL: llm.baseURL,
          OPENAI_API_KEY: 'bench',
          RATE_LIMIT_POINTS: '1000000',
          // (h), (k) and (n) load one workspace as far as they go; (t) passes the share it measures.
          WORKSPACE_MAX_ACTIVE_RUNS: '1000000',
          WORKSPACE_RUN_SHARE: '1000000',
          ...env,
        },
        'compiled',
      );
      const stop = stopperOf(child);
      cleanups.push(stop);
      const startRss = pidRss(child.pid);
      say(
        `compiled API process at http://127.0.0.1:${apiPort} (pid ${child.pid}, ${(startRss / MB).toFixed(0)} MB at start)`,
      );
      return { client: makeClient(`http://127.0.0.1:${apiPort}`), pid: child.pid, startRss, stop };
    };
    let worker: Awaited<ReturnType<typeof startWorker>>;
    const [firstWorker, bare] = await Promise.all([
      needWorker ? startWorker() : { pid: undefined, stop: async () => undefined },
      needBare
        ? bundleWorkflowCode({
            workflowsPath: fileURLToPath(new URL('./bench-workflows.ts', import.meta.url)),
            logger: new DefaultLogger('WARN'),
          }).then((bundle) => startBare(app, bundle))
        : undefined,
    ]);
    worker = firstWorker;
    cleanups.push(() => worker.stop());
    if (bare) cleanups.push(() => bare.stop());
    say(`workers running (${fmt(performance.now() - bundleStarted)} ms)`);

    const ws = await buildWorkspace(app);
    const probes = await probeServices(app);
    const r: Results = {};
    if (runs('a')) r.a = await measureTtft(app, ws, llm);
    if (runs('b')) r.b = await measureThroughput(app, ws, llm, bare!, worker.pid);
    if (runs('c')) r.c = await measurePathway(app, ws, bare!);
    if (runs('q')) {
      const names = new Map<number, string>([
        [process.pid, 'bench process (API, provider, clients)'],
        ...(worker.pid ? [[worker.pid, 'worker'] as [number, string]] : []),
      ]);
      const neuronId = await createNeuron(app, ws, 'bench-map');
      r.q = await measurePathwayParallel(app, ws, llm, neuronId, say, {
        cpu: () => treeCpu(names),
        store: () => storeCounters(app, `http://127.0.0.1:${workerMetricsPort}/metrics`),
        history: async (id) => {
          const h = await app.deps.temporal.client.workflow.getHandle(id).fetchHistory();
          return (h.events ?? []).map((e) => ({
            type: Number(e.eventType),
            ms: Number(e.eventTime?.seconds ?? 0) * 1000 + Math.round((e.eventTime?.nanos ?? 0) / 1e6),
          }));
        },
      });
    }
    if (runs('r')) r.r = await measureConsole(app, ws, say);
    if (runs('d')) r.d = await measureRealistic(app, ws, llm);
    if (runs('e')) r.e = await measureSearch(say, 'compiled');
    if (runs('f')) r.f = await measureStakeholderMaps(app, ws);
    if (runs('g')) r.g = await measureBudgets(app, llm);
    if (runs('j')) r.j = await measureRoundTrips(app, ws, llm, `http://127.0.0.1:${workerMetricsPort}/metrics`);
    if (runs('h') || runs('i')) {
      const served = await startApi();
      r.h = await measureStreaming(served, ws, llm, worker.pid);
      await served.stop();
    }
    if (runs('k')) {
      // The soak starts from freshly started processes, whatever ran before it: after (h) the
      // API and the worker would first shrink from a heap sized for a hundred streams and then
      // grow back, which is not what the soak looks for.
      if (runs('h') || runs('i')) {
        await worker.stop();
        worker = await startWorker();
      }
      r.k = await measureSoak(await startApi(), ws, llm, worker.pid);
    }
    if (runs('t')) {
      // (t) Noisy neighbour: its own fresh API process with the default shares, the same worker.
      // The defaults: a workspace's cap alone (50) and its share while others run (WORKSPACE_RUN_SHARE, 10).
      const defaults = ConfigSchema.parse({});
      const share = Number(process.env.BENCH_NOISY_SHARE ?? defaults.WORKSPACE_RUN_SHARE);
      const served = await startApi({
        WORKSPACE_MAX_ACTIVE_RUNS: String(defaults.WORKSPACE_MAX_ACTIVE_RUNS),
        WORKSPACE_RUN_SHARE: String(share),
        // BENCH_NOISY_SHARED_SLOTS: the admission's slots per workspace while another is active (to compare).
        ...(process.env.BENCH_NOISY_SHARED_SLOTS
          ? { ADMISSION_WORKSPACE_SHARED_SLOTS: process.env.BENCH_NOISY_SHARED_SLOTS }
          : {}),
      });
      const b = await buildWorkspace(app);
      r.t = await measureNoisyNeighbour({
        api: served.client,
        a: ws,
        b,
        llm,
        say,
        runs: Number(process.env.BENCH_NOISY_RUNS ?? 500),
        samples: Number(process.env.BENCH_NOISY_SAMPLES ?? 10),
        share,
        boundMs: 300_000,
        cpu: () =>
          treeCpu(
            new Map<number, string>([
              ...(served.pid ? [[served.pid, 'api'] as [number, string]] : []),
              ...(worker.pid ? [[worker.pid, 'worker'] as [number, string]] : []),
              [process.pid, 'bench'],
            ]),
          ),
      });
      await served.stop();
    }
    if (runs('o')) r.o = await measureUsageScale(app, say);
    if (runs('s')) r.s = await measureStreamWriter(app.config.REDIS_URL, say);
    if (runs('n')) {
      // (n) Load: its own fresh API process, the same worker.
      const served = await startApi();
      const neuronId = await createNeuron(served.client, ws, 'bench-load');
      r.n = await measureLoad({
        api: served.client,
        apiRss: () => pidRss(served.pid),
        ws,
        llm,
        neuronId,
        say,
        seconds: Number(process.env.BENCH_LOAD_SECONDS ?? 180),
        runs: 50,
        readersPerRun: 2,
        writesPerS: 20,
        stepS: Number(process.env.BENCH_LOAD_STEP_S ?? 15),
      });
      await served.stop();
    }
    // Last: they fill the store.
    if (runs('l')) r.l = await measureStoredHistory(app, ws, llm);
    if (runs('p')) r.p = await measureLists(app, say);
    // After (l): it fills the store with months of history.
    if (runs('m')) r.m = await measureHistorySection(llm, (fn) => cleanups.push(fn));
    console.log(summary(probes, r));
  } finally {
    say('stopping');
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
