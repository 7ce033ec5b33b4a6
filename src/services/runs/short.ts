import type { NeuronRunInput, ShortRunOutcome } from '../../temporal/definitions.js';
import type { RunContext } from './shared.js';

/** A short run in one step: what a map item's child workflow asks of one local activity. */
export const createShortRunSteps = (ctx: RunContext) => ({
  /**
   * Prepares the run, runs its first model turn (claiming its attempt: a local activity starts
   * again at attempt 1 on another worker) and, when that turn ends the run (no tool call to run,
   * no budget pause), saves the reply and ends the job. Each part is the step the workflow would
   * otherwise call on its own, so a retry of the whole is safe: the preparation finds what it
   * stored, the turn claims a new attempt (its reset fences off the dead attempt's tokens), the
   * save is claimed under the engram id the workflow chose. A save that fails leaves the result
   * out: the workflow asks for the save again on its own (`finishRun`), and never asks the model
   * twice for a reply it already has.
   */
  async runShort(input: NeuronRunInput, engramId: string, signal?: AbortSignal): Promise<ShortRunOutcome> {
    const steps = ctx.steps();
    const summary = await steps.prepare(input);
    const reply = await steps.modelTurn(
      { jobId: input.jobId, workspaceId: input.scope.workspaceId, turn: 0, accepted: [], attempt: 'claim' },
      signal,
    );
    if (reply.budget || (reply.toolCalls.length > 0 && summary.responseFormat !== 'json')) return { summary, reply };
    try {
      const result = await steps.finish({
        input,
        engramId,
        model: summary.model,
        turns: 1,
        accepted: [reply.attempt],
        usage: { ...reply.usage, costUsd: reply.costUsd },
        neuronType: summary.neuronType,
      });
      return { summary, reply, result };
    } catch (err) {
      ctx.d.log.warn({ err, jobId: input.jobId }, 'saving a short run failed: the workflow saves it again');
      return { summary, reply };
    }
  },
});
