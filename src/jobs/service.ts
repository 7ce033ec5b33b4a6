import { metrics } from '../kernel/metrics.js';
import type { Client } from '@temporalio/client';
import type { Config } from '../kernel/config.js';
import {
  RUN_KINDS,
  TERMINAL_STATES,
  type Job,
  type JobChange,
  type JobListFilter,
  type QueuedStart,
  QUEUED_FOR_PLACE,
  waitingStep,
} from './model.js';
import type { JobStore } from './store.js';
import { AppError, notFound, traceBusy, validationError, workspaceShareExceeded } from '../kernel/errors.js';
import { ShownReply } from './shown-reply.js';
import type { JobListQuery, MultitaskStrategy } from './schemas.js';
import type { Scope } from '../kernel/scope.js';
import { TERMINAL_EVENTS, type Fence, type Streams } from '../kernel/streams.js';
import {
  BrainIdKey,
  JobKindKey,
  NeuronIdKey,
  PathwayIdKey,
  ReceptorIdKey,
  TraceIdKey,
  WorkspaceIdKey,
  cancelSignal,
  statusQuery,
  type JobKind,
  type JobState,
  type LiveStatus,
} from '../temporal/definitions.js';
import { bestEffort } from '../kernel/best-effort.js';
import type { Logger } from '../kernel/logger.js';
import type { Bus } from '../kernel/events.js';

/** A change at a status transition; terminal states are sticky (a cancelled run never later reads completed). */
export interface JobPatch {
  status?: JobState;
  progress?: number;
  currentStep?: string | null;
  failedReason?: string | null;
  result?: unknown;
  waitingFor?: Record<string, unknown> | null;
}

interface NewJob {
  id: string;
  kind: JobKind;
  brainId?: string | null;
  neuronId?: string | null;
  pathwayId?: string | null;
  receptorId?: string | null;
  traceId?: string | null;
  parentJobId?: string | null;
  clientNonce?: string | null;
  /** Pathway runs: the pinned version (null for an inline graph) and the input they start with. */
  pathwayVersion?: number | null;
  input?: Record<string, unknown>;
  /**
   * Recorded already running, with this progress and step (a map item's child, whose one local
   * activity creates the job and starts its turn at once): one write instead of an insert and a
   * transition. The caller announces the start (`created` says whether this call recorded it).
   */
  running?: { progress: number; currentStep: string };
  /** Recorded waiting in the workspace's queue (admitRun said so): its workflow starts when the workspace has a place. */
  queued?: boolean;
  /** A replay: the run it replays and the node it runs from. */
  replay?: { of: string; fromNode: string };
  /** Recorded waiting (queued) for this run on its trace to end (double-texting, claimTrace). */
  waitsFor?: string | null;
  /** A pathway run that claimed its trace (claimTrace): it gives the trace up when it ends. */
  onTraceChain?: boolean;
}

/** How long after its end a run that never gave its trace up (its process died first) is taken to have. */
const TRACE_RELEASE_GRACE_MS = 30_000;
/**
 * How long a run's lease on writing into its trace lasts (leaseTraceWrite): a write checks that it
 * has TRACE_WRITE_MARGIN_MS of it left before its insert, and renews it otherwise. The trace's
 * next run waits out the lease a cancelled run took, so it must stay below TRACE_RELEASE_GRACE_MS.
 */
const TRACE_WRITE_LEASE_MS = 10_000;
/** What a write into a trace needs left of its lease to start its insert (a store round trip fits in it). */
export const TRACE_WRITE_MARGIN_MS = 3_000;
/** How far `blockerFor` follows cancelled queued runs back along a trace's chain. */
const CHAIN_WALK_MAX = 50;

/** A run start's place (admitRun): `queued` when it waits in its workspace's queue; `release` once its job is stored. */
export interface Admission {
  queued: boolean;
  release: () => void;
}

/** The step a queued run shows until its workflow starts. */
const QUEUED_STEP = QUEUED_FOR_PLACE;

const LIVE_TTL_MS = 250;
/** Jobs whose workspace this process remembers from their creation (`check`), ~100 bytes each. */
const CREATED_HERE_MAX = 10_000;
/** How long cancel waits for the run to finish its own cleanup before answering. */
const CANCEL_WAIT_MS = 5_000;
/** A pending job older than this whose workflow does not exist was never started (the API died in between). */
const NEVER_STARTED_AFTER_MS = 30_000;
/** currentStep of a job whose workflow could not be started; a client_nonce retry starts it afresh. */
export const NOT_STARTED_STEP = 'not started';

/** The job stream's terminal entry, derived from the stored terminal state so stream and record always agree. */
export function terminalEntry(job: Pick<Job, 'status' | 'result' | 'failedReason'>): Record<string, unknown> {
  if (job.status === 'completed') return { type: 'complete', result: job.result ?? null };
  const reason = job.failedReason ?? 'failed';
  return { type: 'error', error: reason.startsWith('cancelled') ? 'cancelled' : 'failed', message: reason };
}

/** Which fence a job stream entry needs (see src/kernel/streams.ts and docs/streams.md). */
function fenceOf(event: Record<string, unknown>): Fence {
  if (TERMINAL_EVENTS.has(String(event.type))) return { kind: 'terminal' };
  if (typeof event.turn === 'number' && typeof event.attempt === 'number') {
    return { kind: event.type === 'reset' ? 'reset' : 'turn', turn: event.turn, attempt: event.attempt };
  }
  return { kind: 'plain' };
}

/** A run recorded longer ago than this no longer counts in its workspace's share (one stuck for good frees its place). */
const RUN_SHARE_WINDOW_MS = 60 * 60_000;
/** A workspace found at its share of runs is refused without a count for this long. */
const RUN_SHARE_FULL_MS = 1_000;
/** How long a queued start makes a workspace's next starts skip work done ahead of admission. */
const QUEUED_LATELY_MS = 10_000;
/** What a start refused past its workspace's share is told to wait (Retry-After), seconds. */
const RUN_SHARE_RETRY_AFTER_S = 5;
/** Another workspace that started a run this recently shares the platform now: runs keep to WORKSPACE_RUN_SHARE. */
const SHARED_WINDOW_MS = 60_000;
/** How long one process trusts its answer to "does another workspace run?" (one read a second, not one a start). */
const SHARED_CACHE_MS = 1_000;
/** A queued start claimed by a starter that died is left to the next one after this. */
const QUEUE_LEASE_MS = 30_000;
/** Queued runs one drain starts at most (the next run's end or the start sweep goes on). */
const DRAIN_MAX = 100;

