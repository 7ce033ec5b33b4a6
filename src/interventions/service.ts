import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  COUNT_CAP,
  newDeliveryToken,
  type Intervention,
  type InterventionFilter,
  type InterventionStatus,
} from './model.js';
import type { InterventionStore } from './store.js';
import { forbidden, notFound, validationError, conflict } from '../kernel/errors.js';
import type { InterventionListQuery, RespondBody } from './schemas.js';
import { hasRole, type Scope } from '../kernel/scope.js';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { answerUpdate, type InterventionAnswer } from '../temporal/definitions.js';
import { own } from '../kernel/own.js';
import type { Bus } from '../kernel/events.js';

interface NewIntervention {
  id: string;
  jobId: string;
  traceId: string | null;
  pathwayId: string | null;
  brainId: string | null;
  nodeIndex: number;
  kind: Intervention['kind'];
  title: string;
  prompt: string;
  options: string[];
  expiresInS?: number;
  /** What the person decides on (a tool call: tool, redacted arguments, turn). */
  payload?: Record<string, unknown>;
}

const STATUS_FOR: Record<string, InterventionStatus> = {
  approve: 'approved',
  approved: 'approved',
  reject: 'rejected',
  rejected: 'rejected',
  // A tool call run with the person's arguments was approved, as edited.
  edit: 'approved',
};
const ALL_STATUSES: InterventionStatus[] = ['pending', 'approved', 'rejected', 'answered', 'expired', 'cancelled'];

/** What the intervention service's deps are (the factory's argument), and so what its parts share. */
interface InterventionContext {
  repo: InterventionStore;
  temporal: Client;
  bus: Bus;
}

// Each intervention created or answered, once stored, is published (`intervention.changed`; signed
// webhooks subscribe) and awaited: the webhook outbox records the event as part of the change (a
// failure fails the run's activity, which retries it; a retried create or answer reports its event
// again, once per key).
const told = ({ bus }: InterventionContext, change: 'created' | 'answered', doc: Intervention) =>
  bus.emit('intervention.changed', { change, intervention: doc });

async function get({ repo }: InterventionContext, scope: Scope, id: string): Promise<Intervention> {
  const doc = await repo.get(scope.workspaceId, id);
  if (!doc) throw notFound('Intervention');
  return doc;
}

/**
 * Sends an answer to the waiting run as the `answer` Update (src/temporal/definitions.ts): the
 * run accepts and records it, or refuses it and nothing changes. The run's own state decides,
 * so two answers, or an answer racing the expiry timer, have exactly one outcome.
 */
async function answer(
  { repo, temporal }: InterventionContext,
  doc: Intervention,
  body: RespondBody,
  by: string | null,
  deliveryId?: string,
): Promise<Intervention> {
  // Answering what is no longer open is a state conflict (409), not a malformed request.
  if (doc.status !== 'pending') throw conflict(`Intervention is already ${doc.status}`);
  if (!doc.options.includes(body.action)) throw validationError(`action must be one of: ${doc.options.join(', ')}`);
  if (doc.kind === 'tool_call' && (body.action === 'edit') !== (body.arguments !== undefined))
    throw validationError(
      body.action === 'edit' ? 'arguments: required when action is edit' : 'arguments: only with action edit',
    );
  try {
    await temporal.workflow.getHandle(doc.jobId).executeUpdate(answerUpdate, {
      args: [
        {
          interventionId: doc._id,
          action: body.action,
          comment: body.comment,
          fields: body.fields,
          by,
          deliveryId,
          ...(body.arguments !== undefined ? { arguments: body.arguments } : {}),
        },
      ],
    });
  } catch (e) {
    const fresh = await repo.get(doc.workspaceId, doc._id);
    if (e instanceof WorkflowUpdateFailedError) {
      const reason = (e.cause as Error | undefined)?.message ?? 'the run refused the answer';
      if (fresh && fresh.status !== 'pending') throw conflict(`Intervention is already ${fresh.status}`);
      throw /already|not waiting/i.test(reason) ? conflict(reason) : validationError(reason);
    }
    if (e instanceof WorkflowNotFoundError || /already completed|not found/i.test(String((e as Error).message))) {
      throw conflict(
        fresh && fresh.status !== 'pending'
          ? `Intervention is already ${fresh.status}`
          : 'The run is no longer waiting for this intervention',
      );
    }
    throw e;
  }
  return (await repo.get(doc.workspaceId, doc._id))!;
}

