import type { Firing } from './model.js';
import type { ReceptorStore } from './store.js';
import { validationError } from '../kernel/errors.js';
import { systemScope, type Scope } from '../kernel/scope.js';
import type { PathwayRunInput, RunScope, SystemJobInput } from '../temporal/definitions.js';
import { uuidFromName } from '../kernel/ids.js';
import type { JobService } from '../jobs/index.js';
import type { PathwayRunService, PathwayService } from '../pathways/index.js';
import type { ReceptorService } from './service.js';
import type { ResourceEvents } from '../platform/index.js';
import type { UsageService } from '../usage/index.js';

/** What a firing carries to its target (stored on the firing record; the workflow input holds ids only). */
export interface Trigger {
  payload: Record<string, unknown>;
  data?: Record<string, unknown>;
  traceId?: string;
  traceType?: 'thread' | 'system';
  /** The credential that fired (http), for attribution; absent: the platform (schedules, stimuli). */
  scope?: RunScope;
}

/** A firing's trigger (an unreadable or missing one: an empty payload). */
export const triggerOf = (f: Firing | null): Trigger => (f?.trigger as Trigger | null) ?? { payload: {} };

/** What the system job steps share: the receptor store, the services they call, the events they publish. */
interface SystemJobContext {
  repo: ReceptorStore;
  receptors: ReceptorService;
  pathways: PathwayService;
  pathwayRuns: PathwayRunService;
  jobs: JobService;
  usage: UsageService;
  events?: ResourceEvents;
}

/** The maintenance work a system job runs (the `maintenance.` keys of the stimuli catalog). */
async function maintenance(
  { jobs, receptors, usage }: SystemJobContext,
  key: string,
  workspaceId: string,
): Promise<Record<string, unknown>> {
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

/** Running a system job: maintenance done at once, an action plan proposed or started as a pathway run. */
function createSystemJobRuns(ctx: SystemJobContext) {
  const { repo, pathways, pathwayRuns, jobs } = ctx;
  return {
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
        const result = await maintenance(ctx, input.job.key, input.workspaceId);
        await jobs.finalize(input.workspaceId, input.jobId, {
          status: 'completed',
          progress: 100,
          currentStep: 'completed',
          result,
        });
        return { done: true };
      }
      const r = await repo.findById(input.workspaceId, input.receptorId);
      const trigger = triggerOf(await repo.findFiring(input.workspaceId, input.firingId));
      const brainId = r?.brainId ?? '';
      const scope: Scope = { ...systemScope(input.workspaceId, brainId), receptorId: input.receptorId };
      const planId = uuidFromName(`${input.jobId}:plan`);
      const run = await pathways.getForRun(scope, input.job.pathwayId);
      const planInput = { ...(trigger.data ?? {}), ...trigger.payload };
      const now = new Date();
      const proposed = await repo.proposePlan({
        _id: planId,
        workspaceId: input.workspaceId,
        brainId,
        receptorId: input.receptorId,
        pathwayId: input.job.pathwayId,
        jobId: input.jobId,
        input: planInput,
        status: 'proposed',
        executionJobId: null,
        createdAt: now,
        updatedAt: now,
      });
      if (proposed)
        await ctx.events?.emit(input.workspaceId, 'created', {
          kind: 'action_plan',
          id: planId,
          brain_id: brainId,
          name: run.pathway.name,
        });
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
      await repo.setPlanExecution(input.workspaceId, planId, execJobId);
      return { execute, planId };
    },
  };
}

/** A system job's end: an executed action plan's output, or its failure. */
function createSystemJobEnds(ctx: SystemJobContext) {
  const { repo, jobs } = ctx;
  return {
    /** An auto-executed action plan's run ended: the plan is executed and the system job completes with the run's output. */
    async finishActionPlan(input: SystemJobInput, planId: string, output: unknown): Promise<void> {
      const plan = await repo.markPlanExecuted(input.workspaceId, planId);
      if (plan)
        await ctx.events?.emit(input.workspaceId, 'updated', {
          kind: 'action_plan',
          id: planId,
          brain_id: plan.brainId,
        });
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
  };
}

/**
 * The system jobs a receptor fires (part of the receptor fire service): maintenance work, and
 * action plans recorded as proposed or run as a pathway.
 */
export function createSystemJobSteps(d: SystemJobContext) {
  // The deps are the context (no state of its own): `events` is read from it when a plan is recorded, as before.
  return { ...createSystemJobRuns(d), ...createSystemJobEnds(d) };
}
