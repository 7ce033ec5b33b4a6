import { Context } from '@temporalio/activity';
import type { ToolCall } from '../src/llm/types.js';
import type { FinishInput, ModelTurnInput } from '../src/services/runs.js';
import type { Services } from '../src/services/index.js';
import type { NeuronRunInput } from '../src/temporal/definitions.js';
import { permanentOn4xx } from './failures.js';

/** Neuron-run activities: thin adapters over the run service (STYLE.md §9). */
export const createRunActivities = ({ services }: { services: Services }) => ({
  prepareRun: (input: NeuronRunInput) => permanentOn4xx(() => services.runs.prepare(input)),

  /** Heartbeats while tokens flow, so a dead worker is noticed and the turn retried elsewhere. */
  modelTurn: (t: Omit<ModelTurnInput, 'attempt'>) => {
    const ctx = Context.current();
    return permanentOn4xx(() => services.runs.modelTurn({ ...t, attempt: ctx.info.attempt }, () => ctx.heartbeat(), ctx.cancellationSignal));
  },

  runTool: (jobId: string, call: ToolCall) => permanentOn4xx(() => services.runs.runTool(jobId, call)),
  finishRun: (f: FinishInput) => permanentOn4xx(() => services.runs.finish(f)),
  failRun: (input: NeuronRunInput, reason: string) => services.runs.fail(input, reason),
  emitJobEvent: (jobId: string, event: Record<string, unknown>) => services.jobs.emit(jobId, event).then(() => undefined),
});
