/**
 * (c) Pathway per-node overhead: a 20-node linear pathway's median run time divided by 20, versus
 * one bare one-activity workflow run.
 */
import type { TestApp } from '../../../test/support/app.js';
import type { Bare } from '../bare.js';
import type { BenchSection } from '../section.js';
import { median, spread, type Spread } from '../stats.js';
import { fmt, runThroughApi, say, tsMs, WARMUP, type RunTrace, type Workspace } from '../support.js';

/** (c) Nodes of the linear pathway (start + transforms + output) and its sequential runs. */
const PATHWAY_NODES = 20;
const PATHWAY_RUNS = 10;
/** (c) Sequential bare one-activity runs whose median is the per-node yardstick. */
const BARE_SEQ_RUNS = 20;

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

function summary(c: PathwayResult): string[] {
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

export const pathway: BenchSection = {
  letter: 'c',
  title: 'Pathway per-node overhead: a 20-node linear pathway versus one bare workflow run',
  needsBare: true,
  run: async ({ app, ws, bare }) => summary(await measurePathway(app, ws, bare!)),
};
