import type { Client } from '@temporalio/client';
import type { Filter } from 'mongodb';
import type { Config } from '../config.js';
import { encodeBlob } from '../db/codec.js';
import { TERMINAL_STATES, type JobDoc, type JobRepo } from '../db/jobs.js';
import { notFound, validationError } from '../errors.js';
import type { JobListQuery } from '../schemas/jobs.js';
import type { Scope } from '../scope.js';
import type { Streams } from '../streams.js';
import type { WithLock } from '../locks.js';
import {
  BrainIdKey, JobKindKey, NeuronIdKey, PathwayIdKey, ReceptorIdKey, TraceIdKey, WorkspaceIdKey, cancelSignal, statusQuery,
  type JobKind, type JobState, type LiveStatus,
} from '../temporal/definitions.js';

/** A change at a status transition; terminal states are sticky (a cancelled run never later reads completed). */
export interface JobPatch {
  status?: JobState; progress?: number; currentStep?: string | null; failedReason?: string | null;
  result?: unknown; waitingFor?: Record<string, unknown> | null;
}

export interface NewJob {
  id: string; kind: JobKind; brainId?: string | null; neuronId?: string | null; pathwayId?: string | null;
  receptorId?: string | null; traceId?: string | null; parentJobId?: string | null; clientNonce?: string | null;
}

const LIVE_TTL_MS = 250;

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T | null> =>
  Promise.race([p.catch(() => null), new Promise<null>((r) => setTimeout(() => r(null), ms).unref())]);

