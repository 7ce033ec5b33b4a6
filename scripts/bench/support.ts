/**
 * What the bench's sections share: printing, the parameters more than one section uses, and the
 * platform helpers (a run through the API read to its terminal event, a neuron on the scripted
 * provider, a Temporal timestamp, the bench's Redis keys).
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { buildWorkspace, TestApp, TestClient } from '../../test/support/app.js';
import type { ScriptedReply } from '../../test/support/scripted-openai.js';
import { dataOf, readSse } from '../../test/support/sse.js';
import { deleteKeys, scanKeys } from '../../src/kernel/redis.js';

// ─── Parameters shared by several sections (bounded: the whole run takes a minute or two on 2 cores) ──

/** Model of the benchmark neurons; the `openai` provider points at the scripted server. */
const MODEL = 'openai/gpt-4o-mini';
/** Untimed runs before each measure: JIT, connection pools, Temporal caches. */
export const WARMUP = 3;
/** (a) Sequential invokes (and direct provider calls) measured for time to first token; (g) runs each. */
export const TTFT_RUNS = 30;
/** (a) The reply both paths stream: several chunks, no artificial delay. */
export const TTFT_REPLY: ScriptedReply = {
  chunks: ['Hello', ' from', ' the', ' scripted', ' provider.'],
  usage: { prompt_tokens: 20, completion_tokens: 5 },
};
/** (b) A trivial run: one short chunk. */
export const TPUT_REPLY: ScriptedReply = { chunks: ['ok'], usage: { prompt_tokens: 10, completion_tokens: 1 } };
/** Longest a single run may take before the bench reports an error. */
export const RUN_TIMEOUT_MS = 60_000;

// ─── Printing ─────────────────────────────────────────────────────────────────────────────────

export const say = (line: string): void => console.log(`[bench] ${line}`);
export const fmt = (ms: number): string => ms.toFixed(1);
/** Whether an aim is met, as the summary prints it. */
export const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
/** Wall clock in epoch ms with sub-ms precision, comparable to Temporal's and Redis's timestamps on this host. */
const epochNow = (): number => performance.timeOrigin + performance.now();

// ─── Platform helpers ─────────────────────────────────────────────────────────────────────────

export type Workspace = Awaited<ReturnType<typeof buildWorkspace>>;

/** What one platform run looked like from the client: its job id, first token and terminal event. */
export interface RunTrace {
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
export async function runThroughApi(
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
export async function createNeuron(app: TestClient, ws: Workspace, name: string): Promise<string> {
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
export function tsMs(ts: ProtoTime): number {
  if (!ts) return NaN;
  const s = ts.seconds;
  const seconds = s == null ? 0 : typeof s === 'number' ? s : s.toNumber();
  return seconds * 1000 + (ts.nanos ?? 0) / 1e6;
}

/** Deletes the bench's Redis keys (its own prefix) on a shared Redis. */
export async function dropRedisKeys(app: TestApp): Promise<void> {
  for await (const keys of scanKeys(app.deps.redis, `${app.config.REDIS_PREFIX}*`))
    await deleteKeys(app.deps.redis, keys);
}