/** What the job service's deps are (the factory's argument). */
interface JobDeps {
  repo: JobStore;
  streams: Streams;
  temporal: Client;
  config: Config;
  log?: Logger;
  bus: Bus;
}

/**
 * What the job service's parts share: the factory's deps and the state it holds, one instance of
 * each seen by every part (maps are never replaced; `finalizeJob` is read through the context).
 */
interface JobContext extends JobDeps {
  // This service's own reactions to each job that became completed, failed or waiting, once stored.
  statusListeners: ((job: Job) => void)[];
  // Run starts this process has admitted and not yet stored, per workspace (admitRun).
  starting: Map<string, number>;
  // Workspaces found at their share of runs, until when (admitRun).
  fullUntil: Map<string, number>;
  // Workspaces whose run starts this process queued lately, and when (admitRun).
  queuedAt: Map<string, number>;
  // Whether another workspace ran lately, per workspace, and until when this process trusts the answer.
  sharedSeen: Map<string, { shared: boolean; until: number }>;
  // Workspaces this process is draining now (one drain per workspace at a time here).
  draining: Map<string, Promise<number>>;
  // Workspaces whose drain was asked for again while one was under way: it drains once more after it.
  drainAgain: Set<string>;
  /**
   * Live `status` answers, shared for LIVE_TTL_MS: each query is a task on the worker that runs
   * the job, so clients polling fast (or many of them) must not multiply them.
   */
  liveCache: Map<string, { at: number; live: Promise<LiveStatus | null> }>;
  /**
   * Jobs this process created, id → workspace (a job never changes workspace, and a restarted one
   * keeps its id and workspace): the stream a client opens right after its invoke's 202 is checked
   * without a store read. Bounded; the oldest are forgotten first, and a miss reads the store.
   */
  createdHere: Map<string, string>;
  // The service's finalize (startNow fails a job whose run could not start through it).
  finalizeJob: (
    workspaceId: string,
    jobId: string,
    patch: JobPatch & { status: 'completed' | 'failed' },
  ) => Promise<boolean>;
}

// Then the bus's `job.status` (signed webhooks subscribe). Awaited: a `waiting` event is recorded in
// the webhook outbox as part of the transition (a writer that fails there fails its call, and the
// run's activity retries it); an end's events come from its claim.
const told = async ({ statusListeners, bus }: JobContext, job: Job) => {
  await Promise.all([...statusListeners.map((l) => l(job)), bus.emit('job.status', job)]);
};
const streamKey = (ctx: JobContext, jobId: string) => ctx.streams.keys.job(jobId);
const refuse = ({ config }: JobContext) => {
  metrics.requestsShed.inc({ reason: 'workspace-runs' });
  return workspaceShareExceeded(
    `This workspace has ${config.WORKSPACE_MAX_QUEUED_RUNS} runs queued past its share of the platform's runs; retry when one ends`,
    RUN_SHARE_RETRY_AFTER_S,
  );
};
/** How many runs the workspace may have started and not ended right now (its share while others run, else its cap). */
const runLimit = async ({ config, sharedSeen, repo }: JobContext, workspaceId: string): Promise<number> => {
  const { WORKSPACE_RUN_SHARE: share, WORKSPACE_MAX_ACTIVE_RUNS: max } = config;
  if (share >= max) return max;
  const seen = sharedSeen.get(workspaceId);
  if (seen && seen.until > Date.now()) return seen.shared ? share : max;
  const shared = await repo.otherWorkspaceRan(workspaceId, new Date(Date.now() - SHARED_WINDOW_MS));
  if (sharedSeen.size > 10_000) sharedSeen.clear();
  sharedSeen.set(workspaceId, { shared, until: Date.now() + SHARED_CACHE_MS });
  return shared ? share : max;
};
/**
 * Starts the workspace's queued runs, oldest first, while it has a place: each is claimed for a
 * while (another starter takes it over if this one dies), its workflow started (a start that
 * exists counts), then it leaves the queue. A run that ended meanwhile (cancelled) just leaves.
 * Resolves with how many it started.
 */
const drain = (ctx: JobContext, workspaceId: string): Promise<number> => {
  const { draining, drainAgain, repo } = ctx;
  const running = draining.get(workspaceId);
  if (running) {
    // What asks now (a place given back, a run queued) may come after the running drain looked:
    // the workspace is drained once more when it is done, rather than at the next run's end or sweep.
    drainAgain.add(workspaceId);
    return running;
  }
  const p = (async () => {
    let started = 0;
    // Most runs end with nothing queued behind them: one index read, then neither places counted nor a claim.
    if (!(await repo.hasFreeQueued(workspaceId))) return 0;
    for (let i = 0; i < DRAIN_MAX; i++) {
      const since = new Date(Date.now() - RUN_SHARE_WINDOW_MS);
      const limit = await runLimit(ctx, workspaceId);
      if ((await repo.countActiveRuns(workspaceId, since, limit)) >= limit) break;
      const next = await repo.claimQueued(workspaceId, QUEUE_LEASE_MS);
      if (!next) break;
      const job = await repo.findUnscoped(next.jobId);
      if (job && !TERMINAL_STATES.includes(job.status)) {
        const { workflowType, args, summary, workflowId } = next.start;
        await startNow(ctx, { ...job, queued: false }, workflowType, args, summary, { workflowId, failJob: false });
        started++;
      }
      await repo.dequeue(workspaceId, next.jobId);
    }
    return started;
  })().finally(() => {
    draining.delete(workspaceId);
    if (drainAgain.delete(workspaceId)) drainSoon(ctx, workspaceId);
  });
  draining.set(workspaceId, p);
  return p;
};
const drainSoon = (ctx: JobContext, workspaceId: string) =>
  void bestEffort(ctx.log, "starting the workspace's queued runs", drain(ctx, workspaceId));
