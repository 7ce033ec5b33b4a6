/**
 * (t) Noisy neighbour (issue 44, docs/operations.md "Fair share"), against a compiled API process.
 *
 * Workspace A measures, one request at a time and in turn: a neuron invoke's time to first token
 * (POST invoke with stream: true → first `token` on the job stream), a small pathway run's time to
 * completion (POST execute → `complete` on its job stream) and a search answer (POST /v1/search).
 * First idle (NOISY_SAMPLES of each), then while workspace B starts NOISY_RUNS streaming runs at
 * once against the provider simulator (test/support/provider-sim.ts: a think before the first token,
 * then paced tokens), each read to its end by its own SSE reader; B's client is a process of its own
 * (scripts/bench/measures/noisy-flood.ts), so it does not share A's client's event loop. B behaves as a client should: a
 * start refused with 429 (its queue full, WORKSPACE_MAX_QUEUED_RUNS) is sent again after its
 * Retry-After (with jitter), so B keeps as much of the platform busy as it is allowed to. A's
 * samples under the flood are taken while B still has runs to start or running.
 * Reported: median and max idle and under the flood, and whether each median and max is within
 * 2× idle, with the API's own measure of the same requests (`Server-Timing`). Bounded: the flood is given up after NOISY_BOUND_MS; loopback only.
 */
import type { TestClient } from '../../../test/support/app.js';
import { createSimulation } from '../../../test/support/provider-sim.js';
import { lastUserText, type ScriptedOpenAI, type ScriptedReply } from '../../../test/support/scripted-openai.js';
import { dataOf, readSse } from '../../../test/support/sse.js';
import { startFlood } from './noisy-flood.js';

export interface NoisyWorkspace {
  key: string;
  brainId: string;
  brainHeaders: Record<string, string>;
}

interface Series {
  median: number;
  max: number;
}
/** A's measures of one phase (idle or under the flood); `*Accept` is the part from the POST to its `202`. */
interface Phase {
  invoke: Series;
  invokeAccept: Series;
  pathway: Series;
  pathwayAccept: Series;
  search: Series;
  /** The same requests' time inside the API (its `Server-Timing` `app`), and of it the admission wait. */
  invokeAcceptServer: Series;
  pathwayAcceptServer: Series;
  searchServer: Series;
  admitWait: Series;
}
export interface NoisyResult {
  runs: number;
  share: number;
  idle: Phase;
  flood: Phase;
  /** CPU used by each process (percent of one core) while A measured idle and under the flood. */
  cpu: { idle: Record<string, number>; flood: Record<string, number> } | null;
  b: { completed: number; failed: number; refusals: number; wallMs: number; samplesDuringFlood: number };
  /** A's rounds that failed (a refusal it met, a failed run), idle and under the flood, and the first reason. */
  aFailures: { idle: number; flood: number; first: string | null };
}