/** The list's filter: the workspace, then the brain (X-Brain-Id unless brain_scope=all or brain_id), job, trace, status. */
function filterOf(scope: Scope, q: InterventionListQuery): InterventionFilter {
  const filter: InterventionFilter = {};
  const brain = q.brain_id ?? (q.brain_scope === 'all' ? undefined : scope.brainId);
  if (brain) filter.brainId = brain;
  if (q.job_id) filter.jobId = q.job_id;
  if (q.trace_id) filter.traceId = q.trace_id;
  if (q.status) filter.status = q.status;
  return filter;
}

/** Reads: one intervention, a page of them, the counts a dashboard shows. */
function createInterventionReads(ctx: InterventionContext) {
  const { repo } = ctx;
  return {
    get: (scope: Scope, id: string): Promise<Intervention> => get(ctx, scope, id),

    async list(scope: Scope, q: InterventionListQuery) {
      return repo.page(scope.workspaceId, filterOf(scope, q), q);
    },

    /**
     * Counts per status and the three groups a dashboard shows. Each status is counted up to 1,000
     * (COUNT_CAP) on its own index range: a count that reached the cap reads 1,000 with
     * `counts_exact: false` ("1,000 or more"), never a count of the whole history.
     */
    async summary(scope: Scope, q: InterventionListQuery) {
      const base = filterOf(scope, { ...q, status: undefined });
      const counted = await Promise.all(
        ALL_STATUSES.map((status) => repo.countUpTo(scope.workspaceId, { ...base, status })),
      );
      const byStatus = Object.fromEntries(ALL_STATUSES.map((s, i) => [s, Math.min(counted[i]!, COUNT_CAP)])) as Record<
        InterventionStatus,
        number
      >;
      const exact = counted.every((n) => n <= COUNT_CAP);
      return {
        byStatus,
        grouped: {
          active: byStatus.pending,
          resolved: byStatus.approved + byStatus.rejected + byStatus.answered,
          expired_or_cancelled: byStatus.expired + byStatus.cancelled,
        },
        counts_exact: exact,
      };
    },
  };
}

/** A person's answer, by the API (a member's credential) or by a delivery token (a link). */
function createInterventionAnswers(ctx: InterventionContext) {
  const { repo } = ctx;
  return {
    /** A budget pause (docs/usage.md) is answered by a workspace admin only; other interventions by any member. */
    async respond(scope: Scope, id: string, body: RespondBody) {
      const doc = await get(ctx, scope, id);
      if (doc.kind === 'budget' && !hasRole(scope, 'workspace_admin'))
        throw forbidden('Only a workspace admin can let a run go beyond a budget');
      return answer(ctx, doc, body, scope.userId ?? scope.apiKeyId);
    },

    async byToken(token: string): Promise<{ doc: Intervention; deliveryId: string }> {
      const doc = await repo.byToken(token);
      const delivery = doc?.deliveries.find((d) => d.token === token);
      if (!doc || !delivery) throw notFound('Intervention');
      return { doc, deliveryId: delivery.id };
    },

    async respondByToken(token: string, body: RespondBody): Promise<Intervention> {
      const { doc, deliveryId } = await this.byToken(token);
      // A delivery token proves no role: going beyond a budget is answered by an admin's credential.
      if (doc.kind === 'budget')
        throw forbidden('A budget pause is answered by a workspace admin through POST /v1/interventions/:id/respond');
      return answer(ctx, doc, body, null, deliveryId);
    },
  };
}

