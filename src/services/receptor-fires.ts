import { randomUUID } from 'node:crypto';
import { decodeBlob, encodeBlob } from '../db/codec.js';
import { isDuplicateKey } from '../db/claims.js';
import type { JobDoc } from '../db/jobs.js';
import type { FiringDoc, ReceptorDoc, ReceptorRepo } from '../db/receptors.js';
import { validationError } from '../errors.js';
import { triggerPayload, type FireBody } from '../schemas/receptors.js';
import { systemScope, type Scope } from '../scope.js';
import type {
  FirePlan,
  PathwayRunInput,
  ReceptorFireInput,
  RunScope,
  SystemJobInput,
} from '../temporal/definitions.js';
import type { JobService } from './jobs.js';
import type { NeuronService } from './neurons.js';
import type { PathwayRunService } from './pathway-runs.js';
import type { PathwayService } from './pathways.js';
import type { ReceptorService } from './receptors.js';
import { DEFAULT_MAX_TURNS, fromRunScope, toRunScope } from './runs/index.js';
import { uuidFromName } from '../ids.js';
import { isSchedulable, patternsFor } from './stimuli.js';
import type { TraceService } from './traces.js';
import type { UsageService } from './usage.js';
import type { ResourceEvents } from './resource-events.js';

/** The workflow id of the fire that the API (or a stimulus, or a channel message) starts for a job. */
export const fireWorkflowId = (jobId: string) => `fire-${jobId}`;

/** What a firing carries to its target (stored on the firing record; the workflow input holds ids only). */
interface Trigger {
  payload: Record<string, unknown>;
  data?: Record<string, unknown>;
  traceId?: string;
  traceType?: 'thread' | 'system';
  /** The credential that fired (http), for attribution; absent: the platform (schedules, stimuli). */
  scope?: RunScope;
}

export interface Launch {
  source: FiringDoc['source'];
  scope: Scope;
  trigger: Trigger;
  /** Deterministic job id (stimulus events and channel messages: the same event fires once). */
  jobId?: string;
  eventId?: string | null;
  stimulusKey?: string | null;
}

/** The message a neuron target receives: payload.message, else the payload (or data) as JSON, else a note of the fire. */
export function messageOf(t: Trigger, r: Pick<ReceptorDoc, 'slug'>, source: string): string {
  if (typeof t.payload.message === 'string' && t.payload.message) return t.payload.message;
  const { message: _m, ...rest } = t.payload;
  if (Object.keys(rest).length) return JSON.stringify(rest);
  if (t.data && Object.keys(t.data).length) return JSON.stringify(t.data);
  return `Receptor ${r.slug} fired (${source}).`;
}

const jobKindOf = (r: ReceptorDoc): JobDoc['kind'] =>
  r.executableTarget.kind === 'neuron' ? 'neuron' : r.executableTarget.kind === 'pathway' ? 'pathway' : 'receptor';

/**
 * Firing receptors (POST /v1/receptors/:id/fire; docs/receptors.md, "Every firing is one `receptorFire` workflow"): every
 * firing — the fire route, a schedule tick, a stimulus event, a channel message — is one
 * `receptorFire` workflow that records the firing and runs the target as a child whose workflow
 * id is the job id the caller follows (neuronRun, pathwayRun or systemJob).
 */
