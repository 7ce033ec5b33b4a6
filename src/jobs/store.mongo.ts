import type { Collection, Db, Filter } from 'mongodb';
import type { JobKind, JobState } from '../temporal/definitions.js';
import { claim, isDuplicateKey } from '../kernel/store/claims.js';
import { findById, type IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { page, pageIndexes, type Page, type PageQuery } from '../kernel/store/paging.js';
import {
  QUEUED_FOR_PLACE,
  RUN_KINDS,
  TERMINAL_STATES,
  waitingStep,
  type Job,
  type JobChange,
  type JobClaimDoc,
  type JobDoc,
  type JobListFilter,
  type QueuedStart,
  type RunQueueDoc,
  type TraceHeadDoc,
  type UnannouncedEnd,
} from './model.js';
import type { JobStore } from './store.js';

export const jobIndexes: IndexSpec[] = [
  // GET /v1/jobs pages by (createdAt, _id) under the workspace and at most one of these equalities (src/kernel/store/paging.ts).
  ...pageIndexes('jobs', ['workspaceId'], ['createdAt']),
  ...(['status', 'pathwayId', 'receptorId', 'neuronId', 'parentJobId'] as const).flatMap((f) =>
    pageIndexes('jobs', ['workspaceId', f], ['createdAt']),
  ),
  { collection: 'jobs', keys: { parentJobId: 1 }, name: 'parent' },
  { collection: 'jobs', keys: { workspaceId: 1, shareTokenId: 1 }, name: 'ws_share' },
  // The recent runs of every workspace ("is another workspace running?", admitRun).
  { collection: 'jobs', keys: { createdAt: 1 }, name: 'created' },
  // A workspace's runs holding a place (countActiveRuns): equality on the first three keys, a range on createdAt.
  { collection: 'jobs', keys: { workspaceId: 1, status: 1, holdsPlace: 1, createdAt: 1 }, name: 'ws_places' },
  // A workspace's queue of runs past its share, oldest first (drain).
  { collection: 'run_queue', keys: { workspaceId: 1, queuedAt: 1 }, name: 'ws_queued' },
  // The head of a workspace's queue of runs free to start (claimQueued): equality on two keys, sorted on the third.
  { collection: 'run_queue', keys: { workspaceId: 1, free: 1, queuedAt: 1 }, name: 'ws_free' },
  // Runs waiting behind another run on their trace (double-texting): the ones a run's end lets go.
  { collection: 'run_queue', keys: { workspaceId: 1, after: 1 }, name: 'ws_after' },
  // A trace's runs that have not ended (interrupt and rollback cancel them).
  { collection: 'jobs', keys: { workspaceId: 1, traceId: 1, createdAt: 1 }, name: 'ws_trace' },
  // The webhook outbox's followers read the ends not yet announced (a range on one typed key, pushed down with the limit).
  { collection: 'job_claims', keys: { outboxAt: 1 }, name: 'outbox' },
];

/** Queued runs a claim looks at from the head of a workspace's queue (claimQueued). */
const CLAIM_HEAD = 16;

const decodeJob = ({ result, waitingFor, input, holdsPlace: _place, ...j }: JobDoc): Job => ({
  ...j,
  result: decodeBlob<unknown>(result, undefined),
  waitingFor: decodeBlob<Record<string, unknown> | null>(waitingFor, null),
  ...(input ? { input: decodeBlob<unknown>(input, undefined) } : {}),
});
/** Whether a job holds one of its workspace's places while pending or running (JobDoc.holdsPlace). */
const holdsPlace = (j: Pick<Job, 'parentJobId' | 'kind' | 'queued'>): boolean =>
  j.parentJobId === null && RUN_KINDS.includes(j.kind) && j.queued !== true;
/**
 * A job or run-queue row written before data format 2, brought up to it (the `job-places`
 * migration's rule for one row): an imported archive's rows count toward the fair share like the
 * store's own. Rows already of format 2 are returned as they are.
 */
export function placesOf(collection: string, doc: Record<string, unknown>): Record<string, unknown> {
  if (collection === 'jobs' && doc.holdsPlace === undefined)
    return {
      ...doc,
      holdsPlace: holdsPlace({
        parentJobId: typeof doc.parentJobId === 'string' ? doc.parentJobId : null,
        kind: doc.kind as JobKind,
        queued: doc.queued === true,
      }),
    };
  if (collection === 'run_queue' && doc.free === undefined) return { ...doc, free: (doc.after ?? null) === null };
  return doc;
}
const encodeJob = ({ result, waitingFor, input, ...j }: Job): JobDoc => ({
  ...j,
  holdsPlace: holdsPlace(j),
  result: result === undefined ? null : encodeBlob(result),
  waitingFor: waitingFor === null ? null : encodeBlob(waitingFor),
  ...(input !== undefined ? { input: encodeBlob(input) } : {}),
});
function encodeChange({ result, waitingFor, ...c }: JobChange): Partial<JobDoc> {
  const set: Partial<JobDoc> = { ...c };
  if (result !== undefined) set.result = encodeBlob(result);
  if (waitingFor !== undefined) set.waitingFor = waitingFor === null ? null : encodeBlob(waitingFor);
  return set;
}
/** A claim's stored set, decoded; claims written before processedAt moved to `$min` carry it in their set (dropped). */
function decodeClaimed(set: Partial<JobDoc>): JobChange {
  const { processedAt: _legacy, result, waitingFor, ...rest } = set;
  return {
    ...(rest as JobChange),
    ...(result !== undefined ? { result: decodeBlob<unknown>(result, null) } : {}),
    ...(waitingFor !== undefined ? { waitingFor: decodeBlob<Record<string, unknown> | null>(waitingFor, null) } : {}),
  };
}
const terminalId = (jobId: string) => `job:${jobId}:terminal`;

/** A trace head's key. */
const headId = (workspaceId: string, traceId: string) => `${workspaceId}:${traceId}`;

/** The collections the job store's parts share. */
interface JobCollections {
  jobs: Collection<JobDoc>;
  claims: Collection<JobClaimDoc>;
  queue: Collection<RunQueueDoc>;
  heads: Collection<TraceHeadDoc>;
}

/** The job's claimed terminal state (decoded), or null while it has none. */
const held = async ({ claims }: JobCollections, jobId: string): Promise<JobChange | null> => {
  const c = await claims.findOne({ _id: terminalId(jobId) });
  return c ? decodeClaimed(c.set) : null;
};
/** Jobs recorded with `processedAt: null` (before it was left unset) get it on their first transition. */
const repairProcessedAt = async ({ jobs }: JobCollections, job: JobDoc | null, now: Date) => {
  if (job && job.processedAt === null)
    await jobs.updateOne(
      { _id: job._id, workspaceId: job.workspaceId, processedAt: null },
      { $set: { processedAt: now } },
    );
};

/** The `jobs` records: reads, the insert, the terminal settle and non-terminal transitions, share counts. */
function createJobRecords(
  c: JobCollections,
): Pick<
  JobStore,
  | 'get'
  | 'findUnscoped'
  | 'insert'
  | 'page'
  | 'settleTerminal'
  | 'recordTransition'
  | 'forgetNotStarted'
  | 'openChildren'
  | 'childIds'
  | 'pendingBefore'
  | 'countForShare'
  | 'ranOnTraceForShare'
> {
  const { jobs, claims } = c;
  return {
    /** One job of a workspace (by key and workspace). */
    get: async (workspaceId: string, id: string): Promise<Job | null> => {
      const j = await findById(jobs, id, { workspaceId });
      return j && decodeJob(j);
    },
    /** A job by id whatever its workspace: the worker's read (the id came from a workflow the platform started). */
    findUnscoped: async (id: string): Promise<Job | null> => {
      const j = await jobs.findOne({ _id: id });
      return j && decodeJob(j);
    },
    /** Inserts a new job; false when its id exists. */
    async insert(job: Job): Promise<boolean> {
      try {
        await jobs.insertOne(encodeJob(job));
        return true;
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
    },
    /** A page of the workspace's jobs, newest first. */
    async page(workspaceId: string, f: JobListFilter, q: PageQuery): Promise<Page<Job>> {
      const filter: Filter<JobDoc> = { workspaceId, ...f };
      const p = await page(jobs, filter, { field: 'createdAt', dir: -1 }, q);
      return { ...p, items: p.items.map(decodeJob) };
    },
    /** Writes the claimed terminal state onto the job (processedAt set by `$min` if unset); the job after it. */
    async settleTerminal(workspaceId: string, jobId: string, state: JobChange, now: Date): Promise<Job | null> {
      const job = await jobs.findOneAndUpdate(
        { _id: jobId, workspaceId },
        { $set: encodeChange(state), $min: { processedAt: now } },
        { returnDocument: 'after' },
      );
      await repairProcessedAt(c, job, now);
      return job && decodeJob(job);
    },
    /**
     * A non-terminal transition: one find-and-update that returns the job before it (`processedAt`
     * set by `$min` when it leaves pending), then a read of the terminal claim by id: a change that
     * raced a terminal transition is repaired by re-applying the claimed state, and a job that ended
     * without a claim (a record older than claims) keeps its end. `applied`: the change stands.
     */
    async recordTransition(
      workspaceId: string,
      jobId: string,
      change: JobChange,
      now: Date,
    ): Promise<{ applied: boolean; previous: Job | null }> {
      const leavesPending = change.status !== undefined && change.status !== 'pending';
      const previous = await jobs.findOneAndUpdate(
        { _id: jobId, workspaceId },
        { $set: encodeChange(change), ...(leavesPending ? { $min: { processedAt: now } } : {}) },
        { returnDocument: 'before' },
      );
      if (!previous) return { applied: false, previous: null };
      if (leavesPending) await repairProcessedAt(c, previous, now);
      // A terminal claim may have landed before this write: it wins again.
      const terminal = await claims.findOne({ _id: terminalId(jobId) });
      if (terminal) {
        await jobs.updateOne({ _id: jobId, workspaceId }, { $set: terminal.set });
        return { applied: false, previous: decodeJob(previous) };
      }
      if (TERMINAL_STATES.includes(previous.status)) {
        const { status, progress, currentStep, failedReason, result, waitingFor } = previous;
        const end = { status, progress, currentStep, failedReason, result, waitingFor };
        await jobs.updateOne({ _id: jobId, workspaceId }, { $set: end });
        return { applied: false, previous: decodeJob(previous) };
      }
      return { applied: true, previous: decodeJob(previous) };
    },
    /** Removes a job that never started (still at `step`) and its terminal claim, so that its id can start afresh. */
    async forgetNotStarted(workspaceId: string, jobId: string, step: string): Promise<void> {
      await jobs.deleteOne({ _id: jobId, workspaceId, currentStep: step });
      await claims.deleteOne({ _id: terminalId(jobId), workspaceId });
    },
    /** The job's child jobs that have not ended. */
    openChildren: async (workspaceId: string, parentJobId: string): Promise<Job[]> =>
      (await jobs.find({ parentJobId, workspaceId, status: { $nin: TERMINAL_STATES } }).toArray()).map(decodeJob),
    /** The ids of the job's child jobs (ended or not). */
    childIds: async (workspaceId: string, parentJobId: string): Promise<string[]> =>
      (await jobs.find({ parentJobId, workspaceId }, { projection: { _id: 1 } }).toArray()).map((j) => j._id),
    /** Up to 500 pending jobs of a workspace created before `before` (the job sweep). */
    pendingBefore: async (workspaceId: string, before: Date): Promise<Job[]> =>
      (
        await jobs
          .find({ workspaceId, status: 'pending', createdAt: { $lt: before } })
          .limit(500)
          .toArray()
      ).map(decodeJob),
    /** Jobs a share link started, counted up to `limit` when given (an index range of at most that many entries). */
    countForShare: (workspaceId: string, shareTokenId: string, limit?: number): Promise<number> =>
      jobs.countDocuments({ workspaceId, shareTokenId }, limit !== undefined ? { limit } : {}),
    /** Whether a job this share link started ran on this trace (docs/shares.md, a link's conversations). */
    ranOnTraceForShare: async (workspaceId: string, traceId: string, shareTokenId: string): Promise<boolean> =>
      (await jobs.findOne({ workspaceId, shareTokenId, traceId }, { projection: { _id: 1 } })) !== null,
  };
}

/** The terminal claims (`job_claims`): a job's one end, and the webhook outbox of ends not yet announced. */
function createJobClaims(
  c: JobCollections,
): Pick<JobStore, 'terminalState' | 'claimTerminal' | 'unannouncedEnds' | 'holdUnannounced' | 'markAnnounced'> {
  const { jobs, claims } = c;
  return {
    /** The job's claimed terminal state (decoded), or null while it has none. */
    terminalState: (jobId: string): Promise<JobChange | null> => held(c, jobId),
    /**
     * Claims the job's terminal state by unique insert (src/kernel/store/claims.ts): exactly one of any
     * number of racing writers wins. Answers whether this call won and the state that holds.
     */
    async claimTerminal(workspaceId: string, jobId: string, change: JobChange) {
      const set = encodeChange(change);
      const won = await claim(claims, { _id: terminalId(jobId), workspaceId, set, outboxAt: new Date() });
      return { won, held: won ? decodeClaimed(set) : await held(c, jobId) };
    },
    /**
     * Up to `limit` ends whose events are not announced yet (claims still carrying `outboxAt` at or
     * before `now`), each with its job as the claim ends it (the claim is the truth: the job record
     * may not show the end yet when its writer died in between).
     */
    async unannouncedEnds(now: Date, limit: number): Promise<UnannouncedEnd[]> {
      const due = await claims
        .find({ outboxAt: { $lte: now } })
        .limit(limit)
        .toArray();
      return Promise.all(
        due.map(async (c) => {
          const jobId = c._id.slice('job:'.length, -':terminal'.length);
          const doc = await findById(jobs, jobId, { workspaceId: c.workspaceId });
          const job = doc ? { ...decodeJob(doc), ...decodeClaimed(c.set) } : null;
          return { claimId: c._id, workspaceId: c.workspaceId, jobId, outboxAt: c.outboxAt!, job };
        }),
      );
    },
    /**
     * Holds an unannounced end for one follower until `until` (its mark moves forward, so other
     * followers skip it); false when another follower moved it first.
     */
    holdUnannounced: async (claimId: string, seen: Date, until: Date): Promise<boolean> =>
      (await claims.updateOne({ _id: claimId, outboxAt: seen }, { $set: { outboxAt: until } })).modifiedCount === 1,
    /** The end's events are fanned out: the claim leaves the outbox. */
    async markAnnounced(claimId: string): Promise<void> {
      await claims.updateOne({ _id: claimId }, { $unset: { outboxAt: '' } });
    },
  };
}

/** The workspaces' run queues (`run_queue`) and the places their runs hold (fair share, double-texting's waits). */
function createRunQueue(
  c: JobCollections,
): Pick<
  JobStore,
  | 'countActiveRuns'
  | 'markPlaces'
  | 'countQueuedRuns'
  | 'otherWorkspaceRan'
  | 'enqueue'
  | 'hasFreeQueued'
  | 'claimQueued'
  | 'dequeue'
  | 'queuedAfter'
  | 'reblock'
  | 'blockedQueued'
  | 'queuedWorkspaces'
> {
  const { jobs, queue } = c;
  return {
    /**
     * The workspace's runs (neuron, pathway and receptor jobs started by a caller, not a parent
     * run's children) pending or running and recorded since `since`, counted up to `limit`: its
     * share of the platform's runs (src/jobs/service.ts, admitRun).
     */
    async countActiveRuns(workspaceId: string, since: Date, limit: number): Promise<number> {
      const count = (status: JobState, n: number) =>
        jobs.countDocuments({ workspaceId, status, holdsPlace: true, createdAt: { $gte: since } }, { limit: n });
      // Both counts at once (one round trip on the invoke's path, not two); the sum is capped at limit.
      const [running, pending] = await Promise.all([count('running', limit), count('pending', limit)]);
      return Math.min(limit, running + pending);
    },
    /**
     * Marks the runs stored before `holdsPlace` existed (data format 2): every job a caller
     * started as a run and not in the queue. Idempotent; answers how many it marked.
     */
    async markPlaces(): Promise<number> {
      const r = await jobs.updateMany(
        { holdsPlace: { $exists: false }, parentJobId: null, kind: { $in: RUN_KINDS }, queued: { $ne: true } },
        { $set: { holdsPlace: true } },
      );
      // Queue entries stored before `free`: those that wait only for a place are free.
      await queue.updateMany({ free: { $exists: false }, after: null }, { $set: { free: true } });
      await queue.updateMany({ free: { $exists: false } }, { $set: { free: false } });
      return r.modifiedCount;
    },
    /** The workspace's runs waiting in its queue, counted up to `limit`. */
    countQueuedRuns: (workspaceId: string, limit: number): Promise<number> =>
      queue.countDocuments({ workspaceId }, { limit }),
    /** Whether a workspace other than this one recorded a run since `since` (the platform is shared right now). */
    otherWorkspaceRan: async (workspaceId: string, since: Date): Promise<boolean> =>
      (await jobs.findOne(
        { createdAt: { $gte: since }, workspaceId: { $ne: workspaceId }, parentJobId: null, kind: { $in: RUN_KINDS } },
        { projection: { _id: 1 } },
      )) !== null,
    /**
     * Keeps a queued run's start (idempotent: the same job again keeps the first). `after`: the run
     * on its trace it waits for (it is not claimed before that run lets it go, `reblock`).
     */
    enqueue: async (workspaceId: string, jobId: string, start: QueuedStart, after?: string | null): Promise<void> => {
      await claim(queue, {
        _id: jobId,
        workspaceId,
        start: encodeBlob(start),
        queuedAt: new Date(),
        leaseUntil: new Date(0),
        after: after ?? null,
        free: !after,
      });
    },
    /** Whether the workspace has a queued run free to start (one index entry read; drain looks before it counts places). */
    hasFreeQueued: async (workspaceId: string): Promise<boolean> =>
      (await queue.findOne({ workspaceId, free: true }, { projection: { _id: 1 } })) !== null,
    /** Claims the workspace's oldest queued start no one holds and no run on its trace holds back, for `leaseMs`; null when none is free. */
    claimQueued: async (
      workspaceId: string,
      leaseMs: number,
    ): Promise<{ jobId: string; start: QueuedStart } | null> => {
      const now = new Date();
      // The head of the queue from its index (sort and limit served by the store, not every queued
      // run read and sorted), then the first one no one holds, claimed by id. Heads all held by
      // other starters (more than CLAIM_HEAD of them at once) leave this drain for the next one.
      const head = await queue
        .find(
          { workspaceId, free: true },
          { sort: { queuedAt: 1 }, limit: CLAIM_HEAD, projection: { _id: 1, leaseUntil: 1 } },
        )
        .toArray();
      for (const h of head) {
        if (h.leaseUntil >= now) continue;
        const doc = await queue.findOneAndUpdate(
          { _id: h._id, workspaceId, leaseUntil: { $lt: now }, after: null },
          { $set: { leaseUntil: new Date(now.getTime() + leaseMs) } },
          { returnDocument: 'after' },
        );
        if (doc) return { jobId: doc._id, start: decodeBlob<QueuedStart>(doc.start, { workflowType: '', args: [] }) };
      }
      return null;
    },
    /** A queued run left the queue (started, or ended before it started): it holds a place from now. */
    async dequeue(workspaceId: string, jobId: string): Promise<void> {
      // Still pending, it shows that it is starting; one the run has moved on only loses the mark.
      await jobs.updateOne(
        { _id: jobId, workspaceId, queued: true, status: 'pending' },
        {
          $unset: { queued: '', waitsFor: '' },
          $set: { currentStep: 'starting', holdsPlace: true, updatedAt: new Date() },
        },
      );
      await jobs.updateOne(
        { _id: jobId, workspaceId, queued: true },
        { $unset: { queued: '', waitsFor: '' }, $set: { holdsPlace: true } },
      );
      await queue.deleteOne({ _id: jobId, workspaceId });
    },
    /** The run a queued run waits for on its trace (null: it waits for nothing, or it is not queued). */
    queuedAfter: async (jobId: string): Promise<string | null> =>
      (await queue.findOne({ _id: jobId }, { projection: { after: 1 } }))?.after ?? null,
    /**
     * The runs waiting for `from` on its trace now wait for `to` (null: for nothing, they may start);
     * their jobs say so. Answers the ids moved.
     */
    async reblock(workspaceId: string, from: string, to: string | null): Promise<string[]> {
      const ids = (await queue.find({ workspaceId, after: from }, { projection: { _id: 1 } }).toArray()).map(
        (d) => d._id,
      );
      if (!ids.length) return [];
      await queue.updateMany(
        { _id: { $in: ids }, workspaceId, after: from },
        { $set: { after: to, free: to === null } },
      );
      await jobs.updateMany(
        { _id: { $in: ids }, workspaceId, queued: true, status: 'pending' },
        { $set: { waitsFor: to, currentStep: to ? waitingStep(to) : QUEUED_FOR_PLACE, updatedAt: new Date() } },
      );
      return ids;
    },
    /** The runs of a workspace held back by another run on their trace (the start sweep checks their blockers), at most `limit`. */
    blockedQueued: async (
      workspaceId: string,
      limit: number,
    ): Promise<{ jobId: string; after: string; queuedAt: Date }[]> =>
      (
        await queue
          .find({ workspaceId, after: { $ne: null } }, { projection: { _id: 1, after: 1, queuedAt: 1 } })
          .limit(limit)
          .toArray()
      ).map((d) => ({ jobId: d._id, after: d.after!, queuedAt: d.queuedAt })),
    /** Workspaces with runs in their queue (the start sweep drains them), at most `limit`. */
    queuedWorkspaces: async (limit: number): Promise<string[]> => (await queue.distinct('workspaceId')).slice(0, limit),
  };
}

/** Trace heads (`trace_heads`) and a run's hold on its trace: releases, write leases, its open runs. */
function createTraceHeads(
  c: JobCollections,
): Pick<
  JobStore,
  'traceHead' | 'swapTraceHead' | 'markTraceReleased' | 'leaseTraceWrite' | 'traceWriteUntil' | 'openOnTrace'
> {
  const { jobs, heads } = c;
  return {
    /** The trace's newest run and when it became so (null: no run was started on it since double-texting was recorded). */
    traceHead: async (workspaceId: string, traceId: string): Promise<{ jobId: string; updatedAt: Date } | null> => {
      const h = await findById(heads, headId(workspaceId, traceId));
      return h ? { jobId: h.jobId, updatedAt: h.updatedAt } : null;
    },
    /**
     * Makes `jobId` the trace's newest run if `expected` still is (null: the trace has no head yet).
     * False when another run swapped itself in first (the caller reads the head again).
     */
    async swapTraceHead(
      workspaceId: string,
      traceId: string,
      expected: string | null,
      jobId: string,
    ): Promise<boolean> {
      const _id = headId(workspaceId, traceId);
      if (expected === null) return claim(heads, { _id, workspaceId, jobId, updatedAt: new Date() });
      const r = await heads.updateOne(
        { _id, workspaceId, jobId: expected },
        { $set: { jobId, updatedAt: new Date() } },
      );
      return r.modifiedCount === 1;
    },
    /** The run gave its trace up (see JobDoc.traceReleasedAt); false when it had already. */
    markTraceReleased: async (workspaceId: string, jobId: string): Promise<boolean> =>
      (
        await jobs.updateOne(
          { _id: jobId, workspaceId, traceReleasedAt: { $exists: false } },
          { $set: { traceReleasedAt: new Date() } },
        )
      ).modifiedCount === 1,
    /**
     * Leases writing into the trace to the jobs `jobIds` (a run and its top job) until `until`: each
     * must not have ended (checked in the same update that records the lease, so a cancel's end and
     * a lease are ordered). False when one of them has ended (leases taken on the others stay and expire).
     */
    async leaseTraceWrite(workspaceId: string, jobIds: string[], until: Date): Promise<boolean> {
      for (const _id of jobIds) {
        const r = await jobs.updateOne(
          { _id, workspaceId, status: { $nin: TERMINAL_STATES } },
          { $max: { traceWriteUntil: until } },
        );
        if (r.matchedCount !== 1) return false;
      }
      return true;
    },
    /** Until when the job's writes into its trace may still land (null: it never leased one). */
    traceWriteUntil: async (workspaceId: string, jobId: string): Promise<Date | null> =>
      (await jobs.findOne({ _id: jobId, workspaceId }, { projection: { traceWriteUntil: 1 } }))?.traceWriteUntil ??
      null,
    /** The trace's top-level runs that have not ended, oldest first (interrupt and rollback cancel them). */
    openOnTrace: async (workspaceId: string, traceId: string): Promise<Job[]> =>
      (
        await jobs
          .find({ workspaceId, traceId, parentJobId: null, status: { $nin: TERMINAL_STATES } })
          .sort({ createdAt: 1 })
          .limit(100)
          .toArray()
      ).map(decodeJob),
  };
}

/**
 * The job store on MongoDB (and FerretDB): `jobs`, their terminal claims (`job_claims`, also the
 * outbox of their ends), the workspaces' run queues (`run_queue`) and the trace heads (`trace_heads`).
 */
export function createJobRepo(db: Db): JobStore {
  const c: JobCollections = {
    jobs: db.collection<JobDoc>('jobs'),
    claims: db.collection<JobClaimDoc>('job_claims'),
    queue: db.collection<RunQueueDoc>('run_queue'),
    heads: db.collection<TraceHeadDoc>('trace_heads'),
  };
  return {
    ...createJobRecords(c), // get, findUnscoped, insert, page, settleTerminal, recordTransition, …
    ...createJobClaims(c), // terminalState, claimTerminal, unannouncedEnds, holdUnannounced, markAnnounced
    ...createRunQueue(c), // countActiveRuns, markPlaces, enqueue, claimQueued, dequeue, reblock, …
    ...createTraceHeads(c), // traceHead, swapTraceHead, markTraceReleased, leaseTraceWrite, traceWriteUntil, openOnTrace
  };
}