/** The run's own writes: an intervention created, its accepted answer recorded, closed when it expires or the job is cancelled. */
function createInterventionRecords(ctx: InterventionContext) {
  const { repo } = ctx;
  return {
    /** Idempotent on id (the workflow picks it), so a retried activity creates one record. */
    async create(scope: Scope, n: NewIntervention): Promise<Intervention> {
      const existing = await repo.get(scope.workspaceId, n.id);
      if (existing) {
        // A retried create (its first try may have died before its event was recorded).
        await told(ctx, 'created', existing);
        return existing;
      }
      const now = new Date();
      const doc: Intervention = {
        _id: n.id,
        workspaceId: scope.workspaceId,
        brainId: n.brainId,
        jobId: n.jobId,
        traceId: n.traceId,
        pathwayId: n.pathwayId,
        nodeIndex: n.nodeIndex,
        kind: n.kind,
        title: n.title,
        prompt: n.prompt,
        options: n.options,
        status: 'pending',
        action: null,
        comment: null,
        fields: null,
        payload: n.payload ?? null,
        respondedBy: null,
        respondedAt: null,
        expiresAt: n.expiresInS ? new Date(now.getTime() + n.expiresInS * 1000) : null,
        // Going beyond a budget is an admin's decision: no public link to answer it with.
        deliveries: (n.kind === 'budget' ? (['api'] as const) : (['api', 'link'] as const)).map((channel) => ({
          id: randomUUID(),
          channel,
          token: newDeliveryToken(n.id),
          status: 'pending' as const,
          createdAt: now,
          respondedAt: null,
        })),
        createdAt: now,
        updatedAt: now,
      };
      await repo.insert(doc);
      await told(ctx, 'created', doc);
      return doc;
    },

    /**
     * Records an answer the run accepted (called only by the run's activity: the run is the one
     * writer of an intervention's outcome, so no lock is needed). Idempotent for a retried activity.
     */
    async recordAnswer(workspaceId: string, a: InterventionAnswer, kind: Intervention['kind']): Promise<Intervention> {
      const doc = await repo.get(workspaceId, a.interventionId);
      if (!doc) throw notFound('Intervention');
      if (doc.status !== 'pending') {
        // A retried answer (its first try may have died before its event was recorded).
        if (doc.status !== 'expired' && doc.status !== 'cancelled') await told(ctx, 'answered', doc);
        return doc;
      }
      const now = new Date();
      const status = kind === 'pause' ? 'answered' : (own(STATUS_FOR, a.action) ?? 'answered');
      const deliveryId = a.deliveryId ?? doc.deliveries.find((d) => d.channel === 'api')?.id;
      const deliveries = doc.deliveries.map((d) =>
        d.id === deliveryId
          ? { ...d, status: 'responded' as const, respondedAt: now }
          : { ...d, status: 'closed' as const },
      );
      await repo.recordOutcome(workspaceId, doc._id, {
        status,
        action: a.action,
        comment: a.comment ?? null,
        // An edited tool call keeps the arguments it ran with beside any fields sent.
        fields: a.arguments ? { ...a.fields, arguments: a.arguments } : (a.fields ?? null),
        respondedBy: a.by ?? null,
        respondedAt: now,
        deliveries,
        updatedAt: now,
      });
      const answered = (await repo.get(workspaceId, doc._id))!;
      await told(ctx, 'answered', answered);
      return answered;
    },

    /** Marks a still-pending intervention expired or cancelled (the run's own steps); returns whether it changed. */
    async close(workspaceId: string, id: string, status: 'expired' | 'cancelled'): Promise<boolean> {
      const cur = await repo.get(workspaceId, id);
      if (cur?.status !== 'pending') return false;
      await repo.close(
        workspaceId,
        id,
        status,
        cur.deliveries.map((d) => ({ ...d, status: 'closed' as const })),
      );
      return true;
    },

    /** Cancelling a job cancels its open interventions. */
    async cancelForJob(workspaceId: string, jobId: string): Promise<void> {
      for (const d of await repo.pendingOfJob(workspaceId, jobId)) await this.close(workspaceId, d._id, 'cancelled');
    },
  };
}

/**
 * Interventions: a paused run's question to a person (docs/glossary.md). An answer goes to the waiting
 * run as an Update; the run decides (first answer wins, an expired one is refused) and records it.
 */
export function createInterventionService({
  repo,
  temporal,
  bus,
}: {
  repo: InterventionStore;
  temporal: Client;
  bus: Bus;
}) {
  const ctx: InterventionContext = { repo, temporal, bus };
  return {
    ...createInterventionReads(ctx), // get, list, summary
    ...createInterventionAnswers(ctx), // respond, byToken, respondByToken
    ...createInterventionRecords(ctx), // create, recordAnswer, close, cancelForJob
  };
}
export type InterventionService = ReturnType<typeof createInterventionService>;
