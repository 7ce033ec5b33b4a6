/**
 * Bench section (q): pathway parallelism, run by run through the API (execute, then the job's
 * status until it ends).
 * - Parallel branches must overlap their waits: a 20-way fan-out of 1-second delays into a join
 *   ÷ one 1-second delay (aim ≤ 1.3).
 * - A map must keep `concurrency` children busy: 100 items at concurrency 10, each a neuron run on
 *   a provider that answers after 200 ms, ÷ (10 × a map of one item) (aim ≤ 1.5).
 */
import type { TestClient } from '../../../test/support/app.js';
import type { buildWorkspace } from '../../../test/support/app.js';
import type { ScriptedOpenAI } from '../../../test/support/scripted-openai.js';

type Workspace = Awaited<ReturnType<typeof buildWorkspace>>;
const FAN_OUT = 20;
const DELAY_S = 1;
const RUNS = 5;

export interface ParallelResult {
  fanOut: number;
  fanOutMs: number[];
  singleMs: number[];
  ratio: number;
  map: {
    items: number;
    concurrency: number;
    mapMs: number[];
    oneMs: number[];
    ratio: number;
    /** CPU milliseconds per item of the 100-item maps, by process (what a shared machine's load cannot distort). */
    cpuMsPerItem: Record<string, number>;
    /** Store commands per item of the 100-item maps: MongoDB by the API and by the worker (by command), Redis in all. */
    storePerItem: {
      api: Record<string, number>;
      worker: Record<string, number>;
      redis: number;
      redisByCommand: Record<string, number>;
    };
    /** The last 100-item map's own workflow tasks (its history): the one run every item's start and end goes through. */
    parentTasks?: ParentTasks;
  };
}
/** CPU seconds spent so far by each process of the bench's tree, by name. */
export type CpuReader = () => Map<string, number>;
/** MongoDB commands by name sent so far by the API and by the worker, and Redis commands served in all. */
export interface StoreCounters {
  /** MongoDB commands by name. */
  api: Map<string, number>;
  worker: Map<string, number>;
  /** MongoDB commands by `name collection` (`find jobs`). */
  apiByCollection: Map<string, number>;
  workerByCollection: Map<string, number>;
  redis: number;
  redisByCommand: Map<string, number>;
}
/** What the map measurement reads before and after its maps. */
export interface MapProbes {
  cpu: CpuReader;
  store: () => Promise<StoreCounters>;
  /** The workflow history's events of a run: type number and time (ms). */
  history?: (workflowId: string) => Promise<{ type: number; ms: number }[]>;
}
/** A run's workflow tasks, from its history: how many, how long each waited and ran, and the share of the run they took. */
export interface ParentTasks {
  tasks: number;
  scheduleToStartMs: number;
  startToCompleteMs: number;
  busyShare: number;
}
// Temporal's EventType numbers (temporal.api.enums.v1.EventType).
const WFT_SCHEDULED = 5;
const WFT_STARTED = 6;
const WFT_COMPLETED = 7;

/** The workflow tasks of one history (see ParentTasks). */
function tasksOf(events: { type: number; ms: number }[]): ParentTasks {
  let scheduled = 0;
  let started = 0;
  let waited = 0;
  let ran = 0;
  let n = 0;
  for (const e of events) {
    if (e.type === WFT_SCHEDULED) scheduled = e.ms;
    else if (e.type === WFT_STARTED) {
      started = e.ms;
      waited += started - scheduled;
    } else if (e.type === WFT_COMPLETED) {
      ran += e.ms - started;
      n++;
    }
  }
  const span = events.length ? events.at(-1)!.ms - events[0]!.ms : 0;
  return {
    tasks: n,
    scheduleToStartMs: n ? Math.round((waited / n) * 10) / 10 : 0,
    startToCompleteMs: n ? Math.round((ran / n) * 10) / 10 : 0,
    busyShare: span ? Math.round(((waited + ran) / span) * 100) / 100 : 0,
  };
}
const MAP_ITEMS = 100;
const MAP_CONCURRENCY = 10;
/** Rounds of (2 maps of one item, 1 map of MAP_ITEMS): the ratio is the medians' (6 and 3 runs). */
const MAP_ROUNDS = 3;
const PROVIDER_MS = 200;

