import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { StakeholderExtractInput } from '../../src/temporal/definitions.js';
import { trackedJob } from '../failures.js';

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
  return trackedJob(
    'asking the model',
    async (status) => {
      const plan = await ask.stakeholderExtractPlan(input);
      status.progress = 70;
      status.currentStep = `applying ${plan.ops} changes`;
      return steps.stakeholderExtractApply(input);
    },
    (reason) => steps.stakeholderExtractFail(input, reason),
  );
}
