import { createHash, randomUUID } from 'node:crypto';
import type { Filter } from 'mongodb';
import { escapeRegex } from '../db/client.js';
import { encodeBlob } from '../db/codec.js';
import { emptyCost, type CostSummary, type EngramDoc, type TraceDoc, type TraceRepo } from '../db/traces.js';
import { notFound, validationError } from '../errors.js';
import type { MessageCreateBody, TraceListQuery } from '../schemas/traces.js';
import type { Scope } from '../scope.js';
import type { Streams } from '../streams.js';
import type { WithLock } from '../locks.js';

/** What a caller appends to a trace: human turns from the API, neuron turns from runs. */
export interface EngramInput {
  /** A deterministic id makes the append idempotent (a retried activity must not write twice). */
  id?: string;
  content: { type: string; content: string };
  metadata?: Record<string, unknown>;
  sourceType: string; sourceId: string | null;
  targetType?: string | null; targetId?: string | null;
  traceType?: 'thread' | 'system';
  memoryIds?: string[];
  jobId?: string | null;
  /** Context recorded on the trace when this append creates it. */
  trace?: { brainId?: string | null; neuronId?: string | null; receptorId?: string | null };
  cost?: CostSummary;
}

const SORT_FIELD = { created_at: 'createdAt', updated_at: 'updatedAt', message_count: 'messageCount' } as const;
export const contentHash = (c: { type: string; content: string }) => createHash('sha256').update(`${c.type}\n${c.content}`).digest('hex');

