import { randomUUID } from 'node:crypto';
import { bestEffort } from '../kernel/best-effort.js';
import type { BudgetDoc } from '../usage/index.js';
import { type JobRecord as Job, type InvokeBody, NOT_STARTED_STEP } from '../jobs/index.js';
import type { StoredStart } from './model.js';
import { validationError } from '../kernel/errors.js';
import { uuidFromName } from '../kernel/ids.js';
import { resolveFallbacks } from '../llm/registry.js';
import { idempotentId, markCommitted, newId, runDetached } from '../kernel/request-context.js';
import type { NeuronSnapshot } from '../neurons/index.js';
import { callerOf, type Scope } from '../kernel/scope.js';
import type { NeuronRunInput, PreparedRunData } from '../temporal/definitions.js';
import {
  humanTurn,
  DEFAULT_MAX_TURNS,
  attributionOf,
  summaryOf,
  titleFrom,
  toRunScope,
  type RunContext,
  type RunDeps,
  type RunSteps,
} from './shared.js';
import { startSoon } from './starts.js';
import { supersedeSoon } from './supersede.js';

/** The engine's context for an invoke, with the steps of other modules it calls. */
type InvokeContext = RunContext & { calls: Pick<RunSteps, 'load' | 'runTurn'> };

type Neuron = Awaited<ReturnType<RunDeps['neurons']['resolve']>>;

/** One invoke being stored: who asked, for which neuron, and the run it starts. */
interface Invoke {
  scope: Scope;
  neuron: Neuron;
  head: NeuronSnapshot;
  body: InvokeBody;
  input: NeuronRunInput;
  userEngramId: string;
  message: string;
  /** The platform names the trace: it is new (two inserts and no history to read: traces.start). */
  fresh: boolean;
  nonce: string | undefined;
  /** The run's preparation, started before admission answered (a new trace's run), or undefined. */
  loading?: ReturnType<InvokeContext['calls']['load']>;
}

/** What an invoke answers (202): the job, the human turn's engram (null for a repeated client_nonce) and the trace. */
type Invoked = { job: Job; userEngramId: string | null; traceId: string };

export const createInvokeSteps = (ctx: InvokeContext) => ({
  /**
   * POST /v1/neurons/:id/invoke: stores the human turn and the run context, records the job, starts
   * neuronRun. `resolved`: the neuron `idOrSlug` names, read by this request already (the
   * OpenAI-compatible route resolves its model first), so the run's path does not read it twice.
   */
  invoke: (scope: Scope, idOrSlug: string, body: InvokeBody, resolved?: Neuron): Promise<Invoked> =>
    invoke(ctx, scope, idOrSlug, body, resolved),
});

