import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { SearchJobInput } from '../../src/temporal/definitions.js';
import { trackedJob } from '../failures.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 5 },
});
const local = wf.proxyLocalActivities<Activities>({ startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 3 } });

/**
 * The async multi-facet search (GET /v1/search, docs/search.md): one activity per type, run
 * side by side; each finished type moves the job's progress; the job completes with every
 * type's hits, the total and the normalized list.
 */
export async function search(input: SearchJobInput): Promise<{ total: number }> {
  return trackedJob(
    `searching ${input.types.length} types`,
    async (status) => {
      let done = 0;
      const facets = await Promise.all(
        input.types.map(async (type) => {
          const facet = await steps.searchFacet(input, type);
          done++;
          status.progress = Math.round((100 * done) / input.types.length);
          status.currentStep = `searched ${type} (${done}/${input.types.length})`;
          await local.searchProgress(input, done, input.types.length, type);
          return facet;
        }),
      );
      status.currentStep = 'finishing';
      return steps.searchFinish(input, facets);
    },
    (reason) => steps.searchFail(input, reason),
  );
}
