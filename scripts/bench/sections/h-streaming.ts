/**
 * (h) Streaming at scale: STREAM_RUNS concurrent streaming neuron runs, each read by its own SSE reader
 *     on GET /v1/jobs/:id/stream, against the scripted provider streaming STREAM_TOKENS tokens, one every
 *     STREAM_TOKEN_MS ms. Tokens per second delivered to the readers ÷ tokens per second emitted by the
 *     provider, and the delay of each token from the provider's socket write to the reader's parse.
 * (i) Memory: resident memory (RSS) of the API and of the worker process, in the first second after a run,
 *     idle (IDLE_SETTLE_MS after the last run, once V8 has shrunk the heap) and at peak during (h).
 *     Both run compiled, as in production (`npm run build`: `node dist/api/server.js`, and
 *     `node dist/worker/index.js` with the prebuilt workflow bundle), each in a process of its own,
 *     so the figures are theirs alone (VmRSS); the provider and the readers live in the bench process.
 * (i) is measured during (h): selecting either runs both.
 */
import type { TestClient } from '../../../test/support/app.js';
import { lastUserText, type ScriptedOpenAI, type ScriptedRequestBody } from '../../../test/support/scripted-openai.js';
import { dataOf, readSse } from '../../../test/support/sse.js';
import { MB, pidRss } from '../probes.js';
import type { BenchSection, ServedApi } from '../section.js';
import { median, pct } from '../stats.js';
import { createNeuron, fmt, RUN_TIMEOUT_MS, runThroughApi, say, verdict, type Workspace } from '../support.js';

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
 * The provider's reply to `stream <run>`: `r<run>.<i> ` tokens, one every STREAM_TOKEN_MS ms after
 * STREAM_FIRST_TOKEN_MS; returns the map the moment each token is written to its socket goes into.
 */
function scriptStreams(llm: ScriptedOpenAI): Map<string, number> {
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
  return emittedAt;
}

/** (i) RSS in the first second after a run, then settled (IDLE_SETTLE_MS after it) with the API's heap parts. */
async function quietMemory(served: ServedApi, workerPid: number | undefined) {
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
  return { afterRun, idle, parts };
}

/** One run of (h): invoke `stream <run>`, read its job stream to the end, stamp each token of the last attempt into `receivedAt`. */
async function streamOne(
  app: TestClient,
  ws: Workspace,
  neuronId: string,
  run: number,
  receivedAt: Map<string, number>,
): Promise<void> {
  const readerTimeout = RUN_TIMEOUT_MS + STREAM_TOKENS * STREAM_TOKEN_MS;
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
}

/** Peak concurrency: sweep over each run's first and last emit. */
function peakConcurrency(emittedAt: Map<string, number>): number {
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
  return peakConcurrent;
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
  const emittedAt = scriptStreams(llm);

  // A short warm-up run (same neuron, same path) so the first of the hundred does not pay for JIT.
  llm.script([{ chunks: ['warm'], usage: { prompt_tokens: 5, completion_tokens: 1 } }]);
  await runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, { message: 'warm-up', stream: true });

  const { afterRun, idle, parts } = await quietMemory(served, workerPid);
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
  const one = (run: number): Promise<void> => streamOne(app, ws, neuronId, run, receivedAt);

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

  const peakConcurrent = peakConcurrency(emittedAt);

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

export const streaming: BenchSection = {
  letter: 'h',
  alsoBy: ['i'],
  title: 'Streaming at scale (h) and the memory of the compiled API and worker (i)',
  run: async ({ ws, llm, worker, startApi }) => {
    const served = await startApi();
    const h = await measureStreaming(served, ws, llm, worker.pid);
    await served.stop();
    return streamingSummary(h, verdict);
  },
};
