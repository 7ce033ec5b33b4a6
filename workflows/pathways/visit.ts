import * as wf from '@temporalio/workflow';
import type { RetryPolicy } from '@temporalio/common';
import { nextTargets, streamValue } from '../../src/pathways/walk.js';
import { local } from './activities.js';
import { handlerFor, type NodeExpression, type NodeHandler, type NodeOutcome, type RunNode } from './nodes/index.js';
import { nodeId, takeRecorded, type Branch, type RunState } from './state.js';
import type { RecordedVisit } from '../../src/temporal/definitions.js';
import { setOwn } from '../../src/kernel/own.js';

const PROGRESS_WRITE_MS = 1000;

/**
 * Visits the branch's node: its entries, its handler (under the node's error policy), its value and
 * node_finish. Returns the nodes the branch goes to next (several: parallel branches; none: it ends).
 */
export async function visit(run: RunState, b: Branch): Promise<number[]> {
  const { input, status, values } = run;
  const at = b.at;
  if (run.visited.length >= input.maxSteps)
    throw wf.ApplicationFailure.nonRetryable(`pathway exceeded ${input.maxSteps} node visits`, 'MAX_STEPS');
  const node = input.graph.nodes[at];
  const id = nodeId(run, at);
  const label = `node ${id} (${node.type})`;
  run.visited.push(at);
  status.currentStep = label;
  status.progress = Math.min(95, Math.round((new Set(run.visited).size * 100) / Math.max(1, input.graph.nodes.length)));
  const handler = handlerFor(node.type);
  // A replay takes the value the replayed run recorded for this visit instead of running the node.
  const recorded = takeRecorded(run, at);
  // The visit is in the trail from its start (pending until it ends): a node the run failed at is one it reached.
  const entry: RecordedVisit = { at, value: null, pending: true };
  run.trail.push(entry);
  const evaluate = await sendEntries(run, b, node, recorded ? undefined : handler);
  if (!handler) throw wf.ApplicationFailure.nonRetryable(`unknown node type ${node.type}`, 'BAD_GRAPH');
  if (run.replay && at === run.replay.from && run.replay.input) {
    // The replay's `input` flows into the node it runs from in place of the recorded one (once).
    b.last = run.replay.input;
    delete run.replay.input;
  }
  const context = { input: values.input, last: b.last, nodes: values.nodes, loops: values.loops };
  const call = { run, node, at, id, last: b.last, context, evaluate, retry: retryOf(node.data) };
  const { value, handle, policy } = recorded
    ? replayed(run, at, node, recorded)
    : await underPolicy(run, id, node, () => handler.run(call));
  entry.value = value;
  if (handle !== undefined) entry.handle = handle;
  delete entry.pending;
  b.last = value;
  values.last = value;
  // Expressions read a node's value by its id, or by its index as graphs written before ids did.
  // Node ids are the graph's text: set as own keys (an id `__proto__` stays a key, never the prototype).
  setOwn(values.nodes, String(at), value);
  setOwn(values.nodes, id, value);
  setOwn(run.byId, id, value);
  // The read model's progress is written at most every PROGRESS_WRITE_MS (GET status merges the
  // live `status` query while the run is active, so it stays exact); Date.now() is replay-safe here.
  const writeProgress = Date.now() - run.lastProgressWrite >= PROGRESS_WRITE_MS;
  if (writeProgress) run.lastProgressWrite = Date.now();
  const finishEvent = {
    type: 'node_finish',
    node: id,
    node_index: at,
    node_type: node.type,
    ...(handle !== undefined ? { handle } : {}),
    ...(policy ? { error_policy: policy } : {}),
    ...(recorded ? { replayed: true } : {}),
    // The node's value (bounded), so a client can show it on the graph while the run goes on.
    value: streamValue(value),
  };
  const progressPatch = writeProgress ? { progress: status.progress, currentStep: label } : null;
  if (run.fused) b.carried = { event: finishEvent, patch: progressPatch };
  else await local.pathwayNodeEvent(input.jobId, finishEvent, progressPatch);
  return handler.endsRun ? [] : nextTargets(input.graph, at, handle);
}

