import { randomUUID } from 'node:crypto';
import type { JobRecord as Job, MultitaskStrategy, JobService } from '../jobs/index.js';
import type { Firing, Receptor } from './model.js';
import type { ReceptorStore } from './store.js';
import { validationError } from '../kernel/errors.js';
import { triggerPayload, type FireBody } from './schemas.js';
import { systemScope, type Scope } from '../kernel/scope.js';
import type { FirePlan, ReceptorFireInput, SystemJobInput } from '../temporal/definitions.js';
import type { NeuronService } from '../neurons/index.js';
import type { PathwayRunService, PathwayService } from '../pathways/index.js';
import type { ReceptorService } from './service.js';
import { DEFAULT_MAX_TURNS, fromRunScope, toRunScope, supersedeSoon } from '../runs/index.js';
import { uuidFromName } from '../kernel/ids.js';
import { isSchedulable, patternsFor } from './stimuli.js';
import type { TraceService } from '../traces/index.js';
import type { UsageService } from '../usage/index.js';
import type { ResourceEvents } from '../platform/index.js';
import type { Logger } from '../kernel/logger.js';
import type { Bus } from '../kernel/events.js';
import { createSystemJobSteps, triggerOf, type Trigger } from './system-jobs.js';

/** The workflow id of the fire that the API (or a stimulus, or a channel message) starts for a job. */
const fireWorkflowId = (jobId: string) => `fire-${jobId}`;

/** One fire to launch: where it came from, who fired, what it carries. */
interface Launch {
  source: Firing['source'];
  scope: Scope;
  trigger: Trigger;
  /** Deterministic job id (stimulus events and channel messages: the same event fires once). */
  jobId?: string;
  eventId?: string | null;
  stimulusKey?: string | null;
  /** The run waits in its workspace's queue (past its share of runs, JobService.admitRun). */
  queued?: boolean;
  /** What a fire into a trace whose run has not ended does (docs/neurons.md, "Double-texting"; default enqueue). */
  multitask?: MultitaskStrategy;
}

/** The message a neuron target receives: payload.message, else the payload (or data) as JSON, else a note of the fire. */
function messageOf(t: Trigger, r: Pick<Receptor, 'slug'>, source: string): string {
  if (typeof t.payload.message === 'string' && t.payload.message) return t.payload.message;
  const { message: _m, ...rest } = t.payload;
  if (Object.keys(rest).length) return JSON.stringify(rest);
  if (t.data && Object.keys(t.data).length) return JSON.stringify(t.data);
  return `Receptor ${r.slug} fired (${source}).`;
}

const jobKindOf = (r: Receptor): Job['kind'] =>
  r.executableTarget.kind === 'neuron' ? 'neuron' : r.executableTarget.kind === 'pathway' ? 'pathway' : 'receptor';

/** What firing needs: the receptors, their targets' services, jobs and traces. */
type FireDeps = {
  repo: ReceptorStore;
  receptors: ReceptorService;
  neurons: NeuronService;
  pathways: PathwayService;
  pathwayRuns: PathwayRunService;
  jobs: JobService;
  traces: TraceService;
  usage: UsageService;
  events?: ResourceEvents;
  log?: Logger;
  bus: Bus;
};

/**
 * Firing receptors (POST /v1/receptors/:id/fire; docs/receptors.md, "Every firing is one `receptorFire` workflow"): every
 * firing — the fire route, a schedule tick, a stimulus event, a channel message — is one
 * `receptorFire` workflow that records the firing and runs the target as a child whose workflow
 * id is the job id the caller follows (neuronRun, pathwayRun or systemJob).
 */
export function createReceptorFireService(d: FireDeps) {
  const systemJobs = createSystemJobSteps(d);
  const steps = createFireSteps(d); // notFireable, launch, skip
  const service = {
    launch: steps.launch,
    notFireable: steps.notFireable,
    ...createFireStarts(d, steps), // fire, publish
    ...createFireWorkflowSteps(d, steps), // begin, end
    ...systemJobs,
    /** Recent firings of a receptor (newest first). */
    firings: (workspaceId: string, receptorId: string, limit = 20) =>
      d.repo.recentFirings(workspaceId, receptorId, limit),
  };
  // Vault changes (assets, artifacts, memories) and pathway-run events are stimuli that fire the receptors subscribed to them.
  d.bus.on('stimulus', ({ workspaceId, ...ev }) => service.publish(workspaceId, ev));
  return service;
}

