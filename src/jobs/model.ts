import type { Blob } from '../kernel/store/codec.js';
import type { JobKind, JobState } from '../temporal/definitions.js';

/**
 * The jobs read model: one document per workflow, id = workflow id. Activities
 * update it at status transitions; lists, filters and totals read it instead of Temporal.
 */
export interface JobDoc {
  _id: string;
  workspaceId: string;
  brainId: string | null;
  kind: JobKind;
  status: JobState;
  progress: number;
  currentStep: string | null;
  failedReason: string | null;
  result: Blob | null;
  waitingFor: Blob | null;
  neuronId: string | null;
  pathwayId: string | null;
  receptorId: string | null;
  traceId: string | null;
  parentJobId: string | null;
  clientNonce: string | null;
  createdBy: string | null;
  /** A pathway run's pinned pathway version (absent on other jobs and on runs recorded before 2026-11). */
  pathwayVersion?: number | null;
  /** A pathway run's input as it was started (absent on other jobs): the console's run page shows it. */
  input?: Blob | null;
  /** Set on a replay (POST /v1/jobs/:id/replay): the run it replays and the node it runs from. */
  replay?: { of: string; fromNode: string };
  /** Set on jobs started through a share link (its request budget counts them). */
  shareTokenId?: string;
  /**
   * A run waiting in its workspace's queue (past its share of runs): its workflow has not started,
   * its start is kept in `run_queue` (src/jobs/service.ts, admitRun and drain). Unset once started.
   */
  queued?: boolean;
  /**
   * Stored only (never decoded): true on a run a caller started (RUN_KINDS, no parent) that is not
   * waiting in its workspace's queue. While such a job is pending or running it holds one of its
   * workspace's places (admitRun, drain): the share is counted on an index of (workspace, status,
   * holdsPlace, createdAt) as two counts the store answers from the index alone, where the
   * conditions on kind, parent and queue mark read every pending job of the workspace (hundreds
   * of queued runs under a flood). Set when the job is stored and when it leaves the queue.
   */
  holdsPlace?: boolean;
  /**
   * A run that waits for another run on its trace to end (double-texting, docs/neurons.md): the job
   * it waits for. Set while it waits in `run_queue` behind that job; unset once it starts.
   */
  waitsFor?: string | null;
  /**
   * When this run gave its trace up (it ended and, when cancelled, its workflow stopped writing):
   * a run waiting behind it on the trace may start from then on.
   */
  traceReleasedAt?: Date;
  /**
   * A pathway run that claimed the trace its caller named (double-texting): it gives the trace up
   * when it ends. A neuron run always claims its trace; a pathway run on a trace of its own does not.
   */
  onTraceChain?: boolean;
  /**
   * A run's lease on writing into its trace (src/runs/trace-writes.ts): taken (and pushed
   * forward) only while the job has not ended, so once a cancel ended it no new write starts, and
   * the run behind it on the trace waits until this time for the writes already under way.
   */
  traceWriteUntil?: Date;
  /** When the job first left `pending` (unset until then; jobs recorded before 2026-11 carry null). */
  createdAt: Date;
  processedAt?: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
}

/** The states a job ends in (a terminal claim holds one of them). */
export const TERMINAL_STATES: JobState[] = ['completed', 'failed'];

/** The step a queued run shows until its workflow starts. */
export const QUEUED_FOR_PLACE = "queued: waiting for a place in the workspace's share of runs";
/** The step a run shows while it waits for another run on its trace (double-texting). */
export const waitingStep = (jobId: string) => `queued: waiting for job ${jobId} on its trace to end`;

/** The kinds of job a caller starts as a run (a workspace's share of runs counts these, parent runs' children aside). */
export const RUN_KINDS: JobKind[] = ['neuron', 'pathway', 'receptor'];

/**
 * A run waiting in its workspace's queue: how to start its workflow once the workspace has a place
 * (the stored start of src/runs/model.ts, with the workflow id when it is not the job's). A claim holds
 * it for one starter until `leaseUntil`; one that died leaves it for the next.
 */
export interface QueuedStart {
  workflowType: string;
  args: unknown[];
  summary?: string;
  workflowId?: string;
}
/** A row of `run_queue`: one queued run's start (the blob of a QueuedStart) and what it waits for. */
export interface RunQueueDoc {
  _id: string;
  workspaceId: string;
  start: Blob;
  queuedAt: Date;
  leaseUntil: Date;
  /** The run on the same trace this one waits for (double-texting); null or absent when it waits only for a place. */
  after?: string | null;
  /**
   * Whether it waits only for a place (`after` null): the claim reads the head of the free runs
   * from the index (workspaceId, free, queuedAt), so runs held back by their trace are not read.
   * Kept with `after` (enqueue, reblock); queue entries stored before it are marked by migration 2.
   */
  free?: boolean;
}

/**
 * A trace's newest run (double-texting, docs/neurons.md): `_id` is traceKey(workspace, trace). Each
 * run started on a trace swaps itself in (a compare-and-set on `jobId`), so every run learns the
 * one run it comes after, and runs of one trace form one chain however many API processes start them.
 */
export interface TraceHeadDoc {
  _id: string;
  workspaceId: string;
  jobId: string;
  updatedAt: Date;
}

/** A job's claimed terminal state (src/kernel/store/claims.ts): `_id` `job:<id>:terminal`, the transition it applied. */
export interface JobClaimDoc {
  _id: string;
  workspaceId: string;
  set: Partial<JobDoc>;
  /**
   * Set in the claim's own insert, so the end's events are recorded with the end itself (the
   * webhook outbox follows these, src/webhooks/outbox.ts); unset once they are recorded in the
   * outbox. Claims made before 2026-11 have none (nothing is announced twice after an upgrade).
   */
  outboxAt?: Date;
}

/** A job's end whose events are not recorded yet: its claim, and the job with the claimed end applied. */
export interface UnannouncedEnd {
  claimId: string;
  workspaceId: string;
  jobId: string;
  /** The claim's outbox mark as read (a follower holds the end by moving it from this value). */
  outboxAt: Date;
  /** Null when the job record is gone (its events are then dropped). */
  job: Job | null;
}

/** A job as services see it: `result` decoded (undefined while none is stored), `waitingFor` decoded. */
export interface Job extends Omit<JobDoc, 'result' | 'waitingFor' | 'input' | 'holdsPlace'> {
  result?: unknown;
  /** The run's input (pathway runs; undefined on other jobs). */
  input?: unknown;
  waitingFor: Record<string, unknown> | null;
}

/** The fields a status transition changes (decoded values). */
export type JobChange = Partial<
  Pick<
    Job,
    'status' | 'progress' | 'currentStep' | 'failedReason' | 'result' | 'waitingFor' | 'updatedAt' | 'finishedAt'
  >
>;

/** What a job list may filter on (the workspace is the call's own argument). */
export interface JobListFilter {
  pathwayId?: string;
  receptorId?: string;
  neuronId?: string;
  parentJobId?: string;
  status?: JobState;
}

// The jobs area's entries in the kernel's event map (src/kernel/events.ts).
declare module '../kernel/events.js' {
  interface Events {
    /** A job became completed, failed or waiting, once stored (jobs publish; signed webhooks subscribe). Awaited by the transition. */
    'job.status': Job;
  }
  interface Requests {
    /** Starts a never-started job from its stored start, if it has one (jobs ask; the run service answers). */
    'job.restart': { input: Job; output: boolean };
  }
}
