import * as wf from '@temporalio/workflow';
import { humanOptions } from '../../src/pathways/walk.js';
import type { InterventionAnswer } from '../../src/temporal/definitions.js';
import { local, steps } from './activities.js';
import { nodeId, type OpenIntervention, type RunState } from './state.js';

/** What a run waits on: a human node's data (title, prompt, options, pause, expires_in_s) at node `at`. */
export interface WaitOptions {
  at: number;
  data: Record<string, unknown>;
  /** What the title and prompt templates see (the node's context). */
  context: Record<string, unknown>;
  /** A budget pause of a classify node (only an admin's approve or reject moves the run on). */
  kind?: 'budget';
}

/** Creates the intervention, sets the job waiting and blocks until an answer, a resume or expiry. */
export async function waitForHuman(run: RunState, o: WaitOptions): Promise<InterventionAnswer> {
  const { input, status } = run;
  const interventionId = wf.uuid4();
  const pause = o.data.pause === true;
  const options = pause ? ['resume'] : humanOptions(o.data);
  const kind: OpenIntervention['kind'] = o.kind ?? (pause ? 'pause' : 'approval');
  const expiresInS = typeof o.data.expires_in_s === 'number' ? o.data.expires_in_s : undefined;
  // The read model gets the workflow's own progress and step, so list and status agree while waiting.
  status.currentStep =
    kind === 'budget'
      ? `node ${nodeId(run, o.at)} (classify): waiting for budget approval`
      : `node ${nodeId(run, o.at)} (human): ${pause ? 'paused' : 'waiting'}`;
  const waitingFor = await steps.openIntervention(input, {
    id: interventionId,
    nodeIndex: o.at,
    nodeId: nodeId(run, o.at),
    progress: status.progress,
    currentStep: status.currentStep,
    kind,
    options,
    expiresInS,
    title: String(o.data.title ?? (pause ? 'Paused' : 'Approval required')),
    prompt: String(o.data.prompt ?? ''),
    // The title and prompt are templates over the run's data (`Refund {{ input.amount }}?`), rendered by the activity.
    context: o.context,
  });
  status.status = pause ? 'paused' : 'waiting';
  status.waitingFor = waitingFor;
  run.open.set(interventionId, { options, kind, state: 'pending' });
  if (kind !== 'budget') run.resumed = false;
  const ready = () => run.answers.has(interventionId) || (pause && run.resumed);
  // condition(fn, undefined) would take the timeout overload and expire at once: call the right overload.
  const arrived = expiresInS ? await wf.condition(ready, expiresInS * 1000) : (await wf.condition(ready), true);
  status.waitingFor = null;
  if (!arrived && !run.answers.has(interventionId)) {
    // The timer won: from now on the validator refuses answers, then the record says so.
    run.open.get(interventionId)!.state = 'expired';
    await steps.expireIntervention(input, interventionId);
    throw wf.ApplicationFailure.nonRetryable(`intervention ${interventionId} expired`, 'INTERVENTION_EXPIRED');
  }
  status.status = 'running';
  const answer = run.answers.get(interventionId) ?? { interventionId, action: 'resume' };
  await local.pathwayNodeEvent(
    input.jobId,
    { type: 'intervention_answered', intervention_id: interventionId, action: answer.action },
    { status: 'running', waitingFor: null },
  );
  return answer;
}