/** The steps every way of firing shares: whether a receptor can fire, launching its fire, skipping one. */
function createFireSteps(d: FireDeps) {
  const { repo, neurons, pathways, jobs } = d;

  /** Why this receptor cannot fire now (null: it can). */
  async function notFireable(r: Receptor): Promise<string | null> {
    if (!r.isActive) return 'the receptor is inactive';
    const t = r.executableTarget;
    const inBrain = systemScope(r.workspaceId, r.brainId);
    try {
      if (t.kind === 'neuron') {
        const n = await neurons.resolve(inBrain, t.id!);
        if (!n.isActive) return 'the target neuron is inactive';
      }
      if (t.kind === 'pathway' || t.kind === 'action_plan') {
        const p = await pathways.get(inBrain, t.id!);
        if (!p.isActive) return 'the target pathway is inactive';
      }
    } catch (e) {
      if ((e as { status?: number }).status === 404) return `the target ${t.kind} no longer exists`;
      throw e;
    }
    return null;
  }

  async function launch(r: Receptor, l: Launch): Promise<{ job: Job; created: boolean; traceId: string | null }> {
    const jobId = l.jobId ?? randomUUID();
    const t = r.executableTarget;
    const traceId =
      t.kind === 'neuron' || t.kind === 'pathway' ? (l.trigger.traceId ?? uuidFromName(`${jobId}:trace`)) : null;
    // A neuron target runs on its trace after the trace's run that has not ended (double-texting,
    // docs/neurons.md): its fire waits in the queue behind it, and its human turn is stored when it
    // starts. The strategy is the invoke's, on the same code path (claimTrace, then supersedeSoon).
    const strategy = l.multitask ?? 'enqueue';
    const claimed = t.kind === 'neuron' && traceId ? await jobs.claimTrace(l.scope, traceId, jobId, strategy) : null;
    const waitsFor = claimed?.waitsFor ?? null;
    const { job, created } = await jobs
      .create(l.scope, {
        id: jobId,
        kind: jobKindOf(r),
        brainId: r.brainId,
        receptorId: r._id,
        traceId,
        neuronId: t.kind === 'neuron' ? t.id : null,
        pathwayId: t.kind === 'pathway' ? t.id : null,
        queued: (l.queued ?? false) || waitsFor !== null,
        waitsFor,
      })
      .catch(async (e: unknown) => {
        if (claimed) await jobs.giveUpTrace(l.scope.workspaceId, jobId, waitsFor).catch(() => undefined);
        throw e;
      });
    // The same event or message again: the job it fired already.
    if (!created) return { job, created, traceId: job.traceId };
    const firing: Firing = {
      _id: fireWorkflowId(jobId),
      workspaceId: r.workspaceId,
      receptorId: r._id,
      jobId,
      source: l.source,
      eventId: l.eventId ?? null,
      stimulusKey: l.stimulusKey ?? null,
      // The credential that fired rides with the trigger: the run is attributed to it (user, key, share link).
      trigger: {
        ...l.trigger,
        traceId: traceId ?? undefined,
        scope: l.trigger.scope ?? toRunScope({ ...l.scope, receptorId: r._id }),
      },
      status: 'pending',
      reason: null,
      firedAt: new Date(),
      startedAt: null,
      finishedAt: null,
    };
    await repo.recordFiring(firing);
    await jobs.emit(jobId, { type: 'status', status: 'pending', receptor_id: r._id });
    const input: ReceptorFireInput = {
      workspaceId: r.workspaceId,
      receptorId: r._id,
      source: l.source,
      jobId,
      firingId: firing._id,
    };
    await jobs.startWorkflow(
      job,
      'receptorFire',
      [input],
      `receptor ${r.slug} · ${l.source}${l.stimulusKey ? ` ${l.stimulusKey}` : ''}`,
      { workflowId: firing._id },
    );
    // Interrupt and rollback cancel the runs before it, as an invoke's do; it starts once they stopped.
    if (claimed && traceId)
      supersedeSoon(d, {
        scope: l.scope,
        traceId,
        jobId,
        strategy,
        waitsFor,
        traceType: l.trigger.traceType ?? 'thread',
        neuronId: t.id!,
      });
    return { job, created, traceId };
  }

  /** Ends a firing that did not run its target: the job fails with the reason, the record says skipped. */
  async function skip(firingId: string, workspaceId: string, jobId: string, reason: string): Promise<FirePlan> {
    await jobs.finalize(workspaceId, jobId, {
      status: 'failed',
      failedReason: `the receptor did not fire: ${reason}`,
      currentStep: 'skipped',
    });
    await repo.finishFiring(firingId, 'skipped', reason, workspaceId);
    return { kind: 'skipped', jobId, reason };
  }

  return { notFireable, launch, skip };
}
type FireSteps = ReturnType<typeof createFireSteps>;