/** Traces and their engrams: implicit creation, API-order reads, cost roll-ups and trace events. */
export function createTraceService({ repo, streams, withLock }: { repo: TraceRepo; streams: Streams; withLock: WithLock }) {
  async function get(scope: Scope, traceId: string): Promise<TraceDoc> {
    const t = await repo.find(scope.workspaceId, traceId);
    if (!t) throw notFound('Trace');
    return t;
  }

  /** Creates the trace on first use and reserves the next sequence number (API order). */
  async function reserveSeq(scope: Scope, traceId: string, input: EngramInput): Promise<number> {
    const now = new Date();
    const onInsert: Omit<TraceDoc, 'messageCount' | 'updatedAt' | 'cost' | 'memoryIds'> = {
      _id: randomUUID(), traceId, workspaceId: scope.workspaceId,
      brainId: input.trace?.brainId ?? scope.brainId ?? null, userId: scope.userId, apiKeyId: scope.apiKeyId,
      receptorId: input.trace?.receptorId ?? scope.receptorId ?? null, neuronId: input.trace?.neuronId ?? null,
      title: null, titleSource: null, traceType: input.traceType ?? 'thread', metadata: encodeBlob({}), createdAt: now,
    };
    const cost = input.cost ?? emptyCost();
    const update = {
      $setOnInsert: onInsert,
      $set: { updatedAt: now },
      $inc: { messageCount: 1, 'cost.totalCostUsd': cost.totalCostUsd, 'cost.totalTokens': cost.totalTokens, 'cost.inputTokens': cost.inputTokens, 'cost.outputTokens': cost.outputTokens },
      ...(input.memoryIds?.length ? { $addToSet: { memoryIds: { $each: input.memoryIds } } } : {}),
    };
    for (let attempt = 0; ; attempt++) {
      try {
        const doc = await repo.traces.findOneAndUpdate({ workspaceId: scope.workspaceId, traceId }, update, { upsert: true, returnDocument: 'after' });
        return doc!.messageCount;
      } catch (e) {
        // Two first messages raced on the unique (workspace, trace) index: the loser retries as an update.
        if (attempt === 0 && (e as { code?: number }).code === 11000) continue;
        throw e;
      }
    }
  }

  return {
    get,

    async list(scope: Scope, q: TraceListQuery) {
      const filter: Filter<TraceDoc> = { workspaceId: scope.workspaceId };
      if (q.brain_id) filter.brainId = q.brain_id;
      if (q.receptor_id) filter.receptorId = q.receptor_id;
      if (q.user_id) filter.userId = q.user_id;
      if (q.neuron_id) {
        if (!scope.brainId) throw validationError('neuron_id needs brain scope: send X-Brain-Id');
        filter.neuronId = q.neuron_id;
        filter.brainId = scope.brainId;
      }
      if (q.trace_type !== 'all') filter.traceType = q.trace_type;
      if (q.search) {
        const rx = { $regex: escapeRegex(q.search), $options: 'i' };
        filter.$or = [{ traceId: rx }, { title: rx }];
      }
      if (q.created_after || q.created_before) {
        filter.createdAt = { ...(q.created_after ? { $gte: new Date(q.created_after) } : {}), ...(q.created_before ? { $lte: new Date(q.created_before) } : {}) };
      }
      const dir = q.order === 'asc' ? 1 : -1;
      const { items, total } = await repo.list(filter, { [SORT_FIELD[q.sort]]: dir, _id: dir }, q.offset, q.limit);
      return { items, total, limit: q.limit, offset: q.offset, hasMore: q.offset + items.length < total };
    },

    /** One engram by id in the caller's workspace (null when missing). */
    findEngram: (scope: Scope, id: string) => repo.findEngram(scope.workspaceId, id),

    async messages(scope: Scope, traceId: string, limit?: number): Promise<EngramDoc[]> {
      await get(scope, traceId);
      return repo.messages(scope.workspaceId, traceId, limit);
    },

    /** A human turn from the API; source_type comes from the credential, never from the body. */
    addHumanMessage(scope: Scope, traceId: string, body: MessageCreateBody): Promise<EngramDoc> {
      return this.append(scope, traceId, {
        content: { type: 'human', content: body.content }, metadata: body.metadata ?? {},
        sourceType: 'user', sourceId: scope.userId ?? scope.apiKeyId, memoryIds: body.memory_ids,
      });
    },

    /** Appends one engram (idempotent when input.id is set) and publishes it on the trace stream. */
    async append(scope: Scope, traceId: string, input: EngramInput): Promise<EngramDoc> {
      // One writer per trace at a time: the sequence number and the counters must not race.
      return withLock(`trace:${scope.workspaceId}:${traceId}`, () => this.appendLocked(scope, traceId, input));
    },

    async appendLocked(scope: Scope, traceId: string, input: EngramInput): Promise<EngramDoc> {
      if (input.id) {
        const existing = await repo.findEngram(scope.workspaceId, input.id);
        if (existing) return existing;
      }
      const seq = await reserveSeq(scope, traceId, input);
      const doc: EngramDoc = {
        _id: input.id ?? randomUUID(), workspaceId: scope.workspaceId, traceId, seq, content: input.content,
        contentHash: contentHash(input.content), metadata: encodeBlob(input.metadata ?? {}), sourceType: input.sourceType,
        sourceId: input.sourceId, targetType: input.targetType ?? null, targetId: input.targetId ?? null,
        traceType: input.traceType ?? 'thread', memoryIds: input.memoryIds ?? [], jobId: input.jobId ?? null, createdAt: new Date(),
      };
      await repo.engrams.insertOne(doc);
      await streams.append(streams.keys.trace(scope.workspaceId, traceId), {
        type: 'engram.created', trace_id: traceId, engram_id: doc._id, source_type: doc.sourceType, content: doc.content, created_at: doc.createdAt.toISOString(),
      });
      return doc;
    },

    /** A manual title always wins; a generated one is only set while no manual title exists. */
    async setTitle(scope: Scope, traceId: string, title: string, source: 'manual' | 'generated'): Promise<TraceDoc> {
      const filter: Filter<TraceDoc> = { workspaceId: scope.workspaceId, traceId, ...(source === 'generated' ? { titleSource: { $ne: 'manual' } } : {}) };
      await repo.traces.updateOne(filter, { $set: { title, titleSource: source, updatedAt: new Date() } });
      const t = await get(scope, traceId);
      await streams.append(streams.keys.trace(scope.workspaceId, traceId), { type: 'trace.updated', trace_id: traceId, title: t.title });
      return t;
    },

    /** Publishes a run-state or other trace-scoped event (document 1, Events). */
    publish: (scope: Scope, traceId: string, event: Record<string, unknown>) => streams.append(streams.keys.trace(scope.workspaceId, traceId), event),
    streamKey: (scope: Scope, traceId: string) => streams.keys.trace(scope.workspaceId, traceId),
  };
}
export type TraceService = ReturnType<typeof createTraceService>;