/** The median (of an even count, the mean of the middle two). */
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function create(app: TestClient, ws: Workspace, name: string, graph: unknown): Promise<string> {
  const r = await app.post('/v1/pathways', ws.key, { name, pathway_graph: graph }, ws.brainHeaders);
  if (r.status !== 201) throw new Error(`creating ${name} answered ${r.status}: ${r.text}`);
  return String(r.body.id);
}

/** Executes a pathway and waits for its job to end; the time from the POST to the terminal status. */
async function timedRun(
  app: TestClient,
  ws: Workspace,
  pathwayId: string,
  input: Record<string, unknown> = {},
  jobs: string[] = [],
): Promise<number> {
  const t0 = performance.now();
  const r = await app.post(`/v1/pathways/${pathwayId}/execute`, ws.key, { input }, ws.brainHeaders);
  if (r.status !== 202) throw new Error(`execute answered ${r.status}: ${r.text}`);
  const jobId = String(r.body.job_id);
  jobs.push(jobId);
  for (;;) {
    const s = await app.get(`/v1/jobs/${jobId}/status`, ws.key);
    if (s.body.status === 'completed') return performance.now() - t0;
    if (s.body.status === 'failed') throw new Error(`job ${jobId} failed: ${JSON.stringify(s.body.failedReason)}`);
    if (performance.now() - t0 > 60_000) throw new Error(`job ${jobId} still ${String(s.body.status)} after 60 s`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

export async function measurePathwayParallel(
  app: TestClient,
  ws: Workspace,
  llm: ScriptedOpenAI,
  neuronId: string,
  say: (line: string) => void,
  probes: MapProbes,
): Promise<ParallelResult> {
  const delays = Array.from({ length: FAN_OUT }, (_, i) => ({
    id: `wait-${i + 1}`,
    type: 'delay',
    data: { seconds: DELAY_S },
  }));
  const fanOut = await create(app, ws, `bench-fan-out-${FAN_OUT}`, {
    nodes: [{ id: 'start', type: 'start' }, ...delays, { id: 'all', type: 'join' }, { id: 'out', type: 'output' }],
    edges: [
      ...delays.map((d) => ({ source: 'start', target: d.id })),
      ...delays.map((d) => ({ source: d.id, target: 'all' })),
      { source: 'all', target: 'out' },
    ],
  });
  const single = await create(app, ws, 'bench-one-delay', {
    nodes: [
      { id: 'start', type: 'start' },
      { id: 'wait', type: 'delay', data: { seconds: DELAY_S } },
      { id: 'out', type: 'output' },
    ],
    edges: [
      { source: 'start', target: 'wait' },
      { source: 'wait', target: 'out' },
    ],
  });
  say(
    `(q) parallel: warm-up 1, then ${RUNS} runs each of a ${FAN_OUT}-way fan-out of ${DELAY_S} s delays and of one delay, alternating`,
  );
  await timedRun(app, ws, fanOut);
  await timedRun(app, ws, single);
  const fanOutMs: number[] = [];
  const singleMs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    fanOutMs.push(await timedRun(app, ws, fanOut));
    singleMs.push(await timedRun(app, ws, single));
  }
  const ratio = median(fanOutMs) / median(singleMs);
  say(
    `(q) fan-out median ${median(fanOutMs).toFixed(0)} ms, one delay median ${median(singleMs).toFixed(0)} ms, ratio ${ratio.toFixed(2)}`,
  );
  return { fanOut: FAN_OUT, fanOutMs, singleMs, ratio, map: await measureMap(app, ws, llm, neuronId, say, probes) };
}

/** A map over a neuron whose provider answers after PROVIDER_MS: 100 items at concurrency 10 against one item. */
async function measureMap(
  app: TestClient,
  ws: Workspace,
  llm: ScriptedOpenAI,
  neuronId: string,
  say: (line: string) => void,
  { cpu, store, history }: MapProbes,
): Promise<ParallelResult['map']> {
  llm.setDefault(() => ({ text: 'done', firstTokenMs: PROVIDER_MS }));
  const mapPathway = await create(app, ws, 'bench-map', {
    nodes: [
      { id: 'start', type: 'start' },
      {
        id: 'each',
        type: 'map',
        data: { items: 'input.items', neuron_id: neuronId, message: 'item {{ item }}', concurrency: MAP_CONCURRENCY },
      },
      { id: 'out', type: 'output' },
    ],
    edges: [
      { source: 'start', target: 'each' },
      { source: 'each', target: 'out' },
    ],
  });
  const items = (n: number) => ({ items: Array.from({ length: n }, (_, i) => i + 1) });
  say(
    `(q) map: warm-up 1, then ${MAP_ROUNDS} rounds of 2 maps of one item and 1 map of ${MAP_ITEMS} items at concurrency ${MAP_CONCURRENCY} (provider ${PROVIDER_MS} ms)`,
  );
  await timedRun(app, ws, mapPathway, items(1));
  const oneMs: number[] = [];
  const mapMs: number[] = [];
  const mapJobs: string[] = [];
  // Rounds that alternate the two, as the fan-out does: the host's speed drifts over a minute here
  // by more than the work changes, and both sides of the ratio must see the same drift. CPU and
  // store commands are summed over the big maps alone.
  const cpuSum = new Map<string, number>();
  const storeSum: StoreCounters = {
    api: new Map(),
    worker: new Map(),
    apiByCollection: new Map(),
    workerByCollection: new Map(),
    redis: 0,
    redisByCommand: new Map(),
  };
  const add = (sum: Map<string, number>, after: Map<string, number>, before: Map<string, number>) => {
    for (const [k, v] of after) sum.set(k, (sum.get(k) ?? 0) + v - (before.get(k) ?? 0));
  };
  for (let round = 0; round < MAP_ROUNDS; round++) {
    for (let i = 0; i < 2; i++) oneMs.push(await timedRun(app, ws, mapPathway, items(1)));
    // The workers finish a run after its job ends: let the one-item maps' last writes land first.
    await new Promise((r) => setTimeout(r, 500));
    const store0 = await store();
    const cpu0 = cpu();
    mapMs.push(await timedRun(app, ws, mapPathway, items(MAP_ITEMS), mapJobs));
    add(cpuSum, cpu(), cpu0);
    await new Promise((r) => setTimeout(r, 500));
    const store1 = await store();
    add(storeSum.api, store1.api, store0.api);
    add(storeSum.worker, store1.worker, store0.worker);
    add(storeSum.apiByCollection, store1.apiByCollection, store0.apiByCollection);
    add(storeSum.workerByCollection, store1.workerByCollection, store0.workerByCollection);
    add(storeSum.redisByCommand, store1.redisByCommand, store0.redisByCommand);
    storeSum.redis += store1.redis - store0.redis;
  }
  const parentTasks = history ? tasksOf(await history(mapJobs.at(-1)!)) : undefined;
  const mapped = MAP_ROUNDS * MAP_ITEMS;
  const perItem = (sum: Map<string, number>) => {
    const out: Record<string, number> = {};
    for (const [cmd, n] of sum) {
      const d = n / mapped;
      if (d >= 0.05) out[cmd] = Math.round(d * 10) / 10;
    }
    return out;
  };
  const storePerItem = {
    api: perItem(storeSum.api),
    worker: perItem(storeSum.worker),
    redis: Math.round((storeSum.redis / mapped) * 10) / 10,
    redisByCommand: perItem(storeSum.redisByCommand),
  };
  const cpuMsPerItem: Record<string, number> = {};
  for (const [name, s] of cpuSum) {
    const ms = (s * 1000) / mapped;
    if (ms >= 0.5) cpuMsPerItem[name] = Math.round(ms * 10) / 10;
  }
  const ratio = median(mapMs) / ((MAP_ITEMS / MAP_CONCURRENCY) * median(oneMs));
  say(
    `(q) map of ${MAP_ITEMS} median ${median(mapMs).toFixed(0)} ms, one item ${median(oneMs).toFixed(0)} ms, ratio ${ratio.toFixed(2)}; CPU per item ${JSON.stringify(cpuMsPerItem)} ms; store commands per item ${JSON.stringify(storePerItem)}; the map run's own workflow tasks ${JSON.stringify(parentTasks)}`,
  );
  return {
    items: MAP_ITEMS,
    concurrency: MAP_CONCURRENCY,
    mapMs,
    oneMs,
    ratio,
    cpuMsPerItem,
    storePerItem,
    ...(parentTasks ? { parentTasks } : {}),
  };
}

export function sectionQ(q: ParallelResult): string[] {
  return [
    `(q) Pathway parallelism: a ${q.fanOut}-way fan-out of ${DELAY_S} s delays into a join ÷ one ${DELAY_S} s delay`,
    `      fan-out run median ${median(q.fanOutMs).toFixed(0)} ms   one delay median ${median(q.singleMs).toFixed(0)} ms`,
    `      ratio ${q.ratio.toFixed(2)}   (aim ≤ 1.3: ${q.ratio <= 1.3 ? 'met' : 'NOT met'})`,
    `    a map of ${q.map.items} items at concurrency ${q.map.concurrency} over a ${PROVIDER_MS} ms provider ÷ (${q.map.items / q.map.concurrency} × a map of one item)`,
    `      map median ${median(q.map.mapMs).toFixed(0)} ms   one item median ${median(q.map.oneMs).toFixed(0)} ms`,
    `      ratio ${q.map.ratio.toFixed(2)}   (aim ≤ 1.5: ${q.map.ratio <= 1.5 ? 'met' : 'NOT met'})`,
    `      CPU per item (the ${q.map.items}-item maps, each process of the bench): ${Object.entries(q.map.cpuMsPerItem)
      .sort(([, a], [, b]) => b - a)
      .map(([name, ms]) => `${name} ${ms} ms`)
      .join(', ')}; total ${Object.values(q.map.cpuMsPerItem)
      .reduce((a, b) => a + b, 0)
      .toFixed(0)} ms`,
    `      store commands per item: API ${storeLine(q.map.storePerItem.api)}; worker ${storeLine(q.map.storePerItem.worker)}; Redis ${q.map.storePerItem.redis} (${storeLine(q.map.storePerItem.redisByCommand ?? {})})`,
    ...(q.map.parentTasks
      ? [
          `      the map run's own workflow tasks (every item's start and end goes through them): ${q.map.parentTasks.tasks}, ` +
            `mean ${q.map.parentTasks.scheduleToStartMs} ms scheduled→started, ${q.map.parentTasks.startToCompleteMs} ms started→completed, ` +
            `busy ${Math.round(q.map.parentTasks.busyShare * 100)}% of the run`,
        ]
      : []),
  ];
}

/** `total (find 3, insert 2, …)` of one process's MongoDB commands per item. */
function storeLine(byCommand: Record<string, number>): string {
  const total = Object.values(byCommand).reduce((a, b) => a + b, 0);
  const parts = Object.entries(byCommand)
    .sort(([, a], [, b]) => b - a)
    .map(([cmd, n]) => `${cmd} ${n}`);
  return `${total.toFixed(1)} (${parts.join(', ')})`;
}