/**
 * Double-texting (docs/neurons.md): each top-level neuron run on a trace comes after the trace's
 * previous run (a chain kept by the trace head, src/jobs/store.mongo.ts) and, while that run has not given
 * the trace up, waits in the workspace's run queue behind it (`after`), so two runs never write
 * into one trace at the same time, whichever API process started them.
 */
const holdsTrace = (job: Job | null, missingHolds: boolean): boolean => {
  // A job not stored yet is a start still being stored (its invoke swapped itself in first).
  if (!job) return missingHolds;
  if (job.traceReleasedAt) return false;
  if (!TERMINAL_STATES.includes(job.status)) return true;
  // Ended without giving the trace up: its release is on its way, or its process died (then the grace ends it).
  return (job.finishedAt?.getTime() ?? 0) > Date.now() - TRACE_RELEASE_GRACE_MS;
};
/**
 * The run a run waiting behind `jobId` must wait for now: `jobId` while it holds the trace; else,
 * for a run cancelled while it waited, the run it waited for (and so on); null when none holds it.
 */
const blockerFor = async ({ repo }: JobContext, jobId: string | null, missingHolds = true): Promise<string | null> => {
  let id = jobId;
  for (let i = 0; id && i < CHAIN_WALK_MAX; i++) {
    const job = await repo.findUnscoped(id);
    if (holdsTrace(job, missingHolds)) return id;
    id = job?.waitsFor ?? null;
  }
  return null;
};
/** The runs waiting for `from` wait for whatever holds the trace before it now (or start). */
const passOn = async (ctx: JobContext, workspaceId: string, from: string, before: string | null): Promise<void> => {
  const { repo } = ctx;
  const to = await blockerFor(ctx, before);
  const moved = await repo.reblock(workspaceId, from, to);
  // `to` may have given the trace up between the look and the move: its own pass-on did not see these.
  if (to && moved.length) {
    const now = await blockerFor(ctx, to);
    if (now !== to) await repo.reblock(workspaceId, to, now);
  }
  // Runs let go may start now (a run's end drains for its place by itself, statusListeners).
  if (moved.length) drainSoon(ctx, workspaceId);
};
/** Whether the job is a run in its trace's chain: a top-level neuron run, or a pathway run (which may name a trace). */
const claimsTrace = (job: Pick<Job, 'parentJobId' | 'kind' | 'traceId' | 'onTraceChain'>): boolean =>
  job.parentJobId === null &&
  Boolean(job.traceId) &&
  (job.kind === 'neuron' || (job.kind === 'pathway' && job.onTraceChain === true));
/** Waits until the writes into its trace that the (ended) job leased have landed or can no longer start. */
const writesLanded = async ({ repo }: JobContext, scope: Scope, jobId: string): Promise<void> => {
  const until = await repo.traceWriteUntil(scope.workspaceId, jobId);
  const left = (until?.getTime() ?? 0) - Date.now();
  if (left > 0) await new Promise((r) => setTimeout(r, left));
};
/** A run gives its trace up: the run waiting behind it may start. */
const releaseTrace = async (ctx: JobContext, job: Pick<Job, '_id' | 'workspaceId' | 'waitsFor'>): Promise<void> => {
  await ctx.repo.markTraceReleased(job.workspaceId, job._id);
  await passOn(ctx, job.workspaceId, job._id, job.waitsFor ?? null);
};
/** The start sweep: runs held back by a run that gave its trace up unnoticed (its process died) are let go. */
const unblockStale = async (ctx: JobContext, workspaceId: string): Promise<void> => {
  const { repo } = ctx;
  const blocked = await repo.blockedQueued(workspaceId, 200);
  const newest = new Map<string, number>();
  for (const b of blocked) newest.set(b.after, Math.max(newest.get(b.after) ?? 0, b.queuedAt.getTime()));
  for (const [after, queuedAt] of newest) {
    // A blocker not stored yet is a start still being stored while a run behind it is young; one
    // never stored after that (its invoke failed after claiming the trace) holds nothing.
    const now = await blockerFor(ctx, after, queuedAt > Date.now() - TRACE_RELEASE_GRACE_MS);
    if (now !== after) await repo.reblock(workspaceId, after, now);
  }
};

/**
 * Throws the share's 429 when the workspace was found at its share of runs a moment ago: checked
 * before a start reads anything, so a flood of retried starts costs the store nothing.
 */
const refuseIfFull = (ctx: JobContext, workspaceId: string): void => {
  const { fullUntil } = ctx;
  const until = fullUntil.get(workspaceId);
  if (until === undefined) return;
  if (until > Date.now()) throw refuse(ctx);
  fullUntil.delete(workspaceId);
};
/** The workflow's live `status` answer, shared for LIVE_TTL_MS (liveCache). */
const liveStatus = ({ liveCache, temporal }: JobContext, jobId: string): Promise<LiveStatus | null> => {
  const now = Date.now();
  const hit = liveCache.get(jobId);
  if (hit && now - hit.at < LIVE_TTL_MS) return hit.live;
  if (liveCache.size > 5_000) liveCache.clear();
  // The deadline cancels the call itself (a query to a run whose worker is down would otherwise keep retrying).
  const live = temporal.connection
    .withDeadline(Date.now() + 1_500, () => temporal.workflow.getHandle(jobId).query(statusQuery))
    .catch(() => null);
  liveCache.set(jobId, { at: now, live });
  return live;
};

/** Remembers the workspace of a job this process created (createdHere). */
const remember = ({ createdHere }: JobContext, jobId: string, workspaceId: string) => {
  if (createdHere.size >= CREATED_HERE_MAX) createdHere.delete(createdHere.keys().next().value!);
  createdHere.set(jobId, workspaceId);
};

async function get({ repo }: JobContext, scope: Scope, jobId: string): Promise<Job> {
  const job = await repo.get(scope.workspaceId, jobId);
  if (!job) throw notFound('Job');
  return job;
}