/**
 * A replayed visit: the recorded value and handle, with nothing run (no activity, child, timer or
 * intervention). A while node's counter moves as its run would have moved it, so a loop the replay
 * enters again counts on from there.
 */
function replayed(
  run: RunState,
  at: number,
  node: RunNode,
  v: RecordedVisit,
): NodeOutcome & { policy?: 'continue' | 'branch' } {
  if (node.type === 'while') {
    const loops = run.values.loops;
    loops[String(at)] = v.handle === 'body' ? (loops[String(at)] ?? 0) + 1 : 0;
  }
  return { value: v.value, ...(v.handle !== undefined ? { handle: v.handle } : {}) };
}

/**
 * Runs a node's handler under its `data.on_error` policy: `fail` (the default) lets the failure
 * fail the run; `continue` makes `{ error }` the node's value and goes on along its edges; `branch`
 * does the same along its `error` edges. A cancellation is never caught.
 */
async function underPolicy(
  run: RunState,
  id: string,
  node: RunNode,
  fn: () => Promise<NodeOutcome>,
): Promise<NodeOutcome & { policy?: 'continue' | 'branch' }> {
  const policy = node.data.on_error;
  if (policy !== 'continue' && policy !== 'branch') return fn();
  try {
    return await fn();
  } catch (err) {
    if (wf.isCancellation(err)) throw err;
    const error = rootMessage(err);
    setOwn(run.errors, id, { error, policy });
    await local.pathwayNodeEvent(run.input.jobId, { type: 'node_error', node: id, error, policy }, null);
    return { value: { error }, ...(policy === 'branch' ? { handle: 'error' } : {}), policy };
  }
}

/** The message of the innermost cause (an activity's or a child's own failure, not its wrapper's). */
function rootMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e?.cause && typeof e.cause === 'object') e = e.cause as { message?: string; cause?: unknown };
  return e?.message ?? String(err);
}

/** A node's `data.retry` ({ max_attempts, initial_interval_ms, backoff }) as a Temporal retry policy. */
function retryOf(data: Record<string, unknown>): RetryPolicy | undefined {
  const r = data.retry as { max_attempts?: number; initial_interval_ms?: number; backoff?: number } | undefined;
  if (!r || typeof r !== 'object') return undefined;
  return {
    ...(typeof r.max_attempts === 'number' ? { maximumAttempts: r.max_attempts } : {}),
    ...(typeof r.initial_interval_ms === 'number' ? { initialInterval: r.initial_interval_ms } : {}),
    ...(typeof r.backoff === 'number' ? { backoffCoefficient: r.backoff } : {}),
  };
}

/**
 * Sends the node's stream entries (the branch's carried node_finish and this node_start) before
 * its handler runs, unless the handler fuses them with its expression; returns the node's `evaluate`.
 */
async function sendEntries(
  run: RunState,
  b: Branch,
  node: RunNode,
  handler: NodeHandler | undefined,
): Promise<(e: NodeExpression) => Promise<unknown>> {
  const { jobId } = run.input;
  const startEvent = { type: 'node_start', node: nodeId(run, b.at), node_index: b.at, node_type: node.type };
  const events = b.carried ? [b.carried.event, startEvent] : [startEvent];
  const patch = b.carried?.patch ?? null;
  b.carried = null;
  const fuses = run.fused && handler?.fusesEntries === true;
  if (!run.fused) await local.pathwayNodeEvent(jobId, startEvent, null);
  else if (!fuses) await local.pathwayStep({ jobId, events, patch });
  return fuses ? (e) => local.pathwayStep({ jobId, events, patch, evaluate: e }) : (e) => local.evaluate(e);
}

/** Sends the branch's carried node_finish on its own (the branch ends, or splits into parallel branches). */
export async function flush(run: RunState, b: Branch): Promise<void> {
  const { carried } = b;
  if (!carried) return;
  b.carried = null;
  await local.pathwayStep({ jobId: run.input.jobId, events: [carried.event], patch: carried.patch });
}
