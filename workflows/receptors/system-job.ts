import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import {
  JobKindKey,
  PathwayIdKey,
  ReceptorIdKey,
  WorkspaceIdKey,
  cancelSignal,
  statusQuery,
  type LiveStatus,
  type SystemJobInput,
} from '../../src/temporal/definitions.js';
import { recordFailure } from '../failures.js';
import { pathwayRun } from '../pathways/pathway-run.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 5 },
});

/**
 * A receptor's system job (docs/receptors.md): a maintenance key, or an action plan that is
 * recorded as proposed or, with auto_execute, run at once as a child pathway run.
 */
export async function systemJob(input: SystemJobInput): Promise<{ jobId: string }> {
  const status: LiveStatus = {
    status: 'running',
    progress: 0,
    currentStep: input.job.kind === 'maintenance' ? input.job.key : 'action plan',
  };
  let cancelReason: string | undefined;
  wf.setHandler(statusQuery, () => status);
  wf.setHandler(cancelSignal, ({ reason }) => void (cancelReason = reason));
  try {
    const out = await steps.runSystemJob(input);
    if ('execute' in out) {
      status.currentStep = `executing action plan ${out.planId}`;
      status.progress = 50;
      const result = await wf.executeChild(pathwayRun, {
        workflowId: out.execute.jobId,
        args: [out.execute],
        typedSearchAttributes: [
          { key: WorkspaceIdKey, value: input.workspaceId },
          { key: ReceptorIdKey, value: input.receptorId },
          { key: JobKindKey, value: 'pathway' },
          ...(out.execute.pathwayId ? [{ key: PathwayIdKey, value: out.execute.pathwayId }] : []),
        ],
      });
      await steps.finishActionPlan(input, out.planId, result.output);
    }
    status.status = 'completed';
    status.progress = 100;
    status.currentStep = 'completed';
    return { jobId: input.jobId };
  } catch (err) {
    status.status = 'failed';
    return recordFailure(err, cancelReason, (reason) => steps.failSystemJob(input, reason));
  }
}
