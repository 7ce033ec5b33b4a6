import type { WriteGuard } from '../traces/index.js';
import { onTraceChain, type NeuronRunInput } from '../temporal/definitions.js';
import { TRACE_WRITE_MARGIN_MS, type JobService } from '../jobs/index.js';

/**
 * A run's guard on its writes into its trace (double-texting, docs/neurons.md): a lease taken on
 * the run's job and its top job while they have not ended, asked again right before each insert
 * and renewed when less than TRACE_WRITE_MARGIN_MS of it is left. Null: the run (or its top run)
 * has ended, and may write nothing more into the trace. A cancel ends the job first and then waits
 * out the lease (JobService.cancel), so the next run on the trace never starts while a write of the
 * run before it could still land, even when that run's worker is down and comes back later.
 * A run whose trace is not a chain of runs (a pathway's nodes and map items on a trace nobody
 * named, an experiment's items) takes no lease: nothing waits for its writes.
 */
export async function traceWriteGuard(
  jobs: Pick<JobService, 'leaseTraceWrite'>,
  workspaceId: string,
  run: Pick<NeuronRunInput, 'jobId' | 'rootJobId' | 'traceChain' | 'depth' | 'parentJobId' | 'pathwayContext'>,
): Promise<WriteGuard | null> {
  if (!onTraceChain(run)) return unguarded;
  const writers = run.rootJobId ? [run.jobId, run.rootJobId] : [run.jobId];
  let until = await jobs.leaseTraceWrite(workspaceId, writers);
  if (!until) return null;
  return async () => {
    if (until && Date.now() < until.getTime() - TRACE_WRITE_MARGIN_MS) return true;
    until = await jobs.leaseTraceWrite(workspaceId, writers);
    return until !== null;
  };
}

/** The guard of a run off any chain: its writes wait for nothing. */
const unguarded: WriteGuard = () => Promise.resolve(true);