export function createReceptorFireService(d: {
  repo: ReceptorRepo;
  receptors: ReceptorService;
  neurons: NeuronService;
  pathways: PathwayService;
  pathwayRuns: PathwayRunService;
  jobs: JobService;
  traces: TraceService;
  usage: UsageService;
  events?: ResourceEvents;
}) {
  const { repo, receptors, neurons, pathways, pathwayRuns, jobs, traces, usage } = d;

  /** Why this receptor cannot fire now (null: it can). */
  async function notFireable(r: ReceptorDoc): Promise<string | null> {
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

  async function launch(r: ReceptorDoc, l: Launch): Promise<{ job: JobDoc; created: boolean; traceId: string | null }> {
    const jobId = l.jobId ?? randomUUID();
    const t = r.executableTarget;
    const traceId =
      t.kind === 'neuron' || t.kind === 'pathway' ? (l.trigger.traceId ?? uuidFromName(`${jobId}:trace`)) : null;
    const { job, created } = await jobs.create(l.scope, {
      id: jobId,
      kind: jobKindOf(r),
      brainId: r.brainId,
      receptorId: r._id,
      traceId,
      neuronId: t.kind === 'neuron' ? t.id : null,
      pathwayId: t.kind === 'pathway' ? t.id : null,
    });
    // The same event or message again: the job it fired already.
    if (!created) return { job, created, traceId: job.traceId };
    const firing: FiringDoc = {
      _id: fireWorkflowId(jobId),
      workspaceId: r.workspaceId,
      receptorId: r._id,
      jobId,
      source: l.source,
      eventId: l.eventId ?? null,
      stimulusKey: l.stimulusKey ?? null,
      // The credential that fired rides with the trigger: the run is attributed to it (user, key, share link).
      trigger: encodeBlob({
        ...l.trigger,
        traceId: traceId ?? undefined,
        scope: l.trigger.scope ?? toRunScope({ ...l.scope, receptorId: r._id }),
      }),
      status: 'pending',
      reason: null,
      firedAt: new Date(),
      startedAt: null,
      finishedAt: null,
    };
    try {
      await repo.firings.insertOne(firing);
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
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
    return { job, created, traceId };
  }

  /** Ends a firing that did not run its target: the job fails with the reason, the record says skipped. */
  async function skip(firingId: string, workspaceId: string, jobId: string, reason: string): Promise<FirePlan> {
    await jobs.finalize(workspaceId, jobId, {
      status: 'failed',
      failedReason: `the receptor did not fire: ${reason}`,
      currentStep: 'skipped',
    });
    await repo.firings.updateOne({ _id: firingId }, { $set: { status: 'skipped', reason, finishedAt: new Date() } });
    return { kind: 'skipped', jobId, reason };
  }

  /** The maintenance work a system job runs (the `maintenance.` keys of the stimuli catalog). */
  async function maintenance(key: string, workspaceId: string): Promise<Record<string, unknown>> {
    const scope = systemScope(workspaceId);
    switch (key) {
      case 'maintenance.job_sweep': {
        const stale = await jobs.pendingOlderThan(workspaceId, 30_000);
        let failed = 0;
        for (const j of stale) if ((await jobs.checkStarted(j)).status === 'failed') failed++;
        return { key, checked: stale.length, failed };
      }
      case 'maintenance.schedule_reconcile':
        return { key, ...(await receptors.reconcileSchedules(workspaceId)) };
      case 'maintenance.usage_report': {
        const end = new Date();
        const start = new Date(end.getTime() - 86400_000);
        const stats = await usage.stats(scope, { startDate: start.toISOString(), endDate: end.toISOString() }, false);
        return {
          key,
          from: start.toISOString(),
          to: end.toISOString(),
          total_tokens: stats.totalTokens,
          total_cost: stats.totalCost,
          calls: stats.calls,
          by_model: stats.usageByModel,
        };
      }
      default:
        throw validationError(`unknown maintenance job ${key}`);
    }
  }

  return {
    launch,
    notFireable,

    /** POST /v1/receptors/:id/fire: any member of the workspace; an inactive receptor or target is a 400. */
    async fire(scope: Scope, id: string, body: FireBody) {
      const r = await receptors.find(scope, id);
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
      return launch(r, {
        source: 'http',
        scope: { ...scope, receptorId: r._id },
        trigger: {
          payload: triggerPayload(body),
          data: body.data,
          traceId: body.trace_id,
          traceType,
          scope: toRunScope({ ...scope, receptorId: r._id }),
        },
      });
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

    // ------------------------------------------------------------ the fire workflow's steps

    /**
     * The firing's first step (idempotent): records a scheduled firing, checks the receptor and
     * its target, and prepares the target run the workflow starts as a child.
     */
    async begin(input: ReceptorFireInput, workflowId: string, newJobId: string): Promise<FirePlan> {
      const firingId = input.firingId ?? workflowId;
      let firing = await repo.firings.findOne({ _id: firingId });
      const r = await repo.findById(input.workspaceId, input.receptorId);
      if (!firing) {
        // A schedule tick: the workflow records its own firing and job.
        const source = decodeBlob<{ payload?: Record<string, unknown> }>(r?.sourceConfig, {});
        const key = r?.stimulusKeys?.find(isSchedulable) ?? null;
        firing = {
          _id: firingId,
          workspaceId: input.workspaceId,
          receptorId: input.receptorId,
          jobId: input.jobId ?? newJobId,
          source: input.source,
          eventId: null,
          stimulusKey: key,
          trigger: encodeBlob({
            payload: { ...(source.payload ?? {}), ...(key ? { stimulus: key } : {}), scheduled: true },
          }),
          status: 'pending',
          reason: null,
          firedAt: new Date(),
          startedAt: null,
          finishedAt: null,
        };
        try {
          await repo.firings.insertOne(firing);
        } catch (e) {
          if (!isDuplicateKey(e)) throw e;
          firing = (await repo.firings.findOne({ _id: firingId }))!;
        }
      }
      const jobId = firing.jobId;
      const trigger = decodeBlob<Trigger>(firing.trigger, { payload: {} });
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
      await repo.firings.updateOne({ _id: firingId }, { $set: { status: 'running', startedAt: new Date() } });
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
        if (status && status >= 400 && status < 500)
          return skip(firingId, input.workspaceId, jobId, (e as Error).message);
        throw e;
      }
    },

    /** The firing's last step: what became of the target run. */
    async end(firingId: string, status: 'completed' | 'failed', reason: string | null): Promise<void> {
      await repo.firings.updateOne({ _id: firingId }, { $set: { status, reason, finishedAt: new Date() } });
    },

    /**
     * A system job's work. Maintenance runs and completes the job; an action plan is recorded as
     * proposed (completing the job) or, with auto_execute, returns the pathway run to start.
     */
    async runSystemJob(input: SystemJobInput): Promise<{ done: true } | { execute: PathwayRunInput; planId: string }> {
      await jobs.transition(input.workspaceId, input.jobId, {
        status: 'running',
        progress: 10,
        currentStep: input.job.kind === 'maintenance' ? input.job.key : 'action plan',
      });
      await jobs.emit(input.jobId, { type: 'status', status: 'running' });
      if (input.job.kind === 'maintenance') {
        const result = await maintenance(input.job.key, input.workspaceId);
        await jobs.finalize(input.workspaceId, input.jobId, {
          status: 'completed',
          progress: 100,
          currentStep: 'completed',
          result,
        });
        return { done: true };
      }
      const r = await repo.findById(input.workspaceId, input.receptorId);
      const firing = await repo.firings.findOne({ _id: input.firingId });
      const trigger = decodeBlob<Trigger>(firing?.trigger, { payload: {} });
      const brainId = r?.brainId ?? '';
      const scope: Scope = { ...systemScope(input.workspaceId, brainId), receptorId: input.receptorId };
      const planId = uuidFromName(`${input.jobId}:plan`);
      const run = await pathways.getForRun(scope, input.job.pathwayId);
      const planInput = { ...(trigger.data ?? {}), ...trigger.payload };
      const now = new Date();
      try {
        await repo.actionPlans.insertOne({
          _id: planId,
          workspaceId: input.workspaceId,
          brainId,
          receptorId: input.receptorId,
          pathwayId: input.job.pathwayId,
          jobId: input.jobId,
          input: encodeBlob(planInput),
          status: 'proposed',
          executionJobId: null,
          createdAt: now,
          updatedAt: now,
        });
        await d.events?.emit(input.workspaceId, 'created', {
          kind: 'action_plan',
          id: planId,
          brain_id: brainId,
          name: run.pathway.name,
        });
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
      }
      if (!input.job.autoExecute) {
        const result = {
          action_plan_id: planId,
          status: 'proposed',
          pathway_id: input.job.pathwayId,
          pathway_version: run.version,
          execute_with: {
            method: 'POST',
            path: '/v1/jobs',
            body: { pathway_id: input.job.pathwayId, input: planInput },
          },
        };
        await jobs.finalize(input.workspaceId, input.jobId, {
          status: 'completed',
          progress: 100,
          currentStep: 'completed',
          result,
        });
        return { done: true };
      }
      const execJobId = uuidFromName(`${input.jobId}:execute`);
      const execute = await pathwayRuns.runInput(
        scope,
        {
          graph: run.graph,
          pathwayId: input.job.pathwayId,
          version: run.version,
          input: planInput,
          brainId,
          name: run.pathway.name,
          traceId: uuidFromName(`${execJobId}:trace`),
        },
        execJobId,
      );
      await jobs.create(scope, {
        id: execJobId,
        kind: 'pathway',
        brainId,
        pathwayId: input.job.pathwayId,
        receptorId: input.receptorId,
        traceId: execute.traceId,
        parentJobId: input.jobId,
      });
      await repo.actionPlans.updateOne({ _id: planId }, { $set: { executionJobId: execJobId, updatedAt: new Date() } });
      return { execute, planId };
    },

    /** An auto-executed action plan's run ended: the plan is executed and the system job completes with the run's output. */
    async finishActionPlan(input: SystemJobInput, planId: string, output: unknown): Promise<void> {
      const plan = await repo.actionPlans.findOne({ _id: planId });
      await repo.actionPlans.updateOne({ _id: planId }, { $set: { status: 'executed', updatedAt: new Date() } });
      if (plan)
        await d.events?.emit(input.workspaceId, 'updated', { kind: 'action_plan', id: planId, brain_id: plan.brainId });
      const result = {
        action_plan_id: planId,
        status: 'executed',
        execution_job_id: plan?.executionJobId ?? null,
        output,
      };
      await jobs.finalize(input.workspaceId, input.jobId, {
        status: 'completed',
        progress: 100,
        currentStep: 'completed',
        result,
      });
    },

    async failSystemJob(input: SystemJobInput, reason: string): Promise<void> {
      await jobs.finalize(input.workspaceId, input.jobId, {
        status: 'failed',
        failedReason: reason,
        currentStep: 'failed',
      });
    },

    /** Recent firings of a receptor (newest first). */
    firings: (workspaceId: string, receptorId: string, limit = 20) =>
      repo.firings.find({ workspaceId, receptorId }).sort({ firedAt: -1 }).limit(limit).toArray(),
  };
}
export type ReceptorFireService = ReturnType<typeof createReceptorFireService>;