const AIM_RATIO = 2;
const A_REPLY: ScriptedReply = {
  chunks: ['Hello', ' from', ' A.'],
  usage: { prompt_tokens: 10, completion_tokens: 3 },
};

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const series = (xs: number[]): Series => ({ median: median(xs), max: Math.max(...xs) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const phase = (xs: Record<keyof Phase, number[]>): Phase => {
  const of = (v: number[]) => series(v.length ? v : [NaN]);
  return {
    invoke: of(xs.invoke),
    invokeAccept: of(xs.invokeAccept),
    pathway: of(xs.pathway),
    pathwayAccept: of(xs.pathwayAccept),
    search: of(xs.search),
    invokeAcceptServer: of(xs.invokeAcceptServer),
    pathwayAcceptServer: of(xs.pathwayAcceptServer),
    searchServer: of(xs.searchServer),
    admitWait: of(xs.admitWait),
  };
};

/** One phase of a response's `Server-Timing` (api/middleware/request.ts), in ms; NaN when absent. */
const serverMs = (headers: Headers, name: string): number => {
  const m = new RegExp(`(?:^|, )${name};dur=([0-9.]+)`).exec(headers.get('server-timing') ?? '');
  return m ? Number(m[1]) : NaN;
};

/** POSTs a run start and reads its job stream until `stopAt` says so; the ms to the 202 and to that point, or throws. */
async function timedRun(
  api: TestClient,
  key: string,
  path: string,
  body: Record<string, unknown>,
  headers: Record<string, string> | undefined,
  stopAt: 'token' | 'complete',
): Promise<{ total: number; accept: number; server: number; admit: number }> {
  const t0 = performance.now();
  const res = await api.post(path, key, body, headers);
  if (res.status !== 202) throw new Error(`POST ${path} answered ${res.status}: ${res.text}`);
  const accept = performance.now() - t0;
  const server = serverMs(res.headers, 'app');
  const admit = serverMs(res.headers, 'admit');
  let at: number | undefined;
  let seen = 0;
  const sse = await readSse(`${api.url}/v1/jobs/${String(res.body.job_id)}/stream`, {
    headers: { authorization: `Bearer ${key}` },
    timeoutMs: 60_000,
    until: (events) => {
      for (; seen < events.length; seen++) {
        const type = dataOf(events[seen]!).type;
        if (type === 'error') throw new Error(`job ${String(res.body.job_id)} failed: ${events[seen]!.data}`);
        if (type === stopAt || (stopAt === 'token' && type === 'complete')) at ??= performance.now();
      }
      return at !== undefined;
    },
  });
  if (at === undefined)
    throw new Error(`job stream ${String(res.body.job_id)} ended without ${stopAt} (${sse.status})`);
  return { total: at - t0, accept, server, admit };
}

/** Percent of one core each process used between two CPU snapshots (seconds so far, by name) `ms` apart. */
function cpuPercent(before: Map<string, number>, after: Map<string, number>, ms: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, s] of after) {
    const d = s - (before.get(name) ?? 0);
    if (d > 0) out[name] = Math.round((d * 100_000) / ms);
  }
  return out;
}

