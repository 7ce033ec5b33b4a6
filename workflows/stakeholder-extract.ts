import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { cancelSignal, statusQuery, type LiveStatus, type StakeholderExtractInput } from '../src/temporal/definitions.js';
import { recordFailure } from './failures.js';

// The model step: a provider's 429/5xx is retried (after its Retry-After); an answer that does not
// match the schema is retried too (a model may answer differently), three attempts in all.
const ask = wf.proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '20s', maximumAttempts: 3 },
});
const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 6 },
});

/**
 * A transcript into a stakeholder map (docs/stakeholder-maps.md, Extraction): ask the model for
 * structured JSON and store it as patch ops, then apply the ops as one revision of the live graph.
 * Two activities, so a failed apply never asks the model again; each is idempotent by the job id.
 */
export async function stakeholderExtract(input: StakeholderExtractInput): Promise<Record<string, unknown>> {
  const status: LiveStatus = { status: 'running', progress: 0, currentStep: 'asking the model' };
  let cancelReason: string | undefined;
  wf.setHandler(statusQuery, () => status);
  wf.setHandler(cancelSignal, ({ reason }) => void (cancelReason = reason));
  try {
    const plan = await ask.stakeholderExtractPlan(input);
    status.progress = 70;
    status.currentStep = `applying ${plan.ops} changes`;
    const result = await steps.stakeholderExtractApply(input);
    status.status = 'completed';
    status.progress = 100;
    status.currentStep = 'completed';
    return result;
  } catch (err) {
    status.status = 'failed';
    return recordFailure(err, cancelReason, (reason) => steps.stakeholderExtractFail(input, reason));
  }
}