/**
 * Appends to a job stream through its fences (docs/streams.md): nothing after the terminal
 * entry, no entry of a superseded model-turn attempt. A terminal entry is written from the
 * stored terminal state when there is one (`claimed`, or read here), so it always agrees with
 * the record. Returns the entry id, or null when a fence refused it.
 */
async function emit(
  ctx: JobContext,
  jobId: string,
  event: Record<string, unknown>,
  claimed?: JobChange,
): Promise<string | null> {
  const { repo, streams } = ctx;
  const fence = fenceOf(event);
  let entry = event;
  if (fence.kind === 'terminal') {
    // The claimed terminal state is the truth (the job document may not show it yet).
    const held = claimed ?? (await repo.terminalState(jobId));
    const job = held ? null : await repo.findUnscoped(jobId);
    if (held)
      entry = terminalEntry({
        status: held.status!,
        result: held.result ?? null,
        failedReason: held.failedReason ?? null,
      });
    else if (job && TERMINAL_STATES.includes(job.status)) entry = terminalEntry(job);
  }
  return streams.append(streamKey(ctx, jobId), entry, fence);
}

/**
 * The job's claimed terminal state once its stream's terminal entry is written, else null. The
 * terminal entry is written from the claim, right after it: while the job runs this is one
 * Redis read and no store read, and a reader that has seen the entry finds the claim. A job
 * whose end was recorded before claims has its record's end (`job`: the record, when read).
 * Redis not answering: the claim is read, as if the entry were written.
 */
async function ending(ctx: JobContext, jobId: string, job?: Job): Promise<JobChange | null> {
  const { repo, streams } = ctx;
  const written = await streams.ended(streamKey(ctx, jobId)).catch(() => true);
  if (!written) return null;
  const held = await repo.terminalState(jobId);
  if (held) return held;
  const record = job ?? (await repo.findUnscoped(jobId));
  return record && TERMINAL_STATES.includes(record.status)
    ? { status: record.status, updatedAt: record.updatedAt }
    : null;
}

/**
 * Applies a transition. Terminal states are sticky: the first terminal transition of a job is
 * claimed (`claimTerminal`), so exactly one writer ends the job however many race (the run, a
 * cancel, an expiry); the stream's terminal entry, derived from the claim, is written before the
 * record shows the end. A non-terminal change is recorded by the repository, which repairs a
 * change that raced a terminal transition. Every caller passes the job's own workspace, either
 * from the run's input or after `get(scope, jobId)` has checked it (cancel).
 */
async function apply(
  ctx: JobContext,
  workspaceId: string,
  jobId: string,
  patch: JobPatch,
): Promise<{ applied: boolean; previous: Job | null; job: Job | null }> {
  const { repo } = ctx;
  const now = new Date();
  const set: JobChange = { updatedAt: now };
  if (patch.status !== undefined) set.status = patch.status;
  if (patch.progress !== undefined) set.progress = Math.max(0, Math.min(100, Math.round(patch.progress)));
  if (patch.currentStep !== undefined) set.currentStep = patch.currentStep;
  if (patch.failedReason !== undefined) set.failedReason = patch.failedReason;
  if (patch.result !== undefined) set.result = patch.result;
  if (patch.waitingFor !== undefined) set.waitingFor = patch.waitingFor;
  if (patch.status && TERMINAL_STATES.includes(patch.status)) {
    set.finishedAt = now;
    const { won, held } = await repo.claimTerminal(workspaceId, jobId, set);
    if (!held) return { applied: false, previous: null, job: null };
    await emit(ctx, jobId, { type: held.status === 'completed' ? 'complete' : 'error' }, held);
    const job = await repo.settleTerminal(workspaceId, jobId, held, now);
    const applied = job !== null && (won || (held.status === set.status && held.failedReason === set.failedReason));
    if (applied && job) await told(ctx, job);
    return { applied, previous: null, job };
  }
  const { applied, previous } = await repo.recordTransition(workspaceId, jobId, set, now);
  if (applied && previous && set.status === 'waiting') await told(ctx, { ...previous, ...set });
  return { applied, previous, job: null };
}

/** Starts the job's workflow now (startWorkflow; a queued run's when its workspace has a place). */
async function startNow(
  ctx: JobContext,
  job: Job,
  workflowType: string,
  args: unknown[],
  summary?: string,
  opts: { workflowId?: string; failJob?: boolean } = {},
): Promise<void> {
  const { temporal, config, log } = ctx;
  const attrs = [
    { key: WorkspaceIdKey, value: job.workspaceId },
    { key: JobKindKey, value: job.kind },
    ...(job.brainId ? [{ key: BrainIdKey, value: job.brainId }] : []),
    ...(job.neuronId ? [{ key: NeuronIdKey, value: job.neuronId }] : []),
    ...(job.pathwayId ? [{ key: PathwayIdKey, value: job.pathwayId }] : []),
    ...(job.receptorId ? [{ key: ReceptorIdKey, value: job.receptorId }] : []),
    ...(job.traceId ? [{ key: TraceIdKey, value: job.traceId }] : []),
  ];
  try {
    await temporal.workflow.start(workflowType, {
      // The job id, or the id of the workflow that starts the job's run (a receptor's fire).
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: opts.workflowId ?? job._id,
      args,
      typedSearchAttributes: attrs,
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      // Shown on the run in the Temporal UI next to the search attributes.
      staticSummary: summary,
      // Task queue fairness (docs/operations.md, "Fair share"): the server dispatches a backlog
      // round robin between workspaces, not first in first out; children and activities inherit it.
      priority: { fairnessKey: job.workspaceId },
    });
  } catch (e) {
    if ((e as { name?: string }).name === 'WorkflowExecutionAlreadyStartedError') return; // idempotent start
    // A start whose arguments are stored is tried again later (runs.startPending): the job stays.
    if (opts.failJob === false) throw e;
    // The record exists but no run does: it must not stay pending. It ends failed with the reason.
    const reason = `could not start the run: ${(e as Error).message || 'Temporal unavailable'}`;
    await bestEffort(
      log,
      'failing the job of a run that could not start',
      ctx.finalizeJob(job.workspaceId, job._id, {
        status: 'failed',
        failedReason: reason,
        currentStep: NOT_STARTED_STEP,
      }),
    );
    throw new AppError(
      'SERVICE_UNAVAILABLE',
      503,
      'The run could not be started; retry (with the same client_nonce to keep one job)',
      { 'Retry-After': '1' },
    );
  }
}

