/**
 * (a) Time to first token: a neuron invoke through the API (invoke + job stream), and the same neuron
 * through the OpenAI-compatible endpoint (`POST /v1/openai/chat/completions`, `stream: true`),
 * versus the same scripted reply streamed straight from the provider by the real openai adapter.
 * Shows the latency the platform adds on each route.
 */
import { createParser } from 'eventsource-parser';
import { createOpenAIProvider } from '../../../src/llm/openai.js';
import type { TestApp } from '../../../test/support/app.js';
import type { ScriptedOpenAI } from '../../../test/support/scripted-openai.js';
import type { BenchSection } from '../section.js';
import { median, spread, type Spread } from '../stats.js';
import { acceptPathLines, traceAcceptPath, type AcceptPath } from '../measures/hot-path.js';
import {
  createNeuron,
  fmt,
  runThroughApi,
  say,
  tsMs,
  TTFT_REPLY,
  TTFT_RUNS,
  verdict,
  WARMUP,
  type RunTrace,
  type Workspace,
} from '../support.js';

/** Aim of issue 50 (the hot path under its guards), printed next to the figures; the OpenAI-compatible route has the same. */
const AIM_ADDED_TTFT_MS = 10;

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

interface TtftResult {
  platform: Spread;
  /** The same neuron through POST /v1/openai/chat/completions with stream: true, to its first content chunk. */
  openai: Spread;
  direct: Spread;
  addedAtMedian: number;
  openaiAddedAtMedian: number;
  accepted: Spread;
  breakdown: TtftBreakdown;
  /** Traced runs after the timed ones: the store and Redis commands of each route's POST → 202 (or first byte). */
  paths: { invoke: AcceptPath; openai: AcceptPath };
}

/** Traced runs per route after the timed ones (MONITOR and command listeners on). */
const TRACED_RUNS = 15;

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
    const run = await openaiTraced(i);
    return run.firstToken! - run.t0;
  };
  /** One OpenAI-compatible completion; its `accepted` is when the response's headers arrived (the run is stored by then). */
  const openaiTraced = async (i: number): Promise<RunTrace> => {
    const startEpoch = Date.now();
    const t0 = performance.now();
    const res = await fetch(`${app.url}/v1/openai/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: neuronId, stream: true, messages: [{ role: 'user', content: `ttft ${i}` }] }),
    });
    const accepted = performance.now();
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
    return { jobId: '', startEpoch, t0, accepted, firstToken: first, done: performance.now(), events: [] };
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

  const redisUrl = app.config.REDIS_URL;
  const paths = {
    invoke: await traceAcceptPath(app, redisUrl, TRACED_RUNS, (i) => platformOnce(TTFT_RUNS + i)),
    openai: await traceAcceptPath(app, redisUrl, TRACED_RUNS, (i) => openaiTraced(TTFT_RUNS + i)),
  };

  const result: TtftResult = {
    platform: spread(platformMs),
    openai: spread(openaiMs),
    direct: spread(directMs),
    addedAtMedian: median(platformMs) - median(directMs),
    openaiAddedAtMedian: median(openaiMs) - median(directMs),
    accepted: spread(runs.map((r) => r.accepted - r.t0)),
    breakdown,
    paths,
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

function summary(a: TtftResult): string[] {
  const bd = a.breakdown;
  return [
    `  (a) Time to first token, ${TTFT_RUNS} sequential runs`,
    `      platform (invoke → first SSE token)   median ${fmt(a.platform.median).padStart(7)} ms   p90 ${fmt(a.platform.p90).padStart(7)} ms`,
    `      OpenAI-compatible (stream → content)  median ${fmt(a.openai.median).padStart(7)} ms   p90 ${fmt(a.openai.p90).padStart(7)} ms   (added ${fmt(a.openaiAddedAtMedian)} ms, aim < ${AIM_ADDED_TTFT_MS} ms: ${verdict(a.openaiAddedAtMedian < AIM_ADDED_TTFT_MS)})`,
    `      direct (openai adapter → onToken)     median ${fmt(a.direct.median).padStart(7)} ms   p90 ${fmt(a.direct.p90).padStart(7)} ms`,
    `      added by the platform at the median   ${fmt(a.addedAtMedian)} ms   (aim < ${AIM_ADDED_TTFT_MS} ms: ${verdict(a.addedAtMedian < AIM_ADDED_TTFT_MS)})`,
    `      where it goes (medians): POST → 202 ${fmt(bd.apiToAccepted)} | 202 → first token written ${fmt(bd.acceptedToEmit)}`,
    `        | written → read by the client ${fmt(bd.emitToClient)} ms (the API's first turn streams it)`,
    `      off that path: POST → workflow started ${fmt(bd.apiToStart)}, its first task picked up ${fmt(bd.taskDispatch)}, run ${fmt(bd.taskRun)} ms`,
    ...acceptPathLines('invoke', a.paths.invoke),
    ...acceptPathLines('OpenAI-compatible (to the response headers)', a.paths.openai),
  ];
}

export const ttft: BenchSection = {
  letter: 'a',
  title: 'Time to first token: invoke, OpenAI-compatible and the provider direct',
  run: async ({ app, ws, llm }) => summary(await measureTtft(app, ws, llm)),
};
