import type { Services } from '../src/compose/services.js';
import type { ReceptorFireInput, SystemJobInput } from '../src/temporal/definitions.js';
import { permanentOn4xx } from './failures.js';

/** receptorFire and systemJob activities: thin adapters over the receptor-fire service. */
export const createReceptorActivities = ({ services }: { services: Services }) => ({
  beginFiring: (input: ReceptorFireInput, workflowId: string, newJobId: string) =>
    services.receptorFires.begin(input, workflowId, newJobId),
  endFiring: (firingId: string, status: 'completed' | 'failed', reason: string | null) =>
    services.receptorFires.end(firingId, status, reason),
  runSystemJob: (input: SystemJobInput) => permanentOn4xx(() => services.receptorFires.runSystemJob(input)),
  finishActionPlan: (input: SystemJobInput, planId: string, output: unknown) =>
    services.receptorFires.finishActionPlan(input, planId, output),
  failSystemJob: (input: SystemJobInput, reason: string) => services.receptorFires.failSystemJob(input, reason),
});