/** The read model's reads: a job by id, lists, a run's children, the webhook outbox's unannounced ends. */
function createJobReads(ctx: JobContext) {
  const { repo, createdHere } = ctx;
  return {
    /**
     * Ends whose events are not announced yet (their terminal claims carry the outbox mark, set in
     * the claim's own insert): the webhook outbox's followers hold them, fan their events out and
     * mark them announced, so an end is announced even when the process that stored it died next.
     */
    unannouncedEnds: (limit: number) => repo.unannouncedEnds(new Date(), limit),
    holdUnannounced: (claimId: string, seen: Date, until: Date): Promise<boolean> =>
      repo.holdUnannounced(claimId, seen, until),
    markAnnounced: (claimId: string): Promise<void> => repo.markAnnounced(claimId),
    get: (scope: Scope, jobId: string): Promise<Job> => get(ctx, scope, jobId),
    streamKey: (jobId: string) => streamKey(ctx, jobId),

    /** A run's delegated runs (a rolled-back run's engrams include theirs). */
    childIds: (workspaceId: string, jobId: string): Promise<string[]> => repo.childIds(workspaceId, jobId),

    /** 404 unless the job is the caller workspace's (`get` without the document, read only when this process did not create the job). */
    async check(scope: Scope, jobId: string): Promise<void> {
      if (createdHere.get(jobId) !== scope.workspaceId) await get(ctx, scope, jobId);
    },

    async list(scope: Scope, q: JobListQuery) {
      const filter: JobListFilter = {};
      if (q.pathway_id) filter.pathwayId = q.pathway_id;
      if (q.receptor_id) filter.receptorId = q.receptor_id;
      if (q.neuron_id) filter.neuronId = q.neuron_id;
      if (q.parent_job_id) filter.parentJobId = q.parent_job_id;
      if (q.status) filter.status = q.status;
      return repo.page(scope.workspaceId, filter, q);
    },

    /** Pending jobs of a workspace older than `ms` (the job sweep checks whether their run exists). */
    pendingOlderThan: (workspaceId: string, ms: number) => repo.pendingBefore(workspaceId, new Date(Date.now() - ms)),

    /** Unscoped read for the worker (the job id came from a workflow the platform started). */
    repoFind: (jobId: string) => repo.findUnscoped(jobId),
  };
}

/** Run starts: the workspace's share of runs (admission), workflow starts and its run queue's drains. */
function createJobStarts(ctx: JobContext) {
  const { repo, config, starting, fullUntil } = ctx;
  return {
    /**
     * A workspace's share of runs (docs/operations.md, "Fair share"): a run start (invoke, pathway
     * run, receptor fire, share-link run) is admitted while the workspace has fewer than
     * WORKSPACE_MAX_ACTIVE_RUNS runs pending or running, counted from the jobs store (so on every
     * API process alike) plus the starts this process has admitted and not yet stored; past it the
     * start is a 429 with Retry-After before anything is stored. Resolves with the release to call
     * once the start has stored its job (or failed).
     */
    refuseIfFull: (workspaceId: string): void => refuseIfFull(ctx, workspaceId),
    /**
     * Whether this process queued a run start of the workspace within the last QUEUED_LATELY_MS:
     * work done ahead of admission (an invoke's preparation) is then likely wasted, and skipped.
     */
    queuingLately: (workspaceId: string): boolean =>
      Date.now() - (ctx.queuedAt.get(workspaceId) ?? -Infinity) < QUEUED_LATELY_MS,

    async admitRun(workspaceId: string): Promise<Admission> {
      refuseIfFull(ctx, workspaceId);
      starting.set(workspaceId, (starting.get(workspaceId) ?? 0) + 1);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const n = (starting.get(workspaceId) ?? 1) - 1;
        if (n > 0) starting.set(workspaceId, n);
        else starting.delete(workspaceId);
      };
      try {
        const since = new Date(Date.now() - RUN_SHARE_WINDOW_MS);
        const cap = config.WORKSPACE_MAX_ACTIVE_RUNS;
        const active = await repo.countActiveRuns(workspaceId, since, cap);
        // The starts in flight here include this one (a start stored meanwhile may count twice: never too many).
        const withThis = active + (starting.get(workspaceId) ?? 1);
        if (withThis <= Math.min(config.WORKSPACE_RUN_SHARE, cap) || withThis <= (await runLimit(ctx, workspaceId))) {
          fullUntil.delete(workspaceId);
          return { queued: false, release };
        }
        // Past its place: the run waits in the workspace's queue, unless that is full too.
        release();
        const queued = await repo.countQueuedRuns(workspaceId, config.WORKSPACE_MAX_QUEUED_RUNS);
        if (queued >= config.WORKSPACE_MAX_QUEUED_RUNS) {
          fullUntil.set(workspaceId, Date.now() + RUN_SHARE_FULL_MS);
          throw refuse(ctx);
        }
        metrics.requestsShed.inc({ reason: 'workspace-runs-queued' });
        if (!ctx.queuedAt.has(workspaceId) && ctx.queuedAt.size >= 10_000) ctx.queuedAt.clear();
        ctx.queuedAt.set(workspaceId, Date.now());
        return { queued: true, release: () => undefined };
      } catch (e) {
        release();
        throw e;
      }
    },

    /**
     * Starts the job's workflow by name with the search attributes operators filter on. A queued
     * job's start is kept in its workspace's queue instead, and made when the workspace has a place.
     */
    async startWorkflow(
      job: Job,
      workflowType: string,
      args: unknown[],
      summary?: string,
      opts: { workflowId?: string; failJob?: boolean } = {},
    ): Promise<void> {
      if (!job.queued) return startNow(ctx, job, workflowType, args, summary, opts);
      const start: QueuedStart = { workflowType, args, ...(summary ? { summary } : {}) };
      if (opts.workflowId) start.workflowId = opts.workflowId;
      await repo.enqueue(job.workspaceId, job._id, start, job.waitsFor ?? null);
      // The run it waits for on its trace may have given the trace up while this one was stored.
      if (job.waitsFor) {
        const now = await blockerFor(ctx, job.waitsFor);
        if (now !== job.waitsFor) await repo.reblock(job.workspaceId, job.waitsFor, now);
      }
      // A run of the workspace may have ended while this one was stored.
      drainSoon(ctx, job.workspaceId);
    },

    /** Starts the workspace's queued runs while it has a place (the start sweep; a run's end does it by itself). */
    drain: (workspaceId: string): Promise<number> => drain(ctx, workspaceId),
    /** The start sweep: drains every workspace with queued runs (at most 100 workspaces a sweep). */
    async drainQueues(): Promise<number> {
      let started = 0;
      for (const ws of await repo.queuedWorkspaces(100)) {
        await unblockStale(ctx, ws);
        started += await drain(ctx, ws);
      }
      return started;
    },
  };
}

