import { idempotentId, markCommitted, newId } from '../kernel/request-context.js';
import { uuidFromName } from '../kernel/ids.js';
import { bestEffort } from '../kernel/best-effort.js';
import type { Logger } from '../kernel/logger.js';
import { createHash, randomUUID } from 'node:crypto';
import {
  emptyCost,
  type CostSummary,
  type Engram,
  type NewEngram,
  type NewTrace,
  type Trace,
  type TraceListFilter,
} from './model.js';
import type { Appended, TraceStore, WriteGuard } from './store.js';
import { conflict, notFound, validationError } from '../kernel/errors.js';
import type { MessageCreateBody, TraceListQuery } from './schemas.js';
import type { Scope } from '../kernel/scope.js';
import type { Streams } from '../kernel/streams.js';

/** What a caller appends to a trace: human turns from the API, neuron turns from runs. */
export interface EngramInput {
  /** A deterministic id makes the append idempotent (a retried activity must not write twice). */
  id?: string;
  content: { type: string; content: string };
  metadata?: Record<string, unknown>;
  sourceType: string;
  sourceId: string | null;
  targetType?: string | null;
  targetId?: string | null;
  traceType?: 'thread' | 'system';
  memoryIds?: string[];
  jobId?: string | null;
  /** Context recorded on the trace when this append creates it. */
  trace?: { brainId?: string | null; neuronId?: string | null; receptorId?: string | null };
  cost?: CostSummary;
}

const SORT_FIELD = { created_at: 'createdAt', updated_at: 'updatedAt', message_count: 'messageCount' } as const;
const contentHash = (c: { type: string; content: string }) =>
  createHash('sha256').update(`${c.type}\n${c.content}`).digest('hex');

/** What the trace service's parts share: the factory's deps. */
interface TraceContext {
  repo: TraceStore;
  streams: Streams;
  log?: Logger;
}

async function get({ repo }: TraceContext, scope: Scope, traceId: string): Promise<Trace> {
  const t = await repo.get(scope.workspaceId, traceId);
  if (!t) throw notFound('Trace');
  return t;
}

/** The trace a first append creates. */
const newTrace = (scope: Scope, traceId: string, input: EngramInput): NewTrace => {
  const now = new Date();
  return {
    traceId,
    workspaceId: scope.workspaceId,
    brainId: input.trace?.brainId ?? scope.brainId ?? null,
    userId: scope.userId,
    apiKeyId: scope.apiKeyId,
    receptorId: input.trace?.receptorId ?? scope.receptorId ?? null,
    // A run a share link started records the link on the trace it creates (its conversation).
    shareId: scope.credential === 'share' ? (scope.shareTokenId ?? null) : null,
    neuronId: input.trace?.neuronId ?? null,
    title: null,
    titleSource: null,
    traceType: input.traceType ?? 'thread',
    metadata: {},
    createdAt: now,
    messageCount: 0,
    cost: emptyCost(),
    memoryIds: [],
    updatedAt: now,
  };
};

/** The engram to append (its seq and running totals are the repository's). */
const newEngram = (scope: Scope, traceId: string, input: EngramInput, id: string): NewEngram => ({
  _id: id,
  workspaceId: scope.workspaceId,
  traceId,
  content: input.content,
  contentHash: contentHash(input.content),
  metadata: input.metadata ?? {},
  sourceType: input.sourceType,
  sourceId: input.sourceId,
  targetType: input.targetType ?? null,
  targetId: input.targetId ?? null,
  traceType: input.traceType ?? 'thread',
  memoryIds: input.memoryIds ?? [],
  jobId: input.jobId ?? null,
  createdAt: new Date(),
  cost: input.cost ?? emptyCost(),
});

/**
 * The trace's message count an append starts its walk from, creating the trace on first use (a claim
 * on the unique (workspace, trace) index; a writer that created it meanwhile wins, and the append then
 * walks from 0). `counted`: the caller has just read the trace (its count), or found none (null);
 * `exists`: the caller knows the trace exists, so it is read, never created.
 */
async function startingCount(
  { repo }: TraceContext,
  scope: Scope,
  traceId: string,
  input: EngramInput,
  known: { counted?: number | null; exists?: boolean },
): Promise<number> {
  if (typeof known.counted === 'number') return known.counted;
  if (known.counted === undefined) {
    const t = await repo.get(scope.workspaceId, traceId);
    if (t || known.exists) return t?.messageCount ?? 0;
  }
  await repo.create(newTrace(scope, traceId, input));
  return 0;
}

