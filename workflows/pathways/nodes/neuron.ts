import type { RetryPolicy } from '@temporalio/common';
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
import { neuronRun } from '../../runs/neuron-run.js';
import { local, steps } from '../activities.js';
import type { NodeHandler } from './handler.js';

/** neuron: renders its message, runs the neuron as a child workflow; the reply (or its JSON output) is the value. */
export const neuronNode: NodeHandler = {
  run: async ({ run, node, at, context, retry }) => {
    const message = await local.renderMessage({
      template: typeof node.data.message === 'string' ? node.data.message : undefined,
      context,
    });
    const reply = await runNeuronNode(run.input, at, String(node.data.neuron_id), message, retry);
    return { value: reply.output ?? reply.text };
  },
};

/** A neuron node runs the neuron as a child workflow with pathway persistence (turns on the run's trace). */
async function runNeuronNode(
  input: PathwayRunInput,
  at: number,
  neuronId: string,
  message: string,
  retry: RetryPolicy | undefined,
) {
  return runNeuronChild(input, at, neuronId, await neuronVersionOf(input, at, neuronId), message, { retry });
}

/** The neuron version node `at` runs: pinned at start (later edits of the neuron do not change a running pathway); inputs recorded before pins ask. */
export async function neuronVersionOf(input: PathwayRunInput, at: number, neuronId: string): Promise<number> {
  return input.neuronVersions?.[String(at)] ?? (await steps.neuronVersion(input.scope, neuronId));
}

/**
 * Runs the neuron as a child workflow `neuronRun` of node `at` (its job id is the workflow id; the
 * child records its job under this run's job). `opts.retry`: the node's retry policy for the child.
 */
export async function runNeuronChild(
  input: PathwayRunInput,
  at: number,
  neuronId: string,
  version: number,
  message: string,
  opts: { retry?: RetryPolicy; summary?: string; localTurns?: boolean; oneStep?: boolean } = {},
) {
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
    rootJobId: input.rootJobId ?? input.jobId,
    ...(input.traceChain ? { traceChain: true } : {}),
    pathwayContext: { pathwayId: input.pathwayId ?? 'inline', nodeIndex: at },
    ...(opts.localTurns ? { localTurns: true } : {}),
    ...(opts.localTurns && opts.oneStep ? { oneStep: true } : {}),
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
    ...(opts.retry ? { retry: opts.retry } : {}),
    ...(opts.summary ? { staticSummary: opts.summary } : {}),
  });
}