async function invoke(
  ctx: InvokeContext,
  scope: Scope,
  idOrSlug: string,
  body: InvokeBody,
  resolved?: Neuron,
): Promise<Invoked> {
  const { neurons, models, jobs, config } = ctx.d;
  // A workspace found at its share of runs a moment ago is refused before any read (a flood of retries costs nothing).
  jobs.refuseIfFull(scope.workspaceId);
  // The workspace's share of runs (429 past it, nothing stored; once stored, the job counts itself),
  // counted while the neuron is read: the two reads are one round trip on the path to the 202.
  const admitting = jobs.admitRun(scope.workspaceId);
  const letGo = () =>
    admitting.then(
      (a) => a.release(),
      () => undefined,
    );
  let run: Invoke;
  try {
    const neuron = resolved ?? (await neurons.resolve(scope, idOrSlug));
    if (!neuron.isActive) throw validationError('Neuron is inactive');
    // `version` pins an earlier version of the neuron for this run (404 when it does not exist).
    const head =
      body.version === undefined || body.version === neuron.version
        ? neurons.headSnapshot(neuron)
        : await neurons.snapshot(scope, neuron._id, body.version);
    models.resolve(head.neuron_config.model ?? config.DEFAULT_MODEL);
    resolveFallbacks(models, head.neuron_config.fallback_models);
    run = invokeOf(scope, neuron, head, body);
    if (run.nonce) {
      const existing = await jobs.get(scope, run.input.jobId).catch(() => null);
      // A job whose run never started is started afresh; any other is the same job again.
      if (existing && !(await jobs.restartable(existing))) {
        await letGo();
        return { job: existing, userEngramId: null, traceId: run.input.traceId };
      }
    }
    // A new trace's run reads only its neuron's tools to be prepared, and nothing it reads can change
    // with the trace's claim: it is read while the share is counted, not after (one store round trip
    // off the 202), unless the workspace's starts are being queued (a queued run is prepared when it
    // starts, and the read would be wasted). A run on an existing trace reads its history after the claim.
    if (run.fresh && !jobs.queuingLately(scope.workspaceId)) {
      run.loading = ctx.calls.load(run.input, run.message, run.body.data, { freshTrace: true, head: run.head });
      // Silent on purpose: a read whose result the run awaits (and fails with); unused, its failure matters to no one.
      run.loading.catch(() => undefined);
    }
  } catch (e) {
    await letGo();
    throw e;
  }
  const { jobId, traceId } = run.input;
  const admitted = await admitting;
  let claimed: { waitsFor: string | null } | null = null;
  try {
    const strategy = body.multitask_strategy ?? 'enqueue';
    // Double-texting (docs/neurons.md): the run claims its trace, and waits behind the trace's run
    // that has not ended (`reject` refuses instead). A trace the platform just named has no run
    // yet: its claim (one insert) is stored beside the run, not before it.
    if (run.fresh) {
      const [invoked] = await Promise.all([
        store(ctx, run, admitted.queued, null, admitted.release),
        jobs.claimTrace(scope, traceId, jobId, strategy, { fresh: true }),
      ]);
      return invoked;
    }
    claimed = await jobs.claimTrace(scope, traceId, jobId, strategy);
    const { waitsFor } = claimed;
    const invoked = await store(ctx, run, admitted.queued || waitsFor !== null, waitsFor, admitted.release);
    supersedeSoon(ctx.d, {
      scope,
      traceId,
      jobId,
      strategy,
      waitsFor,
      traceType: run.input.traceType,
      neuronId: run.neuron._id,
    });
    return invoked;
  } catch (e) {
    // A run that claimed its trace and is not stored: the run behind it does not wait for it.
    if (claimed)
      await bestEffort(
        ctx.d.log,
        'giving up the trace of a run that was not stored',
        ctx.d.jobs.giveUpTrace(scope.workspaceId, jobId, claimed.waitsFor),
      );
    throw e;
  } finally {
    admitted.release();
  }
}

/** The run an invoke starts: its ids (an Idempotency-Key or client_nonce makes a retry the same run) and input. */
function invokeOf(scope: Scope, neuron: Neuron, head: NeuronSnapshot, body: InvokeBody): Invoke {
  const opts = body.neuron_task_options;
  const traceType =
    opts?.trace_type ?? opts?.traceType ?? (head.neuron_config.neuron_type === 'completion' ? 'system' : 'thread');
  // An Idempotency-Key stands in for client_nonce (and names the trace it starts), so a retry is the same run.
  const traceId = body.trace_id ?? newId('trace');
  const nonce = body.client_nonce ?? idempotentId('invoke');
  // The caller is part of the key: another credential's same client_nonce on the trace is a run of its own.
  const jobId = nonce
    ? uuidFromName(`${scope.workspaceId}:${callerOf(scope) ?? ''}:${traceId}:${nonce}`)
    : randomUUID();
  const userEngramId = uuidFromName(`${jobId}:human`);
  const input: NeuronRunInput = {
    jobId,
    scope: toRunScope(scope),
    neuronId: neuron._id,
    neuronVersion: head.version,
    traceId,
    traceType,
    userEngramId,
    depth: 0,
    maxTurns: DEFAULT_MAX_TURNS,
    pathwayContext: null,
  };
  const message = body.message ?? JSON.stringify(body.data ?? {});
  return { scope, neuron, head, body, input, userEngramId, message, fresh: body.trace_id === undefined, nonce };
}

/**
 * Stores the run: job, human turn, run context and its workflow start, concurrently (they are on
 * the path to the first token), then starts the workflow in the background.
 */