/** Jobs: the read model, workflow starts (job id = workflow id), live status, cancel and the job stream. */
export function createJobService({ repo, streams, temporal, config, withLock, onCancel }: { repo: JobRepo; streams: Streams; temporal: Client; config: Config; withLock: WithLock; onCancel?: (workspaceId: string, jobId: string) => Promise<void> }) {
  const streamKey = (jobId: string) => streams.keys.job(jobId);
  /**
   * Live `status` answers, shared for LIVE_TTL_MS: each query is a task on the worker that runs
   * the job, so clients polling fast (or many of them) must not multiply them.
   */
  const liveCache = new Map<string, { at: number; live: Promise<LiveStatus | null> }>();
  const liveStatus = (jobId: string): Promise<LiveStatus | null> => {
    const now = Date.now();
    const hit = liveCache.get(jobId);
    if (hit && now - hit.at < LIVE_TTL_MS) return hit.live;
    if (liveCache.size > 5_000) liveCache.clear();
    const live = withTimeout(temporal.workflow.getHandle(jobId).query(statusQuery), 1_500);
    liveCache.set(jobId, { at: now, live });
    return live;
  };

  async function get(scope: Scope, jobId: string): Promise<JobDoc> {
    const job = await repo.find(scope.workspaceId, jobId);
    if (!job) throw notFound('Job');
    return job;
  }

  return {
    get,
    streamKey,

    /** Inserts the pending job; an existing id returns the existing job (idempotent starts). */
    async create(scope: Scope, j: NewJob): Promise<{ job: JobDoc; created: boolean }> {
      const now = new Date();
      const doc: JobDoc = {
        _id: j.id, workspaceId: scope.workspaceId, brainId: j.brainId ?? scope.brainId ?? null, kind: j.kind, status: 'pending',
        progress: 0, currentStep: 'queued', failedReason: null, result: null, waitingFor: null,
        neuronId: j.neuronId ?? null, pathwayId: j.pathwayId ?? null, receptorId: j.receptorId ?? null, traceId: j.traceId ?? null,
        parentJobId: j.parentJobId ?? null, clientNonce: j.clientNonce ?? null, createdBy: scope.userId ?? scope.apiKeyId,
        createdAt: now, processedAt: null, finishedAt: null, updatedAt: now,
      };
      try {
        await repo.jobs.insertOne(doc);
        return { job: doc, created: true };
      } catch (e) {
        if ((e as { code?: number }).code !== 11000) throw e;
        return { job: await get(scope, j.id), created: false };
      }
    },

    /** Starts the job's workflow by name with the search attributes operators filter on. */
    async startWorkflow(job: JobDoc, workflowType: string, args: unknown[], summary?: string): Promise<void> {
      const attrs = [
        { key: WorkspaceIdKey, value: job.workspaceId }, { key: JobKindKey, value: job.kind },
        ...(job.brainId ? [{ key: BrainIdKey, value: job.brainId }] : []),
        ...(job.neuronId ? [{ key: NeuronIdKey, value: job.neuronId }] : []),
        ...(job.pathwayId ? [{ key: PathwayIdKey, value: job.pathwayId }] : []),
        ...(job.receptorId ? [{ key: ReceptorIdKey, value: job.receptorId }] : []),
        ...(job.traceId ? [{ key: TraceIdKey, value: job.traceId }] : []),
      ];
      await temporal.workflow.start(workflowType, {
        taskQueue: config.TEMPORAL_TASK_QUEUE, workflowId: job._id, args, typedSearchAttributes: attrs,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        // Shown on the run in the Temporal UI next to the search attributes.
        staticSummary: summary,
      }).catch((e: unknown) => {
        if ((e as { name?: string }).name === 'WorkflowExecutionAlreadyStartedError') return; // idempotent start
        throw e;
      });
    },

    /**
     * Applies a transition. Terminal states are sticky: once completed or failed, nothing moves
     * the job again, so a late activity cannot resurrect a cancelled run. Returns whether it applied.
     */
    async transition(workspaceId: string, jobId: string, patch: JobPatch): Promise<boolean> {
      const now = new Date();
      const set: Partial<JobDoc> = { updatedAt: now };
      if (patch.status !== undefined) set.status = patch.status;
      if (patch.progress !== undefined) set.progress = Math.max(0, Math.min(100, Math.round(patch.progress)));
      if (patch.currentStep !== undefined) set.currentStep = patch.currentStep;
      if (patch.failedReason !== undefined) set.failedReason = patch.failedReason;
      if (patch.result !== undefined) set.result = encodeBlob(patch.result);
      if (patch.waitingFor !== undefined) set.waitingFor = patch.waitingFor === null ? null : encodeBlob(patch.waitingFor);
      if (patch.status && TERMINAL_STATES.includes(patch.status)) set.finishedAt = now;
      // Under a per-job lock: the terminal check and the write must not interleave (see src/locks.ts).
      return withLock(`job:${jobId}`, async () => {
        const cur = await repo.jobs.findOne({ _id: jobId, workspaceId });
        if (!cur || TERMINAL_STATES.includes(cur.status)) return false;
        if (patch.status === 'running' && !cur.processedAt) set.processedAt = now;
        await repo.jobs.updateOne({ _id: jobId, workspaceId }, { $set: set });
        return true;
      });
    },

    /** The read model merged with the workflow's live `status` query while it runs. */
    async status(scope: Scope, jobId: string): Promise<JobDoc & { live?: LiveStatus }> {
      const job = await get(scope, jobId);
      if (TERMINAL_STATES.includes(job.status) || job.status === 'pending') return job;
      const live = await liveStatus(jobId);
      if (!live || TERMINAL_STATES.includes(live.status)) return job;
      // The live answer is newer than the document read before it: take its waitingFor as well.
      const waitingFor = live.waitingFor ? encodeBlob(live.waitingFor) : live.status === 'running' ? null : job.waitingFor;
      return { ...job, status: live.status, progress: live.progress, currentStep: live.currentStep, waitingFor, live };
    },

    async list(scope: Scope, q: JobListQuery) {
      const filter: Filter<JobDoc> = { workspaceId: scope.workspaceId };
      if (q.pathway_id) filter.pathwayId = q.pathway_id;
      if (q.receptor_id) filter.receptorId = q.receptor_id;
      if (q.neuron_id) filter.neuronId = q.neuron_id;
      if (q.status) filter.status = q.status;
      const { items, total } = await repo.list(filter, q.offset, q.limit);
      return { items, total, limit: q.limit, offset: q.offset };
    },

    /**
     * Cancels a running job: the read model turns failed first (sticky), then the workflow and
     * its child runs are cancelled, and the stream ends with a terminal `error` entry.
     */
    async cancel(scope: Scope, jobId: string, reason = 'Cancelled by user'): Promise<JobDoc> {
      const job = await get(scope, jobId);
      if (TERMINAL_STATES.includes(job.status)) throw validationError(`Job is already ${job.status}`);
      const applied = await this.transition(scope.workspaceId, jobId, { status: 'failed', failedReason: `cancelled: ${reason}`, currentStep: 'cancelled' });
      if (!applied) throw validationError('Job already finished');
      const handle = temporal.workflow.getHandle(jobId);
      await handle.signal(cancelSignal, { reason }).catch(() => undefined);
      await handle.cancel().catch(() => undefined);
      await streams.append(streamKey(jobId), { type: 'error', error: 'cancelled', message: `cancelled: ${reason}` });
      await onCancel?.(scope.workspaceId, jobId);
      for (const child of await repo.jobs.find({ parentJobId: jobId, workspaceId: scope.workspaceId, status: { $nin: TERMINAL_STATES } }).toArray()) {
        await this.transition(scope.workspaceId, child._id, { status: 'failed', failedReason: `cancelled: parent job ${jobId} was cancelled` });
        await streams.append(streamKey(child._id), { type: 'error', error: 'cancelled', message: 'parent job cancelled' });
      }
      return get(scope, jobId);
    },

    /** Appends to a job stream unless a terminal entry was already written (retried activities). */
    async emit(jobId: string, event: Record<string, unknown>): Promise<string | null> {
      if (event.type === 'complete' || event.type === 'error') {
        const tail = await streams.tail(streamKey(jobId), 5);
        if (tail.some((e) => e.data.type === 'complete' || e.data.type === 'error')) return null;
      }
      return streams.append(streamKey(jobId), event);
    },

    /** Unscoped read for the worker (the job id came from a workflow the platform started). */
    repoFind: (jobId: string) => repo.jobs.findOne({ _id: jobId }),

    /** Every entry of a job stream (jobs are short; used to resume a retried model turn). */
    entries: (jobId: string) => streams.range(streamKey(jobId), undefined, 100_000),

  };
}
export type JobService = ReturnType<typeof createJobService>;
