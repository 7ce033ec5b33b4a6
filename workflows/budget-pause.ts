import * as wf from '@temporalio/workflow';
import type { BudgetPause, InterventionAnswer } from '../src/temporal/definitions.js';

/** How one workflow asks again, recognises a budget stop and waits for an admin (docs/usage.md, the pause policy). */
export interface BudgetPauses<T> {
  /** Asks again (the same model turn, the same classify call) with the budgets approved so far. */
  ask: () => Promise<T>;
  /** The budget that stopped this reply before its call, or nothing when the reply is a real one. */
  budgetOf: (reply: T) => BudgetPause | undefined;
  /** Opens the budget intervention and waits until an admin's answer is accepted. */
  waitForAdmin: (budget: BudgetPause) => Promise<InterventionAnswer>;
  /** The run's approved budgets: an approval adds its budget before the run asks again. */
  approved: string[];
  /** Called once the answer is recorded, before it is acted on (the run's live status goes back to running). */
  answered?: () => void;
}

/**
 * The budget pause loop of every run workflow: while a budget with the pause policy stops the
 * call, an admin is asked; an approval lets the run ask again beyond that budget, a rejection fails
 * the run with BUDGET_EXCEEDED. Returns the first reply no budget stopped.
 */
export async function withinBudget<T>(first: T, o: BudgetPauses<T>): Promise<T> {
  let reply = first;
  for (let budget = o.budgetOf(reply); budget; budget = o.budgetOf(reply)) {
    const answer = await o.waitForAdmin(budget);
    // The answer is recorded (by the Update's handler) before the run goes on: a rejection must
    // not fail the run, and cancel the intervention, ahead of the record that says it was rejected.
    await wf.condition(wf.allHandlersFinished);
    o.answered?.();
    if (answer.action !== 'approve')
      throw wf.ApplicationFailure.nonRetryable(
        `${budget.message}; an admin declined to go beyond it`,
        'BUDGET_EXCEEDED',
      );
    o.approved.push(budget.budgetId);
    reply = await o.ask();
  }
  return reply;
}
