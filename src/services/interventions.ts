import { randomBytes, randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Filter } from 'mongodb';
import { encodeBlob } from '../db/codec.js';
import type { InterventionDoc, InterventionRepo, InterventionStatus } from '../db/interventions.js';
import { notFound, validationError } from '../errors.js';
import type { InterventionListQuery, RespondBody } from '../schemas/interventions.js';
import type { Scope } from '../scope.js';
import { interventionResponseSignal } from '../temporal/definitions.js';
import type { WithLock } from '../locks.js';

export interface NewIntervention {
  id: string; jobId: string; traceId: string | null; pathwayId: string | null; brainId: string | null; nodeIndex: number;
  kind: 'approval' | 'pause'; title: string; prompt: string; options: string[]; expiresInS?: number;
}

const STATUS_FOR: Record<string, InterventionStatus> = { approve: 'approved', approved: 'approved', reject: 'rejected', rejected: 'rejected' };
const ALL_STATUSES: InterventionStatus[] = ['pending', 'approved', 'rejected', 'answered', 'expired', 'cancelled'];
const newToken = () => randomBytes(24).toString('base64url');

/**
 * Interventions: a paused run's question to a person (document 2). Answering one records the
 * answer (first answer wins) and signals the waiting workflow.
 */
export function createInterventionService({ repo, temporal, withLock }: { repo: InterventionRepo; temporal: Client; withLock: WithLock }) {
  async function get(scope: Scope, id: string): Promise<InterventionDoc> {
    const doc = await repo.find(scope.workspaceId, id);
    if (!doc) throw notFound('Intervention');
    return doc;
  }

  /** First answer wins: the check and the write happen under a per-intervention lock. */
  const answer = (doc: InterventionDoc, body: RespondBody, by: string | null, deliveryId?: string) =>
    withLock(`intervention:${doc._id}`, async () => answerLocked((await repo.interventions.findOne({ _id: doc._id })) ?? doc, body, by, deliveryId));

  async function answerLocked(doc: InterventionDoc, body: RespondBody, by: string | null, deliveryId?: string): Promise<InterventionDoc> {
    if (doc.status !== 'pending') throw validationError(`Intervention is already ${doc.status}`);
    if (!doc.options.includes(body.action)) throw validationError(`action must be one of: ${doc.options.join(', ')}`);
    const now = new Date();
    const status = doc.kind === 'pause' ? 'answered' : STATUS_FOR[body.action] ?? 'answered';
    const deliveries = doc.deliveries.map((d) => (deliveryId === undefined || d.id === deliveryId ? { ...d, status: 'responded' as const, respondedAt: now } : { ...d, status: 'closed' as const }));
    const res = await repo.interventions.updateOne(
      { _id: doc._id, status: 'pending' },
      { $set: { status, action: body.action, comment: body.comment ?? null, fields: body.fields ? encodeBlob(body.fields) : null, respondedBy: by, respondedAt: now, deliveries, updatedAt: now } },
    );
    if (res.modifiedCount === 0) throw validationError('Intervention was answered already');
    await temporal.workflow.getHandle(doc.jobId).signal(interventionResponseSignal, { interventionId: doc._id, action: body.action, comment: body.comment, fields: body.fields, by });
    return (await repo.interventions.findOne({ _id: doc._id }))!;
  }

  return {
    get,

    /** Idempotent on id (the workflow picks it), so a retried activity creates one record. */
    async create(scope: Scope, n: NewIntervention): Promise<InterventionDoc> {
      const existing = await repo.find(scope.workspaceId, n.id);
      if (existing) return existing;
      const now = new Date();
      const doc: InterventionDoc = {
        _id: n.id, workspaceId: scope.workspaceId, brainId: n.brainId, jobId: n.jobId, traceId: n.traceId, pathwayId: n.pathwayId,
        nodeIndex: n.nodeIndex, kind: n.kind, title: n.title, prompt: n.prompt, options: n.options, status: 'pending',
        action: null, comment: null, fields: null, respondedBy: null, respondedAt: null,
        expiresAt: n.expiresInS ? new Date(now.getTime() + n.expiresInS * 1000) : null,
        deliveries: (['api', 'link'] as const).map((channel) => ({ id: randomUUID(), channel, token: newToken(), status: 'pending' as const, createdAt: now, respondedAt: null })),
        createdAt: now, updatedAt: now,
      };
      await repo.interventions.insertOne(doc);
      return doc;
    },

    async list(scope: Scope, q: InterventionListQuery) {
      const filter: Filter<InterventionDoc> = { workspaceId: scope.workspaceId };
      const brain = q.brain_id ?? (q.brain_scope === 'all' ? undefined : scope.brainId);
      if (brain) filter.brainId = brain;
      if (q.job_id) filter.jobId = q.job_id;
      if (q.trace_id) filter.traceId = q.trace_id;
      if (q.status) filter.status = q.status;
      const [items, total] = await Promise.all([
        repo.interventions.find(filter).sort({ createdAt: -1, _id: -1 }).skip(q.offset).limit(q.limit).toArray(),
        repo.interventions.countDocuments(filter),
      ]);
      return { items, total, limit: q.limit, offset: q.offset };
    },

    /** Counts per status and the three groups a dashboard shows. */
    async summary(scope: Scope, q: InterventionListQuery) {
      const { items } = await this.list(scope, { ...q, status: undefined, limit: 10_000, offset: 0 });
      const byStatus = Object.fromEntries(ALL_STATUSES.map((s) => [s, items.filter((i) => i.status === s).length])) as Record<InterventionStatus, number>;
      return { byStatus, grouped: { active: byStatus.pending, resolved: byStatus.approved + byStatus.rejected + byStatus.answered, expired_or_cancelled: byStatus.expired + byStatus.cancelled } };
    },

    respond: async (scope: Scope, id: string, body: RespondBody) => answer(await get(scope, id), body, scope.userId ?? scope.apiKeyId),

    async byToken(token: string): Promise<{ doc: InterventionDoc; deliveryId: string }> {
      const doc = await repo.byToken(token);
      const delivery = doc?.deliveries.find((d) => d.token === token);
      if (!doc || !delivery) throw notFound('Intervention');
      return { doc, deliveryId: delivery.id };
    },

    async respondByToken(token: string, body: RespondBody): Promise<InterventionDoc> {
      const { doc, deliveryId } = await this.byToken(token);
      return answer(doc, body, null, deliveryId);
    },

    /** Marks a still-pending intervention expired or cancelled; returns whether it changed. */
    async close(workspaceId: string, id: string, status: 'expired' | 'cancelled'): Promise<boolean> {
      const now = new Date();
      const doc = await repo.interventions.findOne({ _id: id, workspaceId });
      if (!doc) return false;
      return withLock(`intervention:${id}`, async () => {
        const cur = await repo.interventions.findOne({ _id: id, workspaceId });
        if (cur?.status !== 'pending') return false;
        await repo.interventions.updateOne({ _id: id, workspaceId }, { $set: { status, updatedAt: now, deliveries: cur.deliveries.map((d) => ({ ...d, status: 'closed' as const })) } });
        return true;
      });
    },

    /** Cancelling a job cancels its open interventions. */
    async cancelForJob(workspaceId: string, jobId: string): Promise<void> {
      for (const d of await repo.interventions.find({ workspaceId, jobId, status: 'pending' }).toArray()) await this.close(workspaceId, d._id, 'cancelled');
    },
  };
}
export type InterventionService = ReturnType<typeof createInterventionService>;