/** Tells the trace's followers its title changed. */
const publishTitle = ({ streams }: TraceContext, scope: Scope, traceId: string, title: string | null | undefined) =>
  streams.append(streams.keys.trace(scope.workspaceId, traceId), { type: 'trace.updated', trace_id: traceId, title });

/** Publishes a stored engram on its trace stream. */
const published = async ({ streams }: TraceContext, scope: Scope, traceId: string, doc: Engram): Promise<Engram> => {
  await streams.append(streams.keys.trace(scope.workspaceId, traceId), {
    type: 'engram.created',
    trace_id: traceId,
    engram_id: doc._id,
    source_type: doc.sourceType,
    content: doc.content,
    created_at: doc.createdAt.toISOString(),
  });
  return doc;
};

/** See `append` (createTraceAppends); also answers the trace document the last converge check read. */
async function appendEngram(
  ctx: TraceContext,
  scope: Scope,
  traceId: string,
  input: EngramInput,
  known: { absent?: boolean; traceExists?: boolean; counted?: number | null; title?: string; guard?: WriteGuard } = {},
): Promise<Appended> {
  const { repo, log } = ctx;
  // `known`: the caller has just found that input.id is not stored yet (or will take the stored
  // engram of that id: `existed`), or that the trace exists. `title`: set with the counters when
  // the trace has none (a run's generated title). `guard`: asked right before the insert (a run's
  // write lease); refused, nothing is stored and the append throws 409.
  if (input.id && !known.absent) {
    const existing = await repo.findEngram(scope.workspaceId, input.id);
    if (existing) return { engram: existing, trace: null, existed: true, titled: false };
  }
  const hint = await startingCount(ctx, scope, traceId, input, { counted: known.counted, exists: known.traceExists });
  const appended = await repo.appendEngram(newEngram(scope, traceId, input, input.id ?? randomUUID()), {
    hint,
    memoryIds: input.memoryIds ?? [],
    title: known.title,
    guard: known.guard,
    // The engram is stored: the request answers its success from here on (src/kernel/request-context.ts).
    onStored: markCommitted,
  });
  if (appended.titled) await publishTitle(ctx, scope, traceId, known.title);
  // The stream entry is a notification of what is stored: Redis failing here does not undo the write.
  await bestEffort(log, 'engram.created entry', published(ctx, scope, traceId, appended.engram));
  return appended;
}

/**
 * A trace named in a path: by its trace id, or by its record id (the `id` a trace list shows
 * beside `trace_id`), in the caller's workspace; a trace id wins when both could match.
 */
async function resolve({ repo }: TraceContext, scope: Scope, ref: string): Promise<Trace> {
  const t = (await repo.get(scope.workspaceId, ref)) ?? (await repo.getByRecordId(scope.workspaceId, ref));
  if (!t) throw notFound('Trace');
  return t;
}

/**
 * The trace a write that creates the trace on first use names in its path: the trace's own id when
 * the path names an existing trace by trace id or record id, else the path's id (a new trace); and
 * the trace as read (null: a new trace).
 */
async function traceFor(
  { repo }: TraceContext,
  scope: Scope,
  ref: string,
): Promise<{ traceId: string; trace: Trace | null }> {
  const byTraceId = await repo.get(scope.workspaceId, ref);
  if (byTraceId) return { traceId: ref, trace: byTraceId };
  const byRecordId = await repo.getByRecordId(scope.workspaceId, ref);
  return byRecordId ? { traceId: byRecordId.traceId, trace: byRecordId } : { traceId: ref, trace: null };
}

