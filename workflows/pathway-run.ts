import * as wf from '@temporalio/workflow';
import { nextEdges } from '../src/pathways/walk.js';
import type { PathwayRunInput, PathwayRunResult } from '../src/temporal/definitions.js';
import { recordFailure } from './failures.js';
import { local, steps } from './pathway/activities.js';
import { handlerFor, type NodeExpression, type NodeHandler, type RunNode } from './pathway/nodes/index.js';
import { listen, newRunState, nodeId, type RunState } from './pathway/state.js';

const PROGRESS_WRITE_MS = 1000;

/**
 * Interprets a compiled pathway graph deterministically (after Temporal's dsl-interpreter sample):
 * node types that do I/O call activities, neuron nodes run neuronRun as child workflows, a
 * human node waits for a signal (with an expiry timer), delays are durable Temporal timers.
 * Each node type is a handler (workflows/pathway/nodes/); this is the loop that visits them.
 */
export async function pathwayRun(input: PathwayRunInput): Promise<PathwayRunResult> {
  const run = newRunState(input);
  listen(run);
  try {
    // Runs started since this patch send a node's stream entries with its expression in one local
    // activity: the previous node's node_finish and this node's node_start go out together, with the
    // evaluation of a transform or if node (one hop per node instead of three). Earlier runs replay
    // the hops they made.
    run.fused = wf.patched('pathway-fused-node-steps');
    await steps.startPathwayRun(input);
    let at = input.graph.nodes.length > 0 ? 0 : -1;
    while (at >= 0) at = await visit(run, at);
    const { carried } = run;
    if (carried) await local.pathwayStep({ jobId: input.jobId, events: [carried.event], patch: carried.patch });
    return await complete(run);
  } catch (err) {
    run.status.status = 'failed';
    for (const o of run.open.values()) if (o.state === 'pending') o.state = 'cancelled';
    return recordFailure(err, run.cancelReason, (reason) => steps.failPathwayRun(input, reason));
  }
}

/** Visits node `at`: its entries, its handler, its value and node_finish. Returns the next node (-1: the run ends). */
async function visit(run: RunState, at: number): Promise<number> {
  const { input, status, values } = run;
  if (run.visited.length >= input.maxSteps)
    throw wf.ApplicationFailure.nonRetryable(`pathway exceeded ${input.maxSteps} node visits`, 'MAX_STEPS');
  const node = input.graph.nodes[at];
  const id = nodeId(run, at);
  const label = `node ${id} (${node.type})`;
  run.visited.push(at);
  status.currentStep = label;
  status.progress = Math.min(95, Math.round((new Set(run.visited).size * 100) / Math.max(1, input.graph.nodes.length)));
  const handler = handlerFor(node.type);
  const evaluate = await sendEntries(run, at, node, handler);
  if (!handler) throw wf.ApplicationFailure.nonRetryable(`unknown node type ${node.type}`, 'BAD_GRAPH');
  const context = { input: values.input, last: values.last, nodes: values.nodes, loops: values.loops };
  const { value, handle } = await handler.run({ run, node, at, id, last: values.last, context, evaluate });
  values.last = value;
  // Expressions read a node's value by its id, or by its index as graphs written before ids did.
  values.nodes[String(at)] = value;
  values.nodes[id] = value;
  run.byId[id] = value;
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
  };
  const progressPatch = writeProgress ? { progress: status.progress, currentStep: label } : null;
  if (run.fused) run.carried = { event: finishEvent, patch: progressPatch };
  else await local.pathwayNodeEvent(input.jobId, finishEvent, progressPatch);
  return handler.endsRun ? -1 : nextEdges(input.graph, at, handle);
}

/**
 * Sends the node's stream entries (the carried node_finish and this node_start) before its
 * handler runs, unless the handler fuses them with its expression; returns the node's `evaluate`.
 */
async function sendEntries(
  run: RunState,
  at: number,
  node: RunNode,
  handler: NodeHandler | undefined,
): Promise<(e: NodeExpression) => Promise<unknown>> {
  const { jobId } = run.input;
  const startEvent = { type: 'node_start', node: nodeId(run, at), node_index: at, node_type: node.type };
  const events = run.carried ? [run.carried.event, startEvent] : [startEvent];
  const patch = run.carried?.patch ?? null;
  run.carried = null;
  const fuses = run.fused && handler?.fusesEntries === true;
  if (!run.fused) await local.pathwayNodeEvent(jobId, startEvent, null);
  else if (!fuses) await local.pathwayStep({ jobId, events, patch });
  return fuses ? (e) => local.pathwayStep({ jobId, events, patch, evaluate: e }) : (e) => local.evaluate(e);
}

/** The run's result, recorded; the run ends once every answer it accepted is recorded too. */
async function complete(run: RunState): Promise<PathwayRunResult> {
  const { input, status, values } = run;
  const result: PathwayRunResult = {
    output: values.output === undefined ? values.last : values.output,
    last: values.last,
    nodes: run.byId,
    visited: run.visited.map((at) => nodeId(run, at)),
    pathwayId: input.pathwayId,
    pathwayVersion: input.pathwayVersion,
    traceId: input.traceId,
  };
  status.currentStep = 'completed';
  await steps.finishPathwayRun(input, result);
  status.status = 'completed';
  status.progress = 100;
  await wf.condition(wf.allHandlersFinished);
  return result;
}
