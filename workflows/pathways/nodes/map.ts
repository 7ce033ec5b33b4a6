import * as wf from '@temporalio/workflow';
import { mapConcurrency } from '../../../src/pathways/walk.js';
import { local } from '../activities.js';
import type { NodeCall, NodeHandler } from './handler.js';
import { neuronVersionOf, runNeuronChild } from './neuron.js';
import { runSubPathway } from './pathway.js';

/** How often a map node writes its progress to the job's read model (the live status query is exact). */
const MAP_PROGRESS_WRITE_MS = 1000;

/** The root cause's message of a failed item (a child's activity failure is two wrappers deep). */
function rootMessage(err: unknown): string {
  let cause = err as Error;
  while ((cause instanceof wf.ActivityFailure || cause instanceof wf.ChildWorkflowFailure) && cause.cause)
    cause = cause.cause;
  return cause.message || 'failed';
}

/**
 * map: runs a neuron (`data.neuron_id`) or a pathway (`data.pathway_id`) once per item of
 * `data.items`, each as a child workflow with its own job under this run's job, at most
 * `data.concurrency` at a time (a pool of that many loops over one index counter: deterministic).
 * The items and every item's message or input are rendered in one activity. The value is the
 * results in item order. `on_item_error: fail` (default) cancels the items still running and fails
 * the node; `continue` makes that item's result `{ error }`.
 */
export const mapNode: NodeHandler = {
  run: async (c) => {
    const { node } = c;
    const data = node.data;
    const neuronId = typeof data.neuron_id === 'string' ? data.neuron_id : undefined;
    const pathwayId = typeof data.pathway_id === 'string' ? data.pathway_id : undefined;
    const kind = neuronId ? 'neuron' : 'pathway';
    const rendered = await local.mapItems({
      items: String(data.items ?? ''),
      kind,
      ...(typeof data.message === 'string' ? { message: data.message } : {}),
      ...(data.input !== undefined ? { input: data.input } : {}),
      context: c.context,
    });
    const version = neuronId && rendered.length ? await neuronVersionOf(c.run.input, c.at, neuronId) : 0;
    const runItem = async (i: number): Promise<unknown> => {
      const summary = `map node ${c.id} item ${i + 1}/${rendered.length} · job ${c.run.input.jobId}`;
      if (neuronId) {
        const reply = await runNeuronChild(c.run.input, c.at, neuronId, version, String(rendered[i]), {
          retry: c.retry,
          summary,
          // Items started before this change keep their recorded input on replay.
          localTurns: wf.patched('map-item-turns-local'),
          oneStep: wf.patched('map-item-one-step'),
        });
        return reply.output ?? reply.text;
      }
      const input = rendered[i] as Record<string, unknown>;
      return (await runSubPathway(c, String(pathwayId), input, { retry: c.retry, summary })).output;
    };
    const value = await pool(c, rendered.length, runItem);
    return { value };
  },
};

/** Runs `count` items at most `concurrency` at a time; the results in item order. */
async function pool(c: NodeCall, count: number, runItem: (i: number) => Promise<unknown>): Promise<unknown[]> {
  const { run, id, at } = c;
  const results: unknown[] = new Array<unknown>(count).fill(null);
  const keepGoing = c.node.data.on_item_error === 'continue';
  let next = 0;
  let done = 0;
  let failure: { index: number; err: unknown } | undefined;
  const step = (n: number) => `node ${id} (map): ${n}/${count}`;
  // The loop set this node's progress as visited; items move it from the previous node's towards it.
  const span = 100 / Math.max(1, run.input.graph.nodes.length);
  const from = Math.max(0, run.status.progress - span);
  run.status.currentStep = step(0);
  const scope = new wf.CancellationScope();
  const loop = async () => {
    while (failure === undefined && next < count) {
      const i = next++;
      try {
        results[i] = await runItem(i);
      } catch (err) {
        // This node's items were cancelled (an item failed, or the run is being cancelled): stop.
        if (scope.consideredCancelled) {
          failure ??= { index: i, err };
          return;
        }
        if (!keepGoing) {
          failure = { index: i, err };
          scope.cancel();
          return;
        }
        results[i] = { error: rootMessage(err) };
      }
      done++;
      run.status.currentStep = step(done);
      run.status.progress = Math.min(95, Math.round(from + (span * done) / Math.max(1, count)));
      if (done < count && Date.now() - run.lastProgressWrite >= MAP_PROGRESS_WRITE_MS) {
        run.lastProgressWrite = Date.now();
        const event = { type: 'node_progress', node: id, node_index: at, node_type: 'map', done, total: count };
        const patch = { progress: run.status.progress, currentStep: run.status.currentStep };
        // Not cancellable: an item failing meanwhile must not turn this write into the node's failure.
        await wf.CancellationScope.nonCancellable(() => local.pathwayNodeEvent(run.input.jobId, event, patch));
      }
    }
  };
  await scope.run(() => Promise.all(Array.from({ length: Math.min(mapConcurrency(c.node.data), count) }, loop)));
  if (failure) {
    // The run itself is being cancelled: that is the node's outcome, not an item's failure.
    if (wf.isCancellation(failure.err) && wf.CancellationScope.current().consideredCancelled) throw failure.err;
    throw wf.ApplicationFailure.nonRetryable(
      `node ${id} (map): item ${failure.index} failed: ${rootMessage(failure.err)}`,
      'MAP_ITEM_FAILED',
    );
  }
  return results;
}
