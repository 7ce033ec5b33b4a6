import type { BudgetPause, InterventionAnswer, NeuronRunInput } from '../temporal/definitions.js';
import { fromRunScope, type RunContext, type RunDeps } from './shared.js';

/** What the workflow asks for when a budget stops a turn: the pause it opens (with its id) before turn `turn`. */
export interface BudgetPauseSpec {
  id: string;
  turn: number;
  budget: BudgetPause;
  progress: number;
  currentStep: string;
}

/** Budget pauses of a neuron run (docs/usage.md, the pause policy). */
export const createBudgetPauseSteps = (ctx: RunContext) => ({
  /**
   * A budget stopped the run before a model turn (policy pause): an intervention only an admin
   * can answer (approve: the run asks for the same turn again; reject: it fails BUDGET_EXCEEDED).
   * The job waits with waitingFor naming it. Idempotent on the id the workflow chose.
   */
  openBudgetPause: (input: NeuronRunInput, p: BudgetPauseSpec): Promise<Record<string, unknown>> =>
    openBudgetPause(ctx.d, input, p),
  /** Records the admin's answer to a budget pause the run accepted; the job runs again. */
  recordBudgetAnswer: (input: NeuronRunInput, answer: InterventionAnswer): Promise<string> =>
    recordBudgetAnswer(ctx.d, input, answer),
});

async function openBudgetPause(d: RunDeps, input: NeuronRunInput, p: BudgetPauseSpec) {
  const scope = fromRunScope(input.scope);
  const doc = await d.interventions.create(scope, {
    id: p.id,
    jobId: input.jobId,
    traceId: input.traceId,
    pathwayId:
      input.pathwayContext?.pathwayId && input.pathwayContext.pathwayId !== 'inline'
        ? input.pathwayContext.pathwayId
        : null,
    brainId: scope.brainId ?? null,
    nodeIndex: input.pathwayContext?.nodeIndex ?? -1,
    kind: 'budget',
    title: 'Budget reached',
    prompt: `${p.budget.message}. Approve to let this run continue beyond it, or reject to stop it.`,
    options: ['approve', 'reject'],
  });
  const waitingFor = {
    type: 'intervention',
    interventionId: doc._id,
    kind: 'budget',
    turn: p.turn,
    title: doc.title,
    prompt: doc.prompt,
    options: doc.options,
    expires_at: null,
    budget: {
      id: p.budget.budgetId,
      scope: p.budget.scope,
      target_id: p.budget.targetId,
      measure: p.budget.measure,
      period: p.budget.period,
      limit: p.budget.limit,
      spent: p.budget.spent,
    },
  };
  await d.jobs.transition(scope.workspaceId, input.jobId, {
    status: 'waiting',
    waitingFor,
    progress: p.progress,
    currentStep: p.currentStep,
  });
  await d.jobs.emit(input.jobId, {
    type: 'waiting',
    intervention_id: doc._id,
    options: doc.options,
    reason: 'budget',
    budget_id: p.budget.budgetId,
  });
  await d.traces.publish(scope, input.traceId, { type: 'run.waiting', job_id: input.jobId, intervention_id: doc._id });
  return waitingFor;
}

async function recordBudgetAnswer(d: RunDeps, input: NeuronRunInput, answer: InterventionAnswer): Promise<string> {
  const doc = await d.interventions.recordAnswer(input.scope.workspaceId, answer, 'budget');
  await d.jobs.transition(input.scope.workspaceId, input.jobId, { status: 'running', waitingFor: null });
  await d.jobs.emit(input.jobId, { type: 'status', status: 'running' });
  return doc.status;
}
