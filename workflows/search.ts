import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { cancelSignal, statusQuery, type LiveStatus, type SearchJobInput } from '../src/temporal/definitions.js';
import { recordFailure } from './failures.js';

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
  const status: LiveStatus = { status: 'running', progress: 0, currentStep: `searching ${input.types.length} types` };
  let cancelReason: string | undefined;
  wf.setHandler(statusQuery, () => status);
  wf.setHandler(cancelSignal, ({ reason }) => void (cancelReason = reason));
  try {
    let done = 0;
    const facets = await Promise.all(input.types.map(async (type) => {
      const facet = await steps.searchFacet(input, type);
      done++;
      status.progress = Math.round((100 * done) / input.types.length);
      status.currentStep = `searched ${type} (${done}/${input.types.length})`;
      await local.searchProgress(input, done, input.types.length, type);
      return facet;
    }));
    status.currentStep = 'finishing';
    const result = await steps.searchFinish(input, facets);
    status.status = 'completed';
    status.progress = 100;
    status.currentStep = 'completed';
    return result;
  } catch (err) {
    status.status = 'failed';
    return recordFailure(err, cancelReason, (reason) => steps.searchFail(input, reason));
  }
}
