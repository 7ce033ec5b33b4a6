import { bestEffort } from '../kernel/best-effort.js';
import type { JobRecord as Job, MultitaskStrategy, JobService } from '../jobs/index.js';
import { uuidFromName } from '../kernel/ids.js';
import type { Logger } from '../kernel/logger.js';
import { runDetached } from '../kernel/request-context.js';
import type { Scope } from '../kernel/scope.js';
import type { TraceService } from '../traces/index.js';

/** What a run that claimed a busy trace does to the runs before it (all four strategies, docs/neurons.md). */
export interface TraceTakeover {
  scope: Scope;
  traceId: string;
  /** The new run (its job). */
  jobId: string;
  strategy: MultitaskStrategy;
  /** The run it waits for on the trace (claimTrace's answer); null: nothing to supersede. */
  waitsFor: string | null;
  traceType: 'thread' | 'system';
  /** The neuron an interrupted reply is attributed to when the cancelled job names none. */
  neuronId: string;
}

/**
 * Double-texting's interrupt and rollback, shared by every start on a trace (invoke, the
 * OpenAI-compatible endpoint, a receptor fire): the trace's runs before the new one are cancelled
 * where they stand, outside the request (its 202 does not wait for them); each run's trace is acted
 * on once its workflow stopped, before the new run may start: an interrupted run's partial reply is
 * kept as its engram, marked interrupted; a rolled-back run's engrams (and its delegates') are
 * removed with what was derived from them. Reject and enqueue need nothing here (claimTrace did it).
 */
export function supersedeSoon(d: { jobs: JobService; traces: TraceService; log?: Logger }, t: TraceTakeover): void {
  const { strategy } = t;
  if (!t.waitsFor || (strategy !== 'interrupt' && strategy !== 'rollback')) return;
  const { jobs, traces, log } = d;
  const { scope, traceId, jobId } = t;
  const stopped = async (job: Job) => {
    if (strategy === 'rollback') {
      const ids = [job._id, ...(await jobs.childIds(scope.workspaceId, job._id))];
      return traces.removeRunEngrams(scope, traceId, ids);
    }
    // A run that never started has no reply; one whose reply is stored already keeps it.
    if (job.queued) return;
    const recent = await traces.messages(scope, traceId, undefined, 10);
    if (recent.some((e) => e.jobId === job._id && e.sourceType === 'neuron')) return;
    const text = await jobs.shownReply(job._id);
    if (!text) return;
    return traces.append(scope, traceId, {
      id: uuidFromName(`${job._id}:interrupted`),
      content: { type: 'neuron', content: text },
      metadata: {
        content_blocks: [{ type: 'text', text }],
        interrupted: true,
        interrupted_by: jobId,
        job_id: job._id,
      },
      sourceType: 'neuron',
      sourceId: job.neuronId ?? t.neuronId,
      targetType: 'user',
      targetId: scope.userId,
      traceType: t.traceType,
      jobId: job._id,
    });
  };
  const reason = `${strategy === 'rollback' ? 'rolled back' : 'interrupted'} by job ${jobId}`;
  void bestEffort(
    log,
    `cancelling the trace's earlier runs (${strategy})`,
    runDetached(() => jobs.supersede(scope, traceId, jobId, reason, stopped)),
  );
}
