import type { ItemOutcome, ExperimentRunInput } from '../src/evaluations/index.js';
import type { Services } from '../src/compose/services.js';
import { permanentOn4xx } from './failures.js';

/** The experiment workflow's steps (docs/evaluations.md): thin adapters over the evaluations service. */
export const createEvaluationActivities = ({ services }: { services: Services }) => ({
  experimentBegin: (ref: ExperimentRunInput) => permanentOn4xx(() => services.evaluations.begin(ref)),
  experimentPrepareItem: (ref: ExperimentRunInput, itemId: string, jobId: string) =>
    permanentOn4xx(() => services.evaluations.prepareItem(ref, itemId, jobId)),
  experimentPrepareEvaluator: (
    ref: ExperimentRunInput,
    itemId: string,
    targetJobId: string,
    name: string,
    jobId: string,
  ) => permanentOn4xx(() => services.evaluations.prepareEvaluator(ref, itemId, targetJobId, name, jobId)),
  experimentScoreItem: (o: ItemOutcome) => permanentOn4xx(() => services.evaluations.scoreItem(o)),
  experimentFinish: (ref: ExperimentRunInput, outcome: 'completed' | 'failed' | 'cancelled', reason: string | null) =>
    permanentOn4xx(() => services.evaluations.finish(ref, outcome, reason)),
  experimentStep: (ref: ExperimentRunInput, step: string) => services.evaluations.step(ref, step),
});