export async function measureNoisyNeighbour(o: {
  api: TestClient;
  a: NoisyWorkspace;
  b: NoisyWorkspace;
  llm: ScriptedOpenAI;
  say: (line: string) => void;
  runs: number;
  samples: number;
  share: number;
  boundMs: number;
  /** CPU seconds so far by process name (the bench's process tree), when it can be read. */
  cpu?: (named?: [number, string][]) => Map<string, number>;
}): Promise<NoisyResult> {
  const { api, a, b, llm, say } = o;
  const sim = createSimulation({ firstTokenMs: [300, 800], interTokenMs: [20, 40], tokens: 60, seed: 44 });
  llm.setDefault((body) => (lastUserText(body).startsWith('flood ') ? sim.reply(body) : A_REPLY));

  const neuron = async (ws: NoisyWorkspace, name: string) => {
    const r = await api.post('/v1/neurons', ws.key, {
      name,
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini', system_prompt: `You are ${name}.` },
    });
    if (r.status !== 201) throw new Error(`creating neuron ${name} answered ${r.status}: ${r.text}`);
    return String(r.body.id);
  };
  const neuronA = await neuron(a, 'noisy-a');
  const neuronB = await neuron(b, 'noisy-b');
  const p = await api.post(
    '/v1/pathways',
    a.key,
    {
      name: 'noisy-a-pathway',
      pathway_graph: {
        nodes: [
          { id: 's', type: 'start' },
          { id: 't', type: 'transform', data: { expression: '{ "n": input.n + 1 }' } },
          { id: 'o', type: 'output', data: { value: 'last.n' } },
        ],
        edges: [
          { id: 'e1', source: 's', target: 't' },
          { id: 'e2', source: 't', target: 'o' },
        ],
      },
    },
    a.brainHeaders,
  );
  if (p.status !== 201) throw new Error(`creating the pathway answered ${p.status}: ${p.text}`);
  const pathwayA = String(p.body.id);

  const searchOnce = async (): Promise<{ total: number; server: number; admit: number }> => {
    const t0 = performance.now();
    const r = await api.post('/v1/search', a.key, { query: 'neurons/noisy' }, a.brainHeaders);
    if (r.status !== 200) throw new Error(`search answered ${r.status}: ${r.text}`);
    return { total: performance.now() - t0, server: serverMs(r.headers, 'app'), admit: serverMs(r.headers, 'admit') };
  };
  // The index's first build, and the neuron written above, before anything is timed.
  for (let i = 0; ; i++) {
    const r = await api.post('/v1/search', a.key, { query: 'neurons/noisy' }, a.brainHeaders);
    if (r.status === 200 && JSON.stringify(r.body).includes('noisy-a')) break;
    if (i > 60) throw new Error(`search is not ready: ${r.status} ${r.text}`);
    await sleep(500);
  }

  /** One round of A's three measures, in turn. */
  const round = async (i: number) => ({
    invoke: await timedRun(
      api,
      a.key,
      `/v1/neurons/${neuronA}/invoke`,
      { message: `a ${i}`, stream: true },
      undefined,
      'token',
    ),
    pathway: await timedRun(
      api,
      a.key,
      `/v1/pathways/${pathwayA}/execute`,
      { input: { n: i } },
      a.brainHeaders,
      'complete',
    ),
    search: await searchOnce(),
  });
  /** A's failures (a 503 or 429 it met, a run that failed): none is the aim; each is reported, not fatal. */
  const failures: string[] = [];
  const collect = async (n: number, go: () => boolean) => {
    const out: Record<keyof Phase, number[]> = {
      invoke: [],
      invokeAccept: [],
      pathway: [],
      pathwayAccept: [],
      search: [],
      invokeAcceptServer: [],
      pathwayAcceptServer: [],
      searchServer: [],
      admitWait: [],
    };
    for (let i = 0; i < n && go(); i++) {
      const r = await round(i).catch((e: unknown) => {
        failures.push(e instanceof Error ? e.message : String(e));
        return null;
      });
      if (!r) continue;
      out.invoke.push(r.invoke.total);
      out.invokeAccept.push(r.invoke.accept);
      out.pathway.push(r.pathway.total);
      out.pathwayAccept.push(r.pathway.accept);
      out.search.push(r.search.total);
      out.invokeAcceptServer.push(r.invoke.server);
      out.pathwayAcceptServer.push(r.pathway.server);
      out.searchServer.push(r.search.server);
      out.admitWait.push(Math.max(r.invoke.admit, r.pathway.admit, r.search.admit));
    }
    return out;
  };

  say(`(t) noisy neighbour: warm-up, then ${o.samples} idle rounds of A (invoke, pathway run, search)`);
  await collect(3, () => true);
  let cpu0 = o.cpu?.();
  let at0 = performance.now();
  const idle = await collect(o.samples, () => true);
  const cpuIdle = cpu0 && o.cpu ? cpuPercent(cpu0, o.cpu(), performance.now() - at0) : null;
  const idleFailures = failures.length;

  say(
    `(t) workspace B starts ${o.runs} streaming runs at once (its share: ${o.share} active runs); A measures meanwhile`,
  );
  let running = true;
  let t0 = performance.now();
  // B is another tenant's program: its client runs in a process of its own (scripts/bench/measures/noisy-flood.ts),
  // so its 500 starts and SSE readers do not delay A's client, whose latencies are the measure.
  // BENCH_NOISY_FLOOD=inprocess runs it in this process instead, to compare.
  const floodProcess = startFlood(
    { url: api.url, key: b.key, neuronId: neuronB, runs: o.runs, boundMs: o.boundMs },
    process.env.BENCH_NOISY_FLOOD === 'inprocess',
  );
  const flood = floodProcess.done.finally(() => {
    running = false;
  });
  flood.catch(() => undefined);
  // Let the burst land (every start at once) before A's first sample: B's process first loads its modules.
  await floodProcess.started;
  t0 = performance.now();
  await sleep(1_000);
  const named = (): [number, string][] => (floodProcess.pid ? [[floodProcess.pid, 'B client']] : []);
  cpu0 = o.cpu?.(named());
  at0 = performance.now();
  const under = await collect(o.samples, () => running);
  const cpuFlood = cpu0 && o.cpu ? cpuPercent(cpu0, o.cpu(named()), performance.now() - at0) : null;
  const samplesDuringFlood = under.invoke.length;
  const outcome = await flood;
  const wallMs = performance.now() - t0;
  if (outcome.first) say(`(t) a run of B failed: ${outcome.first}`);
  const { completed, failed, refusals } = outcome;
  const result: NoisyResult = {
    runs: o.runs,
    share: o.share,
    idle: phase(idle),
    flood: phase(under),
    cpu: cpuIdle && cpuFlood ? { idle: cpuIdle, flood: cpuFlood } : null,
    b: { completed, failed, refusals, wallMs, samplesDuringFlood },
    aFailures: { idle: idleFailures, flood: failures.length - idleFailures, first: failures[0] ?? null },
  };
  for (const line of noisySummary(result)) say(line.trim());
  return result;
}