/** The fires started outside a schedule: the fire route, and the stimuli receptors subscribe to. */
function createFireStarts(d: FireDeps, { notFireable, launch }: FireSteps) {
  const { receptors, jobs, traces } = d;
  return {
    /**
     * POST /v1/receptors/:id/fire: any member of the workspace; the receptor by slug or id (as its
     * reads take it); an inactive receptor or target is a 400.
     */
    async fire(scope: Scope, slugOrId: string, body: FireBody) {
      // A workspace found at its share of runs a moment ago is refused before any read.
      jobs.refuseIfFull(scope.workspaceId);
      const r = await receptors.lookup(scope, slugOrId);
      const why = await notFireable(r);
      if (why) throw validationError(`Receptor cannot fire: ${why}`);
      const opts = body.neuron_task_options;
      const traceType = opts?.trace_type ?? opts?.traceType;
      if (body.trace_id && r.executableTarget.kind === 'neuron') {
        const existing = await traces
          .get(scope, body.trace_id)
          .catch((e: unknown) => ((e as { status?: number }).status === 404 ? null : Promise.reject(e)));
        if (existing && existing.traceType !== (traceType ?? existing.traceType))
          throw validationError(`trace_id names a ${existing.traceType} trace`);
      }
      // The workspace's share of runs (429 past it, nothing stored); once stored, the job counts itself.
      const admitted = await jobs.admitRun(scope.workspaceId);
      const launched = await launch(r, {
        source: 'http',
        scope: { ...scope, receptorId: r._id },
        trigger: {
          payload: triggerPayload(body),
          data: body.data,
          traceId: body.trace_id,
          traceType,
          scope: toRunScope({ ...scope, receptorId: r._id }),
        },
        queued: admitted.queued,
        ...(body.multitask_strategy ? { multitask: body.multitask_strategy } : {}),
      }).finally(admitted.release);
      return { ...launched, receptorId: r._id };
    },

    /**
     * Fires every active receptor of the workspace that subscribes to the event's key (or its
     * lane), once per event: the job id is derived from the event id and the receptor, so the
     * same event delivered again starts nothing new.
     */
    async publish(workspaceId: string, ev: { key: string; eventId: string; payload: Record<string, unknown> }) {
      const subs = await receptors.subscribers(workspaceId, patternsFor(ev.key));
      const fired: { receptor_id: string; job_id: string; duplicate: boolean }[] = [];
      const skipped: { receptor_id: string; reason: string }[] = [];
      for (const r of subs) {
        const why = await notFireable(r);
        if (why) {
          skipped.push({ receptor_id: r._id, reason: why });
          continue;
        }
        const { job, created } = await launch(r, {
          source: 'stimulus',
          scope: { ...systemScope(workspaceId, r.brainId), receptorId: r._id },
          trigger: { payload: { stimulus: ev.key, event_id: ev.eventId, ...ev.payload } },
          jobId: uuidFromName(`stimulus:${workspaceId}:${ev.eventId}:${r._id}`),
          eventId: ev.eventId,
          stimulusKey: ev.key,
        });
        fired.push({ receptor_id: r._id, job_id: job._id, duplicate: !created });
      }
      return { key: ev.key, event_id: ev.eventId, fired, skipped };
    },
  };
}

/** The fire workflow's steps (begin prepares the target run, end records what became of it). */
function createFireWorkflowSteps(d: FireDeps, steps: FireSteps) {
  const { repo } = d;
  return {
    /**
     * The firing's first step (idempotent): records a scheduled firing, checks the receptor and
     * its target, and prepares the target run the workflow starts as a child.
     */
    begin: (input: ReceptorFireInput, workflowId: string, newJobId: string): Promise<FirePlan> =>
      begin(d, steps, input, workflowId, newJobId),

    /** The firing's last step: what became of the target run. */
    async end(firingId: string, status: 'completed' | 'failed', reason: string | null): Promise<void> {
      await repo.finishFiring(firingId, status, reason);
    },
  };
}