/** Reads: traces by id or record id, lists, engrams, the trace stream's key. */
function createTraceReads(ctx: TraceContext) {
  const { repo, streams } = ctx;
  return {
    get: (scope: Scope, traceId: string): Promise<Trace> => get(ctx, scope, traceId),
    resolve: (scope: Scope, ref: string): Promise<Trace> => resolve(ctx, scope, ref),

    async list(scope: Scope, q: TraceListQuery) {
      const filter: TraceListFilter = {};
      if (q.brain_id) filter.brainId = q.brain_id;
      if (q.receptor_id) filter.receptorId = q.receptor_id;
      if (q.user_id) filter.userId = q.user_id;
      if (q.neuron_id) {
        if (!scope.brainId) throw validationError('neuron_id needs brain scope: send X-Brain-Id');
        filter.neuronId = q.neuron_id;
        filter.brainId = scope.brainId;
      }
      if (q.trace_type !== 'all') filter.traceType = q.trace_type;
      if (q.created_after) filter.createdAfter = new Date(q.created_after);
      if (q.created_before) filter.createdBefore = new Date(q.created_before);
      const sort = { field: SORT_FIELD[q.sort], dir: q.order === 'asc' ? 1 : -1 } as const;
      return repo.list(scope.workspaceId, filter, sort, q, q.search || undefined);
    },

    /** One engram by id in the caller's workspace (null when missing). */
    findEngram: (scope: Scope, id: string) => repo.findEngram(scope.workspaceId, id),

    /** The trace's engrams in order: the first `limit`, or with `newest` only the newest that many (a run's context). */
    async messages(scope: Scope, traceId: string, limit?: number, newest?: number): Promise<Engram[]> {
      const t = await get(ctx, scope, traceId);
      return repo.history(scope.workspaceId, traceId, t.messageCount, { limit, newest });
    },

    streamKey: (scope: Scope, traceId: string) => streams.keys.trace(scope.workspaceId, traceId),
  };
}

/** Appends: human turns, idempotent appends, a new trace's first engram. */
function createTraceAppends(ctx: TraceContext) {
  const { repo, log } = ctx;
  return {
    /**
     * A human turn from the API; source_type comes from the credential, never from the body. `ref`:
     * the path's trace id or record id (a trace id that names no trace starts a new trace).
     */
    async addHumanMessage(scope: Scope, ref: string, body: MessageCreateBody): Promise<Engram> {
      // The trace is read once: the read that resolves the path also gives the append its message count.
      const { traceId, trace } = await traceFor(ctx, scope, ref);
      return this.append(
        scope,
        traceId,
        {
          // With an Idempotency-Key the engram's id is derived from it: a retry finds the first attempt's engram.
          id: idempotentId('engram'),
          content: { type: 'human', content: body.content },
          metadata: body.metadata ?? {},
          sourceType: 'user',
          sourceId: scope.userId ?? scope.apiKeyId,
          memoryIds: body.memory_ids,
        },
        { counted: trace?.messageCount ?? null },
      );
    },

    /**
     * Appends one engram (idempotent when input.id is set) and publishes it on the trace stream.
     * Its sequence number is claimed by a unique insert (the repository's), and it carries the
     * trace's running totals, so order and counters are exact under concurrent writers on MongoDB
     * and FerretDB alike; the trace document's counters converge to the newest engram's.
     */
    async append(
      scope: Scope,
      traceId: string,
      input: EngramInput,
      known: { absent?: boolean; traceExists?: boolean; counted?: number | null; guard?: WriteGuard } = {},
    ): Promise<Engram> {
      return (await appendEngram(ctx, scope, traceId, input, known)).engram;
    },

    /** `append`, also answering the trace document as the append's last check read it (null: an engram stored before, nothing read). */
    appendWithTrace: (
      scope: Scope,
      traceId: string,
      input: EngramInput,
      known: { absent?: boolean; traceExists?: boolean; title?: string; guard?: WriteGuard } = {},
    ): Promise<Appended> => appendEngram(ctx, scope, traceId, input, known),

    /**
     * Starts a trace whose id the platform just chose (an invoke without trace_id) with its first
     * engram: the trace document already carries that engram's counters, so this is two inserts
     * and the stream entry, with nothing to read first. Both inserts are claims: a trace id that
     * exists after all (or a retried call) falls back to what append does.
     */
    async start(scope: Scope, traceId: string, input: EngramInput & { id: string }): Promise<Engram> {
      // The inserts go together (nobody else knows a trace id the platform just chose): an invoke's
      // 202 waits for them, so they cost one store round trip instead of two.
      const first = await repo.start(newTrace(scope, traceId, input), newEngram(scope, traceId, input, input.id));
      // The id or the first place was taken (a retry, a trace that existed): the ordinary append.
      if (!first) return this.append(scope, traceId, input);
      // The stream entry is sent, not awaited: it is a notification (a reader replays the trace from
      // the store), and the connection keeps it ahead of every later entry this process writes.
      void bestEffort(log, 'engram.created entry', published(ctx, scope, traceId, first));
      return first;
    },
  };
}

