import * as wf from '@temporalio/workflow';
import type { PathwayRunInput, PathwayRunResult } from '../../src/temporal/definitions.js';
import { recordFailure } from '../failures.js';
import { steps } from './activities.js';
import { allBranchesEnded, cancelAll, fireJoins, walk } from './branches.js';
import { listen, newRunState, nodeId, type RunState } from './state.js';

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
    const first = input.graph.nodes.length > 0 ? 0 : -1;
    await walk(run, { at: first, last: input.input, from: null, entering: false, carried: null, cancelled: false });
    // A graph without parallel branches has none running here; joins that wait on nothing fire now.
    fireJoins(run);
    await allBranchesEnded(run);
    return await complete(run);
  } catch (err) {
    run.status.status = 'failed';
    cancelAll(run);
    for (const o of run.open.values()) if (o.state === 'pending') o.state = 'cancelled';
    return recordFailure(err, run.cancelReason, (reason) => steps.failPathwayRun(input, reason, run.trail));
  }
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
    ...(Object.keys(run.errors).length ? { errors: run.errors } : {}),
  };
  status.currentStep = 'completed';
  await steps.finishPathwayRun(input, result, run.trail);
  status.status = 'completed';
  status.progress = 100;
  await wf.condition(wf.allHandlersFinished);
  return result;
}