/** The fire workflow's first step (`begin` of createFireWorkflowSteps): the firing recorded, the target run prepared. */
async function begin(
  d: FireDeps,
  { notFireable, skip }: FireSteps,
  input: ReceptorFireInput,
  workflowId: string,
  newJobId: string,
): Promise<FirePlan> {
  const { repo, neurons, pathways, pathwayRuns, jobs, traces } = d;
  const firingId = input.firingId ?? workflowId;
  let firing = await repo.findFiring(input.workspaceId, firingId);
  const r = await repo.findById(input.workspaceId, input.receptorId);
  if (!firing) {
    // A schedule tick: the workflow records its own firing and job.
    const source: { payload?: Record<string, unknown> } = r?.sourceConfig ?? {};
    const key = r?.stimulusKeys?.find(isSchedulable) ?? null;
    firing = {
      _id: firingId,
      workspaceId: input.workspaceId,
      receptorId: input.receptorId,
      jobId: input.jobId ?? newJobId,
      source: input.source,
      eventId: null,
      stimulusKey: key,
      trigger: {
        payload: { ...(source.payload ?? {}), ...(key ? { stimulus: key } : {}), scheduled: true },
      },
      status: 'pending',
      reason: null,
      firedAt: new Date(),
      startedAt: null,
      finishedAt: null,
    };
    if (!(await repo.recordFiring(firing))) firing = (await repo.findFiring(input.workspaceId, firingId))!;
  }
  const jobId = firing.jobId;
  const trigger = triggerOf(firing);
  const scope: Scope = trigger.scope
    ? fromRunScope(trigger.scope)
    : { ...systemScope(input.workspaceId, r?.brainId), receptorId: input.receptorId };
  if (!r) {
    await jobs.create(scope, { id: jobId, kind: 'receptor', receptorId: input.receptorId });
    return skip(firingId, input.workspaceId, jobId, 'the receptor was deleted');
  }
  const t = r.executableTarget;
  const traceId =
    trigger.traceId ?? (t.kind === 'neuron' || t.kind === 'pathway' ? uuidFromName(`${jobId}:trace`) : null);
  await jobs.create(scope, {
    id: jobId,
    kind: jobKindOf(r),
    brainId: r.brainId,
    receptorId: r._id,
    traceId,
    neuronId: t.kind === 'neuron' ? t.id : null,
    pathwayId: t.kind === 'pathway' ? t.id : null,
  });
  const why = await notFireable(r);
  if (why) return skip(firingId, input.workspaceId, jobId, why);
  const inBrain: Scope = { ...scope, brainId: r.brainId, receptorId: r._id };
  await repo.markFiringRunning(input.workspaceId, firingId);
  try {
    if (t.kind === 'neuron') {
      const neuron = await neurons.resolve(inBrain, t.id!);
      const message = messageOf(trigger, r, firing.source);
      const traceType =
        trigger.traceType ??
        (neurons.headSnapshot(neuron).neuron_config.neuron_type === 'completion' ? 'system' : 'thread');
      const userEngramId = uuidFromName(`${jobId}:human`);
      const byPerson = firing.source === 'http' || firing.source === 'share' || firing.source === 'channel';
      await traces.append(inBrain, traceId!, {
        id: userEngramId,
        content: { type: 'human', content: message },
        metadata: {
          receptor_id: r._id,
          source: firing.source,
          ...(trigger.data ? { data: trigger.data } : {}),
          ...(firing.stimulusKey ? { stimulus: firing.stimulusKey } : {}),
        },
        // A person wrote it (fire route, share link, chat message), or the platform did (schedule, stimulus).
        sourceType: byPerson ? 'user' : 'receptor',
        sourceId: byPerson ? (scope.userId ?? scope.apiKeyId) : r._id,
        targetType: 'neuron',
        targetId: neuron._id,
        traceType,
        jobId,
        trace: { brainId: neuron.brainId, neuronId: neuron._id, receptorId: r._id },
      });
      return {
        kind: 'neuron',
        jobId,
        receptorSlug: r.slug,
        run: {
          jobId,
          scope: toRunScope(inBrain),
          neuronId: neuron._id,
          neuronVersion: neuron.version,
          traceId: traceId!,
          traceType,
          message,
          data: trigger.data,
          userEngramId,
          depth: 0,
          maxTurns: DEFAULT_MAX_TURNS,
          pathwayContext: null,
        },
      };
    }
    if (t.kind === 'pathway') {
      const run = await pathways.getForRun(inBrain, t.id!);
      const runInput = await pathwayRuns.runInput(
        inBrain,
        {
          graph: run.graph,
          pathwayId: t.id,
          version: run.version,
          input: { ...(trigger.data ?? {}), ...trigger.payload },
          traceId: traceId!,
          brainId: r.brainId,
          name: run.pathway.name,
        },
        jobId,
      );
      return { kind: 'pathway', jobId, receptorSlug: r.slug, run: runInput };
    }
    const job: SystemJobInput['job'] =
      t.kind === 'system_job'
        ? {
            kind: 'maintenance',
            key:
              t.job ??
              (firing.stimulusKey && isSchedulable(firing.stimulusKey)
                ? firing.stimulusKey
                : (r.stimulusKeys ?? []).find(isSchedulable)) ??
              '',
          }
        : { kind: 'action_plan', pathwayId: t.id!, autoExecute: Boolean(t.autoExecute) };
    if (job.kind === 'maintenance' && !job.key)
      return skip(firingId, input.workspaceId, jobId, 'no maintenance job to run');
    return {
      kind: 'system',
      jobId,
      receptorSlug: r.slug,
      run: { jobId, workspaceId: r.workspaceId, receptorId: r._id, firingId, job },
    };
  } catch (e) {
    const status = (e as { status?: number }).status;
    if (status && status >= 400 && status < 500) return skip(firingId, input.workspaceId, jobId, (e as Error).message);
    throw e;
  }
}

export type ReceptorFireService = ReturnType<typeof createReceptorFireService>;
