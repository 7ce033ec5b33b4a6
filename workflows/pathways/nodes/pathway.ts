import type { RetryPolicy } from '@temporalio/common';
import * as wf from '@temporalio/workflow';
import {
  BrainIdKey,
  JobKindKey,
  MAX_PATHWAY_DEPTH,
  PathwayIdKey,
  TraceIdKey,
  WorkspaceIdKey,
  type PathwayRun,
  type PathwayRunInput,
  type PathwayRunResult,
} from '../../../src/temporal/definitions.js';
import { steps } from '../activities.js';
import type { NodeCall, NodeHandler } from './handler.js';

/** A value as a pathway run's input: an object as it is, anything else as `{ value }`. */
const asRunInput = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };

/**
 * pathway: runs another pathway as a child workflow `pathwayRun` with its own job (recorded under
 * this run's job). Its input is `data.input` (an expression over the context, or an object or array
 * whose strings are templates) or the current value;
 * the node's value is the child run's output. A child that fails fails the node.
 */
export const pathwayNode: NodeHandler = {
  run: async (c) => {
    const raw = c.node.data.input;
    const expression = typeof raw === 'string' ? raw : '';
    // An object or array `input` is a tree of templates, rendered in the activity.
    const tree = typeof raw === 'object' && raw !== null ? raw : undefined;
    const input = asRunInput(
      tree !== undefined
        ? await c.evaluate({ expression: '', tree, context: c.context })
        : expression.trim()
          ? await c.evaluate({ expression, context: c.context })
          : c.last,
    );
    const result = await runSubPathway(c, String(c.node.data.pathway_id), input, { retry: c.retry });
    return { value: result.output };
  },
};

/**
 * Runs pathway `pathwayId` as a child of node `c.at`: its version is the one pinned when this run
 * started (or `data.version`; runs started before pins: the head); its input and job come from an
 * activity (the workflow does no I/O); nesting deeper than MAX_PATHWAY_DEPTH fails the node.
 */
export async function runSubPathway(
  c: Pick<NodeCall, 'run' | 'node' | 'at' | 'id'>,
  pathwayId: string,
  input: Record<string, unknown>,
  opts: { retry?: RetryPolicy; summary?: string } = {},
): Promise<PathwayRunResult> {
  const parent: PathwayRunInput = c.run.input;
  const depth = (parent.depth ?? 0) + 1;
  if (depth > MAX_PATHWAY_DEPTH)
    throw wf.ApplicationFailure.nonRetryable(
      `node ${c.id} (${c.node.type}): sub-pathways nest more than ${MAX_PATHWAY_DEPTH} levels deep (does a pathway call itself through another?)`,
      'PATHWAY_DEPTH',
    );
  const pinned = parent.pathwayVersions?.[String(c.at)];
  const version = pinned ?? (typeof c.node.data.version === 'number' ? c.node.data.version : undefined);
  const jobId = wf.uuid4();
  const child = await steps.prepareSubPathway({
    parent: {
      jobId: parent.jobId,
      scope: parent.scope,
      traceId: parent.traceId,
      depth: parent.depth,
      rootJobId: parent.rootJobId,
      ...(parent.traceChain ? { traceChain: true } : {}),
    },
    jobId,
    pathwayId,
    ...(version !== undefined ? { version } : {}),
    input,
  });
  const brainId = child.scope.brainId;
  return wf.executeChild<PathwayRun>('pathwayRun', {
    workflowId: jobId,
    args: [child],
    typedSearchAttributes: [
      { key: WorkspaceIdKey, value: child.scope.workspaceId },
      { key: JobKindKey, value: 'pathway' },
      { key: PathwayIdKey, value: pathwayId },
      { key: TraceIdKey, value: child.traceId },
      ...(brainId ? [{ key: BrainIdKey, value: brainId }] : []),
    ],
    staticSummary: opts.summary ?? `sub-pathway of node ${c.id} · job ${parent.jobId}`,
    ...(opts.retry ? { retry: opts.retry } : {}),
  });
}
