import type { NeuronRunInput, ShortRunOutcome } from '../temporal/definitions.js';
import { summaryOf, type RunContext, type RunSteps } from './shared.js';

/** The engine's context for a short run, with the steps of other modules it is made of. */
type ShortContext = RunContext & { calls: Pick<RunSteps, 'prepareHeld' | 'runHeldTurn' | 'finish'> };

/** A short run in one step: what a map item's child workflow asks of one local activity. */
export const createShortRunSteps = (ctx: ShortContext) => ({
  /**
   * Prepares the run, runs its first model turn (claiming its attempt: a local activity starts
   * again at attempt 1 on another worker) and, when that turn ends the run (no tool call to run,
   * no budget pause), saves the reply and ends the job. Each part is the step the workflow would
   * otherwise call on its own, so a retry of the whole is safe: the job is found recorded, the
   * turn claims a new attempt (its reset fences off the dead attempt's tokens), the save is
   * claimed under the engram id the workflow chose.
   *
   * The run's working set (its context and the turn's step) stays in memory unless the run goes
   * on past this turn: a run that ends here never reads it back, so storing it only to drop it
   * would be four store writes per item for nothing. A run that goes on (tools, a budget pause)
   * or whose save fails is stored before this returns, and the workflow reads it from the store.
   * A save that fails leaves the result out: the workflow asks for the save again on its own
   * (`finishRun`), and never asks the model twice for a reply it already has.
   */
  runShort: (input: NeuronRunInput, engramId: string, signal?: AbortSignal): Promise<ShortRunOutcome> =>
    runShort(ctx, input, engramId, signal),
});

async function runShort(
  ctx: ShortContext,
  input: NeuronRunInput,
  engramId: string,
  signal?: AbortSignal,
): Promise<ShortRunOutcome> {
  const { runLog, log } = ctx.d;
  const steps = ctx.calls;
  const workspaceId = input.scope.workspaceId;
  const context = await steps.prepareHeld(input);
  const summary = summaryOf(context);
  const { outcome: reply, step } = await steps.runHeldTurn(
    { jobId: input.jobId, workspaceId, turn: 0, accepted: [], attempt: 'claim' },
    context,
    signal,
  );
  // Only a first attempt of the turn can be sure that no earlier attempt stored a working set.
  const earlierAttempts = reply.attempt > 1;
  if (reply.budget || (reply.toolCalls.length > 0 && summary.responseFormat !== 'json')) {
    // The run goes on in its workflow, whose steps read the working set from the store.
    if (!(await runLog.putContext(workspaceId, input.jobId, context))) {
      // An earlier attempt stored its context and died after: the run's turns go on from that
      // one, not from the one this reply was made on. The workflow runs this turn again on it.
      const stored = await runLog.context(input.jobId);
      return { summary: stored ? summaryOf(stored) : summary };
    }
    if (step) await runLog.putModel(input.jobId, step);
    return { summary, reply };
  }
  const finishInput = {
    input,
    engramId,
    model: reply.model ?? summary.model,
    turns: 1,
    accepted: [reply.attempt],
    usage: { ...reply.usage, costUsd: reply.costUsd },
    neuronType: summary.neuronType,
  };
  try {
    const result = await steps.finish(finishInput, { models: step ? [step] : [], stored: earlierAttempts });
    return { summary, reply, result };
  } catch (err) {
    log.warn({ err, jobId: input.jobId }, 'saving a short run failed: the workflow saves it again');
    // The workflow's save reads the turn's step from the store.
    if (step) await runLog.putModel(input.jobId, step);
    return { summary, reply };
  }
}