/** Double-texting's trace claims: the trace head, write leases, and a start that gives its claim up. */
function createJobTraces(ctx: JobContext) {
  const { repo } = ctx;
  return {
    /**
     * Claims the trace for a new run (double-texting, docs/neurons.md): the run becomes the trace's
     * newest (a compare-and-set on the trace head, so concurrent starts on any API process form one
     * chain) and answers the run it must wait for (null: none holds the trace). `reject` refuses
     * with 409 TRACE_BUSY naming the run that holds it, and claims nothing.
     */
    async claimTrace(
      scope: Scope,
      traceId: string,
      jobId: string,
      strategy: MultitaskStrategy,
      opts: { fresh?: boolean } = {},
    ): Promise<{ waitsFor: string | null }> {
      // A trace the platform has just named has no head: the claim is its insert, with nothing to read first.
      if (opts.fresh && (await repo.swapTraceHead(scope.workspaceId, traceId, null, jobId))) return { waitsFor: null };
      for (let i = 0; i < 100; i++) {
        const found = await repo.traceHead(scope.workspaceId, traceId);
        const head = found?.jobId ?? null;
        if (head === jobId) return { waitsFor: null };
        // A head whose job is missing is a start still being stored, for a while; after that, a start
        // that failed or a job that retention removed: it holds nothing.
        const fresh = found !== null && found.updatedAt.getTime() > Date.now() - TRACE_RELEASE_GRACE_MS;
        const holder = await blockerFor(ctx, head, fresh);
        if (holder && strategy === 'reject') throw traceBusy(traceId, holder);
        if (await repo.swapTraceHead(scope.workspaceId, traceId, head, jobId)) return { waitsFor: holder };
      }
      throw new AppError('SERVICE_UNAVAILABLE', 503, 'The trace is busy with starts; retry', { 'Retry-After': '1' });
    },

    /**
     * A run's lease on writing into its trace until TRACE_WRITE_LEASE_MS from now, taken on the
     * run's job and its top job (`jobIds`); null when one of them has ended (a cancelled run, one
     * whose trace went to the run behind it, writes nothing more). See cancel: the run behind it
     * waits out such a lease before it starts.
     */
    async leaseTraceWrite(workspaceId: string, jobIds: string[]): Promise<Date | null> {
      const until = new Date(Date.now() + TRACE_WRITE_LEASE_MS);
      return (await repo.leaseTraceWrite(workspaceId, [...new Set(jobIds)], until)) ? until : null;
    },

    /** A start that claimed its trace and stored no job: the run behind it on the trace does not wait for it. */
    giveUpTrace: (workspaceId: string, jobId: string, waitsFor: string | null): Promise<void> =>
      passOn(ctx, workspaceId, jobId, waitsFor),
  };
}

/** Writes to the read model: a job's insert, its non-terminal transitions and a never-started job's reset. */
function createJobWrites(ctx: JobContext) {
  const { repo, streams } = ctx;
  return {
    /** Inserts the pending (or `running`) job; an existing id returns the existing job (idempotent starts). */
    async create(scope: Scope, j: NewJob): Promise<{ job: Job; created: boolean }> {
      const now = new Date();
      const doc: Job = {
        _id: j.id,
        workspaceId: scope.workspaceId,
        brainId: j.brainId ?? scope.brainId ?? null,
        kind: j.kind,
        status: j.running ? 'running' : 'pending',
        progress: j.running?.progress ?? 0,
        currentStep:
          j.running?.currentStep ?? (j.waitsFor ? waitingStep(j.waitsFor) : j.queued ? QUEUED_STEP : 'queued'),
        failedReason: null,
        waitingFor: null,
        neuronId: j.neuronId ?? null,
        pathwayId: j.pathwayId ?? null,
        receptorId: j.receptorId ?? null,
        traceId: j.traceId ?? null,
        parentJobId: j.parentJobId ?? null,
        clientNonce: j.clientNonce ?? null,
        createdBy: scope.userId ?? scope.apiKeyId,
        ...(j.pathwayVersion !== undefined ? { pathwayVersion: j.pathwayVersion } : {}),
        ...(j.input !== undefined ? { input: j.input } : {}),
        ...(scope.shareTokenId ? { shareTokenId: scope.shareTokenId } : {}),
        ...(j.queued ? { queued: true } : {}),
        ...(j.replay ? { replay: j.replay } : {}),
        ...(j.waitsFor ? { waitsFor: j.waitsFor } : {}),
        ...(j.onTraceChain ? { onTraceChain: true } : {}),
        createdAt: now,
        ...(j.running ? { processedAt: now } : {}),
        finishedAt: null,
        updatedAt: now,
      };
      if (!(await repo.insert(doc))) return { job: await get(ctx, scope, j.id), created: false };
      remember(ctx, doc._id, doc.workspaceId);
      metrics.runsStarted.inc({ kind: doc.kind });
      return { job: doc, created: true };
    },

    /** A job whose workflow never started (start failed) is reset so that a client_nonce retry starts a working run. */
    async restartable(job: Job): Promise<boolean> {
      if (job.status !== 'failed' || job.currentStep !== NOT_STARTED_STEP) return false;
      await repo.forgetNotStarted(job.workspaceId, job._id, NOT_STARTED_STEP);
      await streams.drop(streamKey(ctx, job._id));
      return true;
    },

    /**
     * Applies a transition (see `apply`). Returns whether this call's patch applied (a retried
     * writer whose own terminal state was claimed counts as applied).
     */
    transition: async (workspaceId: string, jobId: string, patch: JobPatch): Promise<boolean> =>
      (await apply(ctx, workspaceId, jobId, patch)).applied,

    /**
     * A transition that also says what the job was before it (`previous`: null when the job does
     * not exist, or for a terminal transition), for callers that act once per change.
     */
    transitionFrom: async (workspaceId: string, jobId: string, patch: JobPatch) => {
      const r = await apply(ctx, workspaceId, jobId, patch);
      return { applied: r.applied, previous: r.previous };
    },
  };
}