async function store(
  ctx: InvokeContext,
  run: Invoke,
  queued: boolean,
  waitsFor: string | null,
  onCreated?: () => void,
): Promise<Invoked> {
  // A run waiting in its workspace's queue has no first turn in the API and no preparation yet.
  if (queued) return storeQueued(ctx, run, waitsFor, onCreated);
  const { config, jobs, budgets, firstTurns } = ctx.d;
  const { scope, neuron, input } = run;
  const { jobId, traceId } = input;
  // The API claims the first model turn while the run is prepared, and starts it once the run
  // is stored (src/runs/first-turns.ts): the provider call no longer waits for a workflow
  // task and an activity dispatch. The claim is recorded in the run context the activity reads.
  const inApi = config.FIRST_TURN_IN_API;
  const claimed = inApi ? firstTurns.claim(jobId).catch(() => false) : Promise.resolve(false);
  // Read while the run loads: the first turn's budget check needs them before its call.
  const workspaceBudgets = inApi ? budgets.ofWorkspace(scope.workspaceId) : undefined;
  // Silent on purpose: a read the turn awaits (and fails with); unused, its failure matters to no one.
  workspaceBudgets?.catch(() => undefined);
  const creating = jobs.create(scope, {
    id: jobId,
    kind: 'neuron',
    brainId: neuron.brainId,
    neuronId: neuron._id,
    traceId,
    clientNonce: run.nonce ?? null,
  });
  // Once its job exists the run is the request's write: it is prepared to the end and answered
  // 202, not abandoned half-stored (src/kernel/request-context.ts).
  void creating.then(
    (c) => {
      if (c.created) markCommitted();
      // From here the job counts itself in the workspace's share of runs (JobService.admitRun).
      onCreated?.();
    },
    () => undefined,
  );
  const preparing = prepareRun(ctx, run, claimed);
  const turnStarted = firstTurnWhenReady(ctx, run, creating, preparing, workspaceBudgets);
  const settled = await Promise.allSettled([
    appendHuman(ctx.d, run),
    creating,
    preparing.then(async (p) => {
      await ctx.d.runLog.putContext(scope.workspaceId, jobId, p.prepared, p.start);
      return p;
    }),
  ]);
  const [, created, loaded] = settled;
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) return failStore(ctx, run, claimed, created, failure);
  const { job, created: isNew } = (created as PromiseFulfilledResult<{ job: Job; created: boolean }>).value;
  const { start } = (loaded as PromiseFulfilledResult<{ prepared: PreparedRunData; start: StoredStart }>).value;
  if ((await claimed) && !(await turnStarted)) await firstTurns.release(jobId);
  // The run is stored (job, human turn, context and its start): it is answered 202 now and its
  // workflow starts right after; if this process dies first, a sweep starts it (startPending).
  if (isNew) startSoon(ctx, job, start);
  return { job, userEngramId: run.userEngramId, traceId };
}

/**
 * Stores a run that waits in its workspace's queue: its job and its human turn, nothing more. It is
 * prepared when it leaves the queue (its workflow's prepare step reads the neuron, its tools and the
 * trace as they are then), so accepting a flood past the share costs two writes a run, not a run's
 * preparation.
 */
async function storeQueued(
  ctx: InvokeContext,
  run: Invoke,
  waitsFor: string | null,
  onCreated?: () => void,
): Promise<Invoked> {
  const { jobs } = ctx.d;
  const { scope, neuron, input } = run;
  const { jobId, traceId } = input;
  const creating = jobs.create(scope, {
    id: jobId,
    kind: 'neuron',
    brainId: neuron.brainId,
    neuronId: neuron._id,
    traceId,
    clientNonce: run.nonce ?? null,
    queued: true,
    waitsFor,
  });
  void creating.then(
    (c) => {
      if (c.created) markCommitted();
      onCreated?.();
    },
    () => undefined,
  );
  // A run waiting behind another on its trace stores its human turn when it starts (after that run's reply).
  const settled = await Promise.allSettled([waitsFor ? Promise.resolve(null) : appendHuman(ctx.d, run), creating]);
  const [, created] = settled;
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) return failStore(ctx, run, Promise.resolve(false), created, failure);
  const { job, created: isNew } = (created as PromiseFulfilledResult<{ job: Job; created: boolean }>).value;
  if (isNew) {
    const args: NeuronRunInput = {
      ...input,
      message: run.message,
      ...(run.body.data ? { data: run.body.data } : {}),
      ...(waitsFor ? { humanTurnOnStart: { brainId: neuron.brainId ?? null } } : {}),
    };
    await jobs.startWorkflow(job, 'neuronRun', [args], `neuron ${neuron.name} · trace ${traceId}`);
  }
  return { job, userEngramId: run.userEngramId, traceId };
}

