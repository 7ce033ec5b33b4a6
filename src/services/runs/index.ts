import { createBudgetPauseSteps } from './budget-pause.js';
import { createContextSteps } from './context.js';
import { createFinishSteps } from './finish.js';
import { createInvokeSteps } from './invoke.js';
import type { RunContext, RunDeps } from './shared.js';
export { supersedeSoon } from './supersede.js';
import { createShortRunSteps } from './short.js';
import { createStartSteps } from './starts.js';
import { createToolApprovalSteps } from './tool-approval.js';
import { createToolSteps } from './tools.js';
import { createTurnSteps } from './turn.js';
import { reflexToolsOf } from './toolset.js';
import type { Scope } from '../../scope.js';

export {
  DEFAULT_MAX_TURNS,
  fromRunScope,
  toRunScope,
  type FinishInput,
  type ModelTurnInput,
  type RunDeps,
} from './shared.js';

/**
 * The neuron run engine: starting a run (invoke) and the steps its workflow drives as
 * activities. Every step is safe to retry: ids are chosen by the workflow, writes check first.
 * The workflow carries ids and small values only; prompts, history, replies and tool results
 * live in the run context and steps (src/db/runs.ts) and are loaded here.
 *
 * Each module builds its part over one RunContext; a module calls another's step through the
 * assembled service (`ctx.steps()`), so the service object is the one place a step lives.
 */
export function createRunService(d: RunDeps) {
  const ctx: RunContext = { d, steps: () => service, starting: new Set() };
  const service = {
    ...createInvokeSteps(ctx), // invoke
    ...createStartSteps(ctx), // startPending, startStored, drain
    ...createContextSteps(ctx), // prepare, prepareHeld, markStarted, load
    ...createTurnSteps(ctx), // modelTurn, adoptFirstTurn, runTurn, runHeldTurn
    ...createToolSteps(ctx), // runTool
    ...createFinishSteps(ctx), // finish, fail
    ...createBudgetPauseSteps(ctx), // openBudgetPause, recordBudgetAnswer
    ...createToolApprovalSteps(ctx), // openToolApprovals, recordToolAnswer, expireToolApproval, refuseToolCall
    ...createShortRunSteps(ctx), // runShort (a map item: prepare, first turn, finish)
    /** The tools one reflex offers the caller, listed as a run lists them (GET /v1/reflexes/:id/tools). */
    reflexTools: async (scope: Scope, reflexId: string) =>
      reflexToolsOf(d, scope, await d.reflexes.get(scope, reflexId)),
  };
  // A job found never started is started from its stored start (GET status, the sweep).
  d.jobs.onRestart((job) => service.startStored(job._id));
  return service;
}
export type RunService = ReturnType<typeof createRunService>;
