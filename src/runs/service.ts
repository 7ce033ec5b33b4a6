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
import type { Scope } from '../kernel/scope.js';

export { DEFAULT_MAX_TURNS, type FinishInput, type ModelTurnInput, type RunDeps } from './shared.js';

/**
 * The neuron run engine: starting a run (invoke) and the steps its workflow drives as
 * activities. Every step is safe to retry: ids are chosen by the workflow, writes check first.
 * The workflow carries ids and small values only; prompts, history, replies and tool results
 * live in the run context and steps (src/runs/store.mongo.ts) and are loaded here.
 *
 * Each module builds its part over one RunContext, in order, and is handed the steps of earlier
 * modules it calls (`calls`): the context steps first (load, markStarted), then model turns, the
 * finish, and the invoke and short runs made of them.
 */
export function createRunService(d: RunDeps) {
  const ctx: RunContext = { d, starting: new Set() };
  const context = createContextSteps(ctx); // prepare, prepareHeld, markStarted, load
  const turns = createTurnSteps({ ...ctx, calls: { markStarted: context.markStarted } }); // modelTurn, adoptFirstTurn, runTurn, runHeldTurn
  const finish = createFinishSteps(ctx); // finish, fail
  const service = {
    ...createInvokeSteps({ ...ctx, calls: { load: context.load, runTurn: turns.runTurn } }), // invoke
    ...createStartSteps(ctx), // startPending, startStored, drain
    ...context,
    ...turns,
    ...createToolSteps(ctx), // runTool
    ...finish,
    ...createBudgetPauseSteps(ctx), // openBudgetPause, recordBudgetAnswer
    ...createToolApprovalSteps(ctx), // openToolApprovals, recordToolAnswer, expireToolApproval, refuseToolCall
    // runShort (a map item: prepare, first turn, finish)
    ...createShortRunSteps({
      ...ctx,
      calls: { prepareHeld: context.prepareHeld, runHeldTurn: turns.runHeldTurn, finish: finish.finish },
    }),
    /** The tools one reflex offers the caller, listed as a run lists them (GET /v1/reflexes/:id/tools). */
    reflexTools: async (scope: Scope, reflexId: string) =>
      reflexToolsOf(d, scope, await d.reflexes.get(scope, reflexId)),
  };
  // A job found never started is started from its stored start (GET status, the sweep).
  d.bus.handle('job.restart', (job) => service.startStored(job._id));
  return service;
}
export type RunService = ReturnType<typeof createRunService>;
