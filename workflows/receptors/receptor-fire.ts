import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import {
  BrainIdKey,
  JobKindKey,
  NeuronIdKey,
  PathwayIdKey,
  ReceptorIdKey,
  TraceIdKey,
  WorkspaceIdKey,
  statusQuery,
  type LiveStatus,
  type ReceptorFireInput,
  type SearchAttributePairs,
} from '../../src/temporal/definitions.js';
import { neuronRun } from '../runs/neuron-run.js';
import { pathwayRun } from '../pathways/pathway-run.js';
import { systemJob } from './system-job.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 10 },
});

interface ReceptorFireResult {
  jobId: string;
  status: 'completed' | 'failed' | 'skipped';
  reason?: string;
}

/**
 * One firing of a receptor (docs/receptors.md): from the fire route, a stimulus, a channel message or its
 * Temporal Schedule. Records the firing, then runs the target as a child workflow whose id is the
 * job id the caller follows, and records how it ended. With a schedule's overlap policy, "still
 * running" means this workflow: the next tick waits for (or skips) the whole target run.
 */
export async function receptorFire(input: ReceptorFireInput): Promise<ReceptorFireResult> {
  const status: LiveStatus = { status: 'running', progress: 0, currentStep: 'firing' };
  wf.setHandler(statusQuery, () => status);
  const info = wf.workflowInfo();
  const plan = await steps.beginFiring(input, info.workflowId, wf.uuid4());
  const firingId = input.firingId ?? info.workflowId;
  if (plan.kind === 'skipped') {
    status.status = 'failed';
    status.currentStep = 'skipped';
    return { jobId: plan.jobId, status: 'skipped', reason: plan.reason };
  }
  const attrs: SearchAttributePairs = [
    { key: WorkspaceIdKey, value: input.workspaceId },
    { key: ReceptorIdKey, value: input.receptorId },
    { key: JobKindKey, value: plan.kind === 'system' ? 'receptor' : plan.kind },
  ];
  if (plan.kind === 'neuron')
    attrs.push({ key: NeuronIdKey, value: plan.run.neuronId }, { key: TraceIdKey, value: plan.run.traceId });
  if (plan.kind === 'pathway' && plan.run.pathwayId)
    attrs.push({ key: PathwayIdKey, value: plan.run.pathwayId }, { key: TraceIdKey, value: plan.run.traceId });
  if (plan.kind !== 'system' && plan.run.scope.brainId) attrs.push({ key: BrainIdKey, value: plan.run.scope.brainId });
  status.currentStep = `running ${plan.kind} job ${plan.jobId}`;
  try {
    const common = {
      workflowId: plan.jobId,
      typedSearchAttributes: attrs,
      staticSummary: `receptor ${plan.receptorSlug} · ${input.source}`,
    };
    if (plan.kind === 'neuron') await wf.executeChild(neuronRun, { ...common, args: [plan.run] });
    else if (plan.kind === 'pathway') await wf.executeChild(pathwayRun, { ...common, args: [plan.run] });
    else await wf.executeChild(systemJob, { ...common, args: [plan.run] });
    await steps.endFiring(firingId, 'completed', null);
    status.status = 'completed';
    status.currentStep = 'completed';
    return { jobId: plan.jobId, status: 'completed' };
  } catch (err) {
    const cause = err instanceof wf.ChildWorkflowFailure && err.cause ? err.cause : (err as Error);
    const reason = wf.isCancellation(err) ? 'cancelled' : cause.message || 'the target run failed';
    await wf.CancellationScope.nonCancellable(() => steps.endFiring(firingId, 'failed', reason));
    status.status = 'failed';
    status.currentStep = 'failed';
    if (wf.isCancellation(err)) throw err;
    // The job (the child's) carries the failure; the firing itself did its work.
    return { jobId: plan.jobId, status: 'failed', reason };
  }
}