/**
 * A job's end and what reads it: the terminal transition (finalize), cancel and supersede, the
 * live status and the check that a long-pending job's workflow was started. Its methods call each
 * other through `this` (the whole service, as before the split).
 */
function createJobEnds(ctx: JobContext) {
  const { repo, temporal, log, bus } = ctx;
  return {
    /**
     * Interrupt and rollback: cancels the trace's runs that came before `jobId` and have not ended,
     * oldest first, each once its workflow stopped (`stopped` acts on it before the next run on the
     * trace may start: the interrupted reply kept, or the rolled-back engrams removed).
     */
    async supersede(
      scope: Scope,
      traceId: string,
      jobId: string,
      reason: string,
      stopped: (job: Job) => Promise<unknown>,
    ): Promise<string[]> {
      const cancelled: string[] = [];
      for (const j of await repo.openOnTrace(scope.workspaceId, traceId)) {
        if (j._id === jobId || j.kind !== 'neuron') continue;
        const ok = await this.cancel(scope, j._id, reason, { stopped }).then(
          () => true,
          () => false, // it ended meanwhile: nothing to cancel
        );
        if (ok) cancelled.push(j._id);
      }
      return cancelled;
    },

    /**
     * Ends a job: the terminal transition, then the stream's one terminal entry, derived from
     * whatever terminal state was stored (this writer's or an earlier one's), so a retried or
     * racing writer never makes stream and record disagree. Returns whether this call's patch applied.
     */
    async finalize(
      workspaceId: string,
      jobId: string,
      patch: JobPatch & { status: 'completed' | 'failed' },
    ): Promise<boolean> {
      const { applied, job } = await apply(ctx, workspaceId, jobId, patch);
      if (applied && job) {
        // Metrics from the document the transition returned (no read of its own).
        const outcome =
          patch.status === 'completed'
            ? 'completed'
            : patch.failedReason?.startsWith('cancelled')
              ? 'cancelled'
              : 'failed';
        metrics.runsFinished.inc({ kind: job.kind, outcome });
        metrics.runDuration.observe({ kind: job.kind, outcome }, (Date.now() - job.createdAt.getTime()) / 1000);
      }
      return applied;
    },

    /** The read model merged with the workflow's live `status` query while it runs. */
    async status(scope: Scope, jobId: string): Promise<Job & { live?: LiveStatus }> {
      const job = await get(ctx, scope, jobId);
      if (job.status === 'pending' && Date.now() - job.createdAt.getTime() > NEVER_STARTED_AFTER_MS)
        return this.checkStarted(job);
      if (TERMINAL_STATES.includes(job.status) || job.status === 'pending') return job;
      // A job's end is claimed, and its stream's terminal entry written from the claim, a moment
      // before the record shows it: a client that has just read `complete` must see the end here
      // too. The claim is read by key beside the live query (no added wait).
      // The claim is read only once the stream's terminal entry is written (one Redis read while
      // the job runs, where a store read of the claim was made on every poll).
      const [held, live] = await Promise.all([ending(ctx, jobId, job), liveStatus(ctx, jobId)]);
      if (held) return { ...job, ...held, waitingFor: null };
      if (!live || TERMINAL_STATES.includes(live.status)) return job;
      // The live answer is newer than the document read before it: take its waitingFor as well.
      const waitingFor = live.waitingFor ? live.waitingFor : live.status === 'running' ? null : job.waitingFor;
      return { ...job, status: live.status, progress: live.progress, currentStep: live.currentStep, waitingFor, live };
    },

    /** Whether Temporal has a workflow of this id (null: Temporal did not answer). */
    workflowExists: (id: string): Promise<boolean | null> =>
      temporal.workflow
        .getHandle(id)
        .describe()
        .then(
          () => true,
          (e: unknown) => ((e as { name?: string }).name === 'WorkflowNotFoundError' ? false : null),
        ),

    /** A long-pending job: if Temporal has no run for it (the API died between record and start), it ends failed. */
    async checkStarted(job: Job): Promise<Job> {
      // A queued run waits for its workspace's place: its start is kept in the queue, not lost.
      if (job.queued) return job;
      const exists = (id: string) => this.workflowExists(id);
      // A receptor's job is started by its fire workflow (fire-<job id>), which may still be queued.
      const ids = job.receptorId ? [job._id, `fire-${job._id}`] : [job._id];
      for (const id of ids) if ((await exists(id)) !== false) return job;
      // A run whose start is stored (an invoke answered 202 before its workflow started) is started now, not failed.
      if (await bus.request('job.restart', job)) return (await repo.get(job.workspaceId, job._id)) ?? job;
      await this.finalize(job.workspaceId, job._id, {
        status: 'failed',
        failedReason: 'the run was never started',
        currentStep: NOT_STARTED_STEP,
      });
      return (await repo.get(job.workspaceId, job._id)) ?? job;
    },

    /**
     * Cancels a running job: the read model turns failed first (sticky), then the workflow and
     * its child runs are cancelled, and the stream ends with a terminal `error` entry.
     */
    async cancel(
      scope: Scope,
      jobId: string,
      reason = 'Cancelled by user',
      opts: { stopped?: (job: Job) => Promise<unknown> } = {},
    ): Promise<Job> {
      const job = await get(ctx, scope, jobId);
      if (TERMINAL_STATES.includes(job.status)) throw validationError(`Job is already ${job.status}`);
      const applied = await this.finalize(scope.workspaceId, jobId, {
        status: 'failed',
        failedReason: `cancelled: ${reason}`,
        currentStep: 'cancelled',
      });
      if (!applied) throw validationError('Job already finished');
      // A run still waiting in the queue never starts: it leaves it (the runs behind it on its trace are passed on below).
      if (job.queued) await repo.dequeue(scope.workspaceId, jobId);
      // Then Temporal: the run (and its children) end as Canceled in the Temporal UI.
      const handle = temporal.workflow.getHandle(jobId);
      // Logged, not thrown: the job already reads failed, but a run left going would go on spending.
      await bestEffort(log, 'signalling the cancel to the run', handle.signal(cancelSignal, { reason }));
      await bestEffort(log, 'cancelling the run workflow', handle.cancel());
      // The run cleans up after itself (closes its open interventions, ends its children): wait a
      // little for it, so that what cancel answers is already true; a run whose worker is down
      // finishes the cleanup when it comes back.
      // Silent on purpose: the result of a cancelled run is a rejection (the expected end), or the wait runs out.
      await temporal.connection.withDeadline(Date.now() + CANCEL_WAIT_MS, () => handle.result()).catch(() => undefined);
      for (const child of await repo.openChildren(scope.workspaceId, jobId)) {
        await this.finalize(scope.workspaceId, child._id, {
          status: 'failed',
          failedReason: `cancelled: parent job ${jobId} was cancelled`,
          currentStep: 'cancelled',
        });
      }
      // A write into the trace the run began before its end (a lease it took while running) may
      // still land, even when its worker is down: the next run on the trace waits it out. No write
      // of the run starts after its end (leases are refused from then on), so after this wait the
      // run can no longer write into its trace, whether its workflow closed or not.
      if (claimsTrace(job)) await writesLanded(ctx, scope, jobId);
      // The run has stopped writing: what the caller does with its trace (an interrupt's partial
      // reply, a rollback) comes before the next run on the trace starts.
      if (opts.stopped) await bestEffort(log, 'acting on the cancelled run', opts.stopped(job));
      if (claimsTrace(job)) await bestEffort(log, 'giving the trace up to the next run', releaseTrace(ctx, job));
      return get(ctx, scope, jobId);
    },
  };
}