/** The human turn's engram (load() leaves it out of the history it reads and appends the message itself). */
function appendHuman(d: RunDeps, run: Invoke) {
  const { scope, neuron, input, body } = run;
  const human = humanTurn(scope, input, {
    id: run.userEngramId,
    message: run.message,
    data: body.data,
    brainId: neuron.brainId,
  });
  return run.fresh ? d.traces.start(scope, input.traceId, human) : d.traces.append(scope, input.traceId, human);
}

/** Loads the run context; the workflow start is stored with it, so the 202 does not wait for the start (startSoon). */
async function prepareRun(ctx: InvokeContext, run: Invoke, claimed: Promise<boolean>) {
  const { input, neuron } = run;
  const [loaded, inApi] = await Promise.all([
    run.loading ?? ctx.calls.load(input, run.message, run.body.data, { freshTrace: run.fresh, head: run.head }),
    claimed,
  ]);
  const prepared: PreparedRunData = {
    ...loaded,
    title: titleFrom(run.message),
    attribution: attributionOf(input, neuron.brainId),
    ...(inApi ? { firstTurn: 'api' as const } : {}),
  };
  const start: StoredStart = {
    workflowType: 'neuronRun',
    args: [{ ...input, context: summaryOf(prepared) }],
    summary: `neuron ${neuron.name} · trace ${input.traceId}`,
  };
  return { prepared, start };
}

/**
 * The first turn starts in the API as soon as its job exists and the run is loaded, while the
 * human turn and the run context are still being stored (a failure of those releases it).
 */
async function firstTurnWhenReady(
  ctx: InvokeContext,
  run: Invoke,
  creating: Promise<{ created: boolean }>,
  preparing: Promise<{ prepared: PreparedRunData }>,
  workspaceBudgets: Promise<BudgetDoc[]> | undefined,
): Promise<boolean> {
  const { jobId, traceId, neuronId } = run.input;
  let ready: [{ created: boolean }, { prepared: PreparedRunData }];
  try {
    ready = await Promise.all([creating, preparing]);
  } catch {
    return false;
  }
  const [c, { prepared }] = ready;
  // A job that existed already (a client_nonce repeat) is not this claim's to run.
  if (!c.created || prepared.firstTurn !== 'api') return false;
  ctx.d.firstTurns.run(jobId, (signal) =>
    ctx.calls.runTurn(
      {
        jobId,
        workspaceId: run.scope.workspaceId,
        turn: 0,
        accepted: [],
        attempt: 1,
        start: { scope: run.input.scope, traceId, neuronId },
      },
      signal,
      { inApi: prepared, budgets: workspaceBudgets },
    ),
  );
  return true;
}

/** A run that could not be stored: the claimed first turn is released, a job already recorded ends failed. */
async function failStore(
  ctx: InvokeContext,
  run: Invoke,
  claimed: Promise<boolean>,
  created: PromiseSettledResult<{ created: boolean }>,
  failure: PromiseRejectedResult,
): Promise<never> {
  const { jobId } = run.input;
  if (await claimed) await ctx.d.firstTurns.release(jobId);
  // The job record may exist already: it must not stay pending. It ends failed with the reason.
  if (created.status === 'fulfilled' && created.value.created) {
    const reason = `could not prepare the run: ${(failure.reason as Error).message ?? 'unknown error'}`;
    // Outside the request: this cleanup must run even when the request was abandoned.
    await bestEffort(
      ctx.d.log,
      'failing the job of a run that could not be prepared',
      runDetached(() =>
        ctx.d.jobs.finalize(run.scope.workspaceId, jobId, {
          status: 'failed',
          failedReason: reason,
          currentStep: NOT_STARTED_STEP,
        }),
      ),
    );
  }
  throw failure.reason;
}
