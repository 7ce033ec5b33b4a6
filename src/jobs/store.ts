import type { Page, PageQuery } from '../kernel/store/paging.js';
import type { Job, JobChange, JobListFilter, QueuedStart, UnannouncedEnd } from './model.js';

/**
 * What the job service asks of its store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter): the jobs read model, their terminal claims and the outbox of their ends, the
 * workspaces' queues of runs past their share, and the trace chains of double-texting. Every tenant
 * operation takes the workspace; the worker's reads, the outbox and the sweeps work across workspaces.
 */
export interface JobStore {
  /** One job of a workspace (by key and workspace). */
  get(workspaceId: string, id: string): Promise<Job | null>;
  /** A job by id whatever its workspace: the worker's read (the id came from a workflow the platform started). */
  findUnscoped(id: string): Promise<Job | null>;
  /** Inserts a new job; false when its id exists. */
  insert(job: Job): Promise<boolean>;
  /** A page of the workspace's jobs, newest first. */
  page(workspaceId: string, f: JobListFilter, q: PageQuery): Promise<Page<Job>>;
  /** The job's claimed terminal state (decoded), or null while it has none. */
  terminalState(jobId: string): Promise<JobChange | null>;
  /**
   * Claims the job's terminal state: exactly one of any number of racing writers wins. Answers
   * whether this call won and the state that holds.
   */
  claimTerminal(
    workspaceId: string,
    jobId: string,
    change: JobChange,
  ): Promise<{ won: boolean; held: JobChange | null }>;
  /**
   * Up to `limit` ends whose events are not announced yet (as of `now`), each with its job as the
   * claim ends it (the claim is the truth: the job record may not show the end yet).
   */
  unannouncedEnds(now: Date, limit: number): Promise<UnannouncedEnd[]>;
  /** Holds an unannounced end for one follower until `until`; false when another follower moved it first. */
  holdUnannounced(claimId: string, seen: Date, until: Date): Promise<boolean>;
  /** The end's events are fanned out: the claim leaves the outbox. */
  markAnnounced(claimId: string): Promise<void>;
  /** Writes the claimed terminal state onto the job (processedAt set if unset); the job after it. */
  settleTerminal(workspaceId: string, jobId: string, state: JobChange, now: Date): Promise<Job | null>;
  /**
   * A non-terminal transition; a change that raced a terminal transition is repaired (the end
   * stands). `applied`: the change stands; `previous`: the job before it (null: no such job).
   */
  recordTransition(
    workspaceId: string,
    jobId: string,
    change: JobChange,
    now: Date,
  ): Promise<{ applied: boolean; previous: Job | null }>;
  /** Removes a job that never started (still at `step`) and its terminal claim, so that its id can start afresh. */
  forgetNotStarted(workspaceId: string, jobId: string, step: string): Promise<void>;
  /** The job's child jobs that have not ended. */
  openChildren(workspaceId: string, parentJobId: string): Promise<Job[]>;
  /** The ids of the job's child jobs (ended or not). */
  childIds(workspaceId: string, parentJobId: string): Promise<string[]>;
  /** Up to 500 pending jobs of a workspace created before `before` (the job sweep). */
  pendingBefore(workspaceId: string, before: Date): Promise<Job[]>;
  /** The workspace's runs holding a place (pending or running, recorded since `since`), counted up to `limit`. */
  countActiveRuns(workspaceId: string, since: Date, limit: number): Promise<number>;
  /** Marks the runs stored before places were recorded (data format 2); idempotent, answers how many it marked. */
  markPlaces(): Promise<number>;
  /** The workspace's runs waiting in its queue, counted up to `limit`. */
  countQueuedRuns(workspaceId: string, limit: number): Promise<number>;
  /** Whether a workspace other than this one recorded a run since `since` (the platform is shared right now). */
  otherWorkspaceRan(workspaceId: string, since: Date): Promise<boolean>;
  /**
   * Keeps a queued run's start (idempotent: the same job again keeps the first). `after`: the run
   * on its trace it waits for (it is not claimed before that run lets it go, `reblock`).
   */
  enqueue(workspaceId: string, jobId: string, start: QueuedStart, after?: string | null): Promise<void>;
  /** Whether the workspace has a queued run free to start (drain looks before it counts places). */
  hasFreeQueued(workspaceId: string): Promise<boolean>;
  /** Claims the workspace's oldest queued start no one holds and no run on its trace holds back, for `leaseMs`; null when none is free. */
  claimQueued(workspaceId: string, leaseMs: number): Promise<{ jobId: string; start: QueuedStart } | null>;
  /** A queued run left the queue (started, or ended before it started): it holds a place from now. */
  dequeue(workspaceId: string, jobId: string): Promise<void>;
  /** The run a queued run waits for on its trace (null: it waits for nothing, or it is not queued). */
  queuedAfter(jobId: string): Promise<string | null>;
  /** The runs waiting for `from` on its trace now wait for `to` (null: for nothing); answers the ids moved. */
  reblock(workspaceId: string, from: string, to: string | null): Promise<string[]>;
  /** The runs of a workspace held back by another run on their trace (the start sweep checks their blockers), at most `limit`. */
  blockedQueued(workspaceId: string, limit: number): Promise<{ jobId: string; after: string; queuedAt: Date }[]>;
  /** The trace's newest run and when it became so (null: no run was started on it since double-texting was recorded). */
  traceHead(workspaceId: string, traceId: string): Promise<{ jobId: string; updatedAt: Date } | null>;
  /**
   * Makes `jobId` the trace's newest run if `expected` still is (null: the trace has no head yet).
   * False when another run swapped itself in first (the caller reads the head again).
   */
  swapTraceHead(workspaceId: string, traceId: string, expected: string | null, jobId: string): Promise<boolean>;
  /** The run gave its trace up (see JobDoc.traceReleasedAt); false when it had already. */
  markTraceReleased(workspaceId: string, jobId: string): Promise<boolean>;
  /**
   * Leases writing into the trace to the jobs `jobIds` (a run and its top job) until `until`, each
   * only while it has not ended; false when one of them has ended.
   */
  leaseTraceWrite(workspaceId: string, jobIds: string[], until: Date): Promise<boolean>;
  /** Until when the job's writes into its trace may still land (null: it never leased one). */
  traceWriteUntil(workspaceId: string, jobId: string): Promise<Date | null>;
  /** The trace's top-level runs that have not ended, oldest first (interrupt and rollback cancel them). */
  openOnTrace(workspaceId: string, traceId: string): Promise<Job[]>;
  /** Workspaces with runs in their queue (the start sweep drains them), at most `limit`. */
  queuedWorkspaces(limit: number): Promise<string[]>;
  /** Jobs a share link started, counted up to `limit` when given. */
  countForShare(workspaceId: string, shareTokenId: string, limit?: number): Promise<number>;
  /** Whether a job this share link started ran on this trace (docs/shares.md, a link's conversations). */
  ranOnTraceForShare(workspaceId: string, traceId: string, shareTokenId: string): Promise<boolean>;
}