/** Changes to a trace: its title, forks, a rolled-back run's engrams, trace-scoped events. */
function createTraceChanges(ctx: TraceContext) {
  const { repo, streams, log } = ctx;
  return {
    /**
     * A manual title always wins; a generated one is only set while no manual title exists. The
     * trace is read and written by `_id` (a key lookup on every store); a manual title set between
     * that read and a generated title's write is the one race left, and only on a run's first reply.
     */
    async setTitle(
      scope: Scope,
      traceId: string,
      title: string,
      source: 'manual' | 'generated',
      read?: Trace,
    ): Promise<Trace> {
      // `read`: the trace as the caller has just read it (a run's reply append), so it is not read again.
      const before = read ?? (await get(ctx, scope, traceId));
      let t = before;
      if (source === 'manual' || before.titleSource !== 'manual') {
        const set = { title, titleSource: source, updatedAt: new Date() };
        await repo.setTitle(before, set);
        t = { ...before, ...set };
      }
      await publishTitle(ctx, scope, traceId, t.title);
      return t;
    },

    /**
     * POST /v1/traces/:id/fork: a new trace holding copies of the engrams of `ref` up to and
     * including `atEngramId` (the original is not touched), with `forkedFrom` naming both. A run
     * invoked on the fork reads the copies as its history. 400 when the engram is not one of the
     * trace's; 404 for a trace the caller cannot see.
     */
    async fork(scope: Scope, ref: string, atEngramId: string): Promise<Trace> {
      const source = await resolve(ctx, scope, ref);
      const at = await repo.findEngram(scope.workspaceId, atEngramId);
      if (!at || at.traceId !== source.traceId)
        throw validationError(`at_engram_id: ${atEngramId} is not an engram of trace ${source.traceId}`);
      const copies = await repo.history(scope.workspaceId, source.traceId, source.messageCount, { limit: at.seq });
      if (copies.length !== at.seq || copies.at(-1)?._id !== at._id)
        throw conflict(`trace ${source.traceId} changed while it was read; retry`);
      const traceId = newId('fork');
      const now = new Date();
      return repo.fork(
        {
          traceId,
          workspaceId: scope.workspaceId,
          brainId: source.brainId,
          userId: scope.userId,
          apiKeyId: scope.apiKeyId,
          receptorId: source.receptorId,
          shareId: null,
          neuronId: source.neuronId,
          title: source.title,
          titleSource: source.titleSource,
          traceType: source.traceType,
          metadata: { ...source.metadata },
          forkedFrom: { traceId: source.traceId, engramId: at._id },
          createdAt: now,
          messageCount: 0,
          cost: emptyCost(),
          memoryIds: [],
          updatedAt: now,
        },
        copies,
        (seq) => uuidFromName(`fork:${scope.workspaceId}:${traceId}:${seq}`),
      );
    },

    /**
     * Removes the engrams these runs wrote (a rolled-back run and its delegates) from the end of
     * the trace, and tells the trace's readers (`engrams.removed`). Answers how many were removed.
     */
    async removeRunEngrams(scope: Scope, traceId: string, jobIds: string[]): Promise<number> {
      const removed = await repo.removeTail(scope.workspaceId, traceId, jobIds);
      if (removed > 0)
        await bestEffort(
          log,
          'engrams.removed entry',
          streams.append(streams.keys.trace(scope.workspaceId, traceId), {
            type: 'engrams.removed',
            trace_id: traceId,
            job_ids: jobIds,
            count: removed,
          }),
        );
      return removed;
    },

    /** Publishes a run-state or other trace-scoped event (docs/streams.md, "Trace events"). */
    publish: (scope: Scope, traceId: string, event: Record<string, unknown>) =>
      streams.append(streams.keys.trace(scope.workspaceId, traceId), event),
  };
}

/** Traces and their engrams: implicit creation, API-order reads, cost roll-ups and trace events. */
export function createTraceService({ repo, streams, log }: { repo: TraceStore; streams: Streams; log?: Logger }) {
  const ctx: TraceContext = { repo, streams, log };
  return {
    ...createTraceReads(ctx), // get, resolve, list, findEngram, messages, streamKey
    ...createTraceAppends(ctx), // addHumanMessage, append, appendWithTrace, start
    ...createTraceChanges(ctx), // setTitle, fork, removeRunEngrams, publish
  };
}
export type TraceService = ReturnType<typeof createTraceService>;