/** The job stream: fenced appends, the end it shows, model-turn attempts and the reply shown so far. */
function createJobStream(ctx: JobContext) {
  const { streams } = ctx;
  return {
    /** The reply a job stream shows so far (each turn's tokens of its latest attempt, in turn order). */
    async shownReply(jobId: string): Promise<string> {
      const shown = new ShownReply();
      let after: string | undefined;
      for (let i = 0; i < 1_000; i++) {
        const batch = await streams.range(streamKey(ctx, jobId), after);
        if (!batch.length) break;
        for (const e of batch) shown.apply(e.data);
        after = batch[batch.length - 1]!.id;
      }
      return shown.text();
    },

    /**
     * Appends to a job stream through its fences (docs/streams.md): nothing after the terminal
     * entry, no entry of a superseded model-turn attempt. A terminal entry is written from the
     * stored terminal state when there is one, so it always agrees with the record. Returns the
     * entry id, or null when a fence refused it.
     */
    emit: (jobId: string, event: Record<string, unknown>): Promise<string | null> => emit(ctx, jobId, event),
    /** How the job ended (completed or failed) once its end is written, else null; one Redis read while it runs (see `ending`). */
    endedAs: async (jobId: string): Promise<'completed' | 'failed' | null> => {
      const held = await ending(ctx, jobId);
      return held?.status === 'completed' || held?.status === 'failed' ? held.status : null;
    },
    /** The next attempt number of a model turn of this job, claimed in its stream's fences (src/kernel/streams.ts). */
    claimTurnAttempt: (jobId: string, turn: number): Promise<number> =>
      streams.claimAttempt(streamKey(ctx, jobId), turn),
  };
}

/** Jobs: the read model, workflow starts (job id = workflow id), live status, cancel and the job stream. */
export function createJobService(deps: JobDeps) {
  const ctx: JobContext = {
    ...deps,
    statusListeners: [],
    starting: new Map(),
    fullUntil: new Map(),
    queuedAt: new Map(),
    sharedSeen: new Map(),
    draining: new Map(),
    drainAgain: new Set(),
    liveCache: new Map(),
    createdHere: new Map(),
    finalizeJob: async () => false,
  };
  // A run that ends or waits for a person gives its place to the next queued run of its workspace.
  ctx.statusListeners.push((job) => {
    if (job.parentJobId === null && RUN_KINDS.includes(job.kind)) drainSoon(ctx, job.workspaceId);
  });
  // A run that ends by itself gives its trace up with its end; a cancelled one once its workflow stopped (cancel).
  ctx.statusListeners.push((job) => {
    if (!claimsTrace(job)) return;
    if (!TERMINAL_STATES.includes(job.status) || job.failedReason?.startsWith('cancelled')) return;
    void bestEffort(ctx.log, 'giving the trace up to the next run', releaseTrace(ctx, job));
  });
  const service = {
    ...createJobReads(ctx), // unannouncedEnds, holdUnannounced, markAnnounced, get, streamKey, childIds, check, list, …
    ...createJobStarts(ctx), // refuseIfFull, admitRun, startWorkflow, drain, drainQueues
    ...createJobTraces(ctx), // claimTrace, leaseTraceWrite, giveUpTrace
    ...createJobWrites(ctx), // create, restartable, transition, transitionFrom
    ...createJobEnds(ctx), // supersede, finalize, status, workflowExists, checkStarted, cancel
    ...createJobStream(ctx), // shownReply, emit, endedAs, claimTurnAttempt
  };
  ctx.finalizeJob = (workspaceId, jobId, patch) => service.finalize(workspaceId, jobId, patch);
  return service;
}
export type JobService = ReturnType<typeof createJobService>;