export function noisySummary(t: NoisyResult): string[] {
  const fmt = (x: number) => x.toFixed(1);
  const row = (label: string, i: Series, f: Series) =>
    `  ${label.padEnd(28)} idle median ${fmt(i.median)} ms max ${fmt(i.max)} ms · flood median ${fmt(f.median)} ms max ${fmt(f.max)} ms · ` +
    `median ${fmt(f.median / i.median)}× max ${fmt(f.max / i.max)}× → ${f.median <= AIM_RATIO * i.median && f.max <= AIM_RATIO * i.max ? 'within 2×' : 'NOT within 2×'}`;
  return [
    `(t) Noisy neighbour: B starts ${t.runs} streaming runs at once (share ${t.share} active runs per workspace; B's client ${process.env.BENCH_NOISY_FLOOD === 'inprocess' ? "in the bench's process" : 'in a process of its own'}); A measured during it`,
    `  B: ${t.b.completed} completed, ${t.b.failed} failed, ${t.b.refusals} starts refused (429, retried after Retry-After), ${(t.b.wallMs / 1000).toFixed(1)} s; A's rounds under the flood: ${t.b.samplesDuringFlood}`,
    `  A's rounds that failed: ${t.aFailures.idle} idle, ${t.aFailures.flood} under the flood${t.aFailures.first ? ` (first: ${t.aFailures.first.slice(0, 160)})` : ''}`,
    row('A invoke, first token', t.idle.invoke, t.flood.invoke),
    row('  of which POST → 202', t.idle.invokeAccept, t.flood.invokeAccept),
    row('A pathway run, completion', t.idle.pathway, t.flood.pathway),
    row('  of which POST → 202', t.idle.pathwayAccept, t.flood.pathwayAccept),
    row('A search, answer', t.idle.search, t.flood.search),
    // The same requests as the API measured them (Server-Timing): what is left of the client's figure went
    // before the API's middleware saw the request or after it answered (connection, kernel, the client).
    row('  inside the API: invoke 202', t.idle.invokeAcceptServer, t.flood.invokeAcceptServer),
    row('  inside the API: pathway 202', t.idle.pathwayAcceptServer, t.flood.pathwayAcceptServer),
    row('  inside the API: search', t.idle.searchServer, t.flood.searchServer),
    `  ${"  A's admission wait (worst)".padEnd(28)} idle median ${fmt(t.idle.admitWait.median)} ms max ${fmt(t.idle.admitWait.max)} ms · flood median ${fmt(t.flood.admitWait.median)} ms max ${fmt(t.flood.admitWait.max)} ms`,
    ...(t.cpu
      ? [
          `  CPU (% of one core) idle: ${cpuLine(t.cpu.idle)}`,
          `  CPU (% of one core) under the flood: ${cpuLine(t.cpu.flood)}`,
        ]
      : []),
  ];
}

const cpuLine = (c: Record<string, number>): string =>
  Object.entries(c)
    .sort((x, y) => y[1] - x[1])
    .map(([name, pct]) => `${name} ${pct}`)
    .join(', ');
