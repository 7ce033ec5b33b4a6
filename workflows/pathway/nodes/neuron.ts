import * as wf from '@temporalio/workflow';
import {
  BrainIdKey,
  JobKindKey,
  NeuronIdKey,
  TraceIdKey,
  WorkspaceIdKey,
  type NeuronRunInput,
  type PathwayRunInput,
} from '../../../src/temporal/definitions.js';
import { neuronRun } from '../../neuron-run.js';
import { local, steps } from '../activities.js';
import type { NodeHandler } from './handler.js';

/** neuron: renders its message, runs the neuron as a child workflow; the reply (or its JSON output) is the value. */
export const neuronNode: NodeHandler = {
  run: async ({ run, node, at, context }) => {
    const message = await local.renderMessage({
      template: typeof node.data.message === 'string' ? node.data.message : undefined,
      context,
    });
    const reply = await runNeuronNode(run.input, at, String(node.data.neuron_id), message);
    return { value: reply.output ?? reply.text };
  },
};

/** A neuron node runs the neuron as a child workflow with pathway persistence (turns on the run's trace). */
async function runNeuronNode(input: PathwayRunInput, at: number, neuronId: string, message: string) {
  // Pinned at start (later edits of the neuron do not change a running pathway); inputs recorded before pins ask.
  const version = input.neuronVersions?.[String(at)] ?? (await steps.neuronVersion(input.scope, neuronId));
  const childJobId = wf.uuid4();
  const childInput: NeuronRunInput = {
    jobId: childJobId,
    scope: input.scope,
    neuronId,
    neuronVersion: version,
    traceId: input.traceId,
    traceType: 'thread',
    message,
    data: undefined,
    userEngramId: null,
    depth: 1,
    maxTurns: 8,
    parentJobId: input.jobId,
    rootJobId: input.jobId,
    pathwayContext: { pathwayId: input.pathwayId ?? 'inline', nodeIndex: at },
  };
  return wf.executeChild(neuronRun, {
    workflowId: childJobId,
    args: [childInput],
    typedSearchAttributes: [
      { key: WorkspaceIdKey, value: input.scope.workspaceId },
      { key: JobKindKey, value: 'neuron' },
      { key: NeuronIdKey, value: neuronId },
      { key: TraceIdKey, value: input.traceId },
      ...(input.scope.brainId ? [{ key: BrainIdKey, value: input.scope.brainId }] : []),
    ],
  });
}
