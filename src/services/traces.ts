import { idempotentId, markCommitted } from '../request-context.js';
import { bestEffort } from '../best-effort.js';
import type { Logger } from '../logger.js';
import { createHash, randomUUID } from 'node:crypto';
import type { Filter } from 'mongodb';
import { escapeRegex } from '../db/client.js';
import { encodeBlob } from '../db/codec.js';
import {
  emptyCost,
  placeKey,
  traceKey,
  type CostSummary,
  type EngramDoc,
  type EngramPlaceDoc,
  type TraceDoc,
  type TraceRepo,
} from '../db/traces.js';
import { notFound, validationError } from '../errors.js';
import type { MessageCreateBody, TraceListQuery } from '../schemas/traces.js';
import type { Scope } from '../scope.js';
import type { Streams } from '../streams.js';
import { claim, newest, probeFrom } from '../db/claims.js';
import { findById } from '../db/client.js';

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

/** Traces a search reads per page at most (docs/decisions.md, "Lists that page by key"). */
export const SEARCH_SCAN_MAX = 5_000;
const SORT_FIELD = { created_at: 'createdAt', updated_at: 'updatedAt', message_count: 'messageCount' } as const;
export const contentHash = (c: { type: string; content: string }) =>
  createHash('sha256').update(`${c.type}\n${c.content}`).digest('hex');

/** Histories up to this many engrams are read by key (places, then engrams); longer ones by one query. */
const KEYED_HISTORY_MAX = 400;
const KEY_READS_AT_ONCE = 32;
/** `f(0..n-1)`, at most KEY_READS_AT_ONCE at a time, in order. */
async function inBatches<T>(n: number, f: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let from = 0; from < n; from += KEY_READS_AT_ONCE) {
    out.push(
      ...(await Promise.all(Array.from({ length: Math.min(KEY_READS_AT_ONCE, n - from) }, (_, k) => f(from + k)))),
    );
  }
  return out;
}

/** Traces and their engrams: implicit creation, API-order reads, cost roll-ups and trace events. */
export function createTraceService({ repo, streams, log }: { repo: TraceRepo; streams: Streams; log?: Logger }) {
  async function get(scope: Scope, traceId: string): Promise<TraceDoc> {
    const t = await repo.find(scope.workspaceId, traceId);
    if (!t) throw notFound('Trace');
    return t;
  }

  /** The trace document a first append creates, with the counters of its first `count` engrams. */
  const traceDoc = (scope: Scope, traceId: string, input: EngramInput, count = 0, cost = emptyCost()): TraceDoc => {
    const now = new Date();
    return {
      _id: traceKey(scope.workspaceId, traceId),
      traceId,
      workspaceId: scope.workspaceId,
      brainId: input.trace?.brainId ?? scope.brainId ?? null,
      userId: scope.userId,
      apiKeyId: scope.apiKeyId,
      receptorId: input.trace?.receptorId ?? scope.receptorId ?? null,
      neuronId: input.trace?.neuronId ?? null,
      title: null,
      titleSource: null,
      traceType: input.traceType ?? 'thread',
      metadata: encodeBlob({}),
      createdAt: now,
      messageCount: count,
      cost,
      memoryIds: count ? [...new Set(input.memoryIds ?? [])] : [],
      updatedAt: now,
    };
  };

  /** The engram document at `seq`, carrying the trace's running totals (`prev`: those before it). */
  const engramDoc = (
    scope: Scope,
    traceId: string,
    input: EngramInput,
    id: string,
    seq: number,
    prev: CostSummary,
  ): EngramDoc => {
    const cost = input.cost ?? emptyCost();
    return {
      _id: id,
      workspaceId: scope.workspaceId,
      traceId,
      seq,
      content: input.content,
      contentHash: contentHash(input.content),
      metadata: encodeBlob(input.metadata ?? {}),
      sourceType: input.sourceType,
      sourceId: input.sourceId,
      targetType: input.targetType ?? null,
      targetId: input.targetId ?? null,
      traceType: input.traceType ?? 'thread',
      memoryIds: input.memoryIds ?? [],
      jobId: input.jobId ?? null,
      createdAt: new Date(),
      totals: {
        totalCostUsd: prev.totalCostUsd + cost.totalCostUsd,
        totalTokens: prev.totalTokens + cost.totalTokens,
        inputTokens: prev.inputTokens + cost.inputTokens,
        outputTokens: prev.outputTokens + cost.outputTokens,
      },
    };
  };

  /** Creates the trace on first use (an insert claimed by the unique (workspace, trace) index); the message count it had. */
  async function ensureTrace(scope: Scope, traceId: string, input: EngramInput): Promise<number> {
    const t = await repo.find(scope.workspaceId, traceId);
    if (t) return t.messageCount;
    await claim(repo.traces, traceDoc(scope, traceId, input));
    return 0;
  }

  /** An engram's place: its key, seq and the trace's totals through it (src/db/traces.ts). */
  const placeOf = (e: EngramDoc): EngramPlaceDoc => ({
    _id: placeKey(traceKey(e.workspaceId, e.traceId), e.seq),
    engramId: e._id,
    seq: e.seq,
    totals: e.totals ?? emptyCost(),
  });
  /** Writes an engram's place; a duplicate is the same place, written by another writer who found it missing too. */
  const place = (e: EngramDoc) => claim(repo.places, placeOf(e));

  /**
   * The newest place of a trace, walked by key from `hint` (a message count the trace had reached;
   * its counters only lag behind its engrams). A place missing at `hint` (a trace from before
   * places, or a writer that died between its engram and its place) is rebuilt from the newest
   * engram: the one scan left on this path, once.
   */
  async function newestPlace(workspaceId: string, traceId: string, hint: number): Promise<EngramPlaceDoc | null> {
    const key = traceKey(workspaceId, traceId);
    let [last, next] = await Promise.all([
      hint > 0 ? findById(repo.places, placeKey(key, hint)) : Promise.resolve(null),
      findById(repo.places, placeKey(key, hint + 1)),
    ]);
    if (hint > 0 && !last) {
      const e = await newest(repo.engrams, { workspaceId, traceId }, 'seq');
      if (!e) return null;
      await place(e);
      last = placeOf(e);
      next = await findById(repo.places, placeKey(key, e.seq + 1));
    }
    if (!next) return last;
    return (await probeFrom(repo.places, (n) => placeKey(key, n), next.seq + 1)).at(-1) ?? next;
  }

  /** Tells the trace's followers its title changed. */
  const publishTitle = (scope: Scope, traceId: string, title: string | null | undefined) =>
    streams.append(streams.keys.trace(scope.workspaceId, traceId), { type: 'trace.updated', trace_id: traceId, title });

  /** Publishes a stored engram on its trace stream. */
  const published = async (scope: Scope, traceId: string, doc: EngramDoc): Promise<EngramDoc> => {
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

  /**
   * Brings the trace document's counters up to the newest engram's running totals. Each writer
   * converges after its own insert, so when appends stop the document matches the engrams exactly.
   * The newest engram is found by walking places from the document's count (key reads, no scan).
   *
   * After its write a writer checks only whether the place after the newest engram it wrote for
   * exists (one key read): if it does, its write may have been stale and it goes round again. A
   * stale write of an older writer that lands after this one is that writer's to repair: its own
   * check follows its write, which follows this writer's place, so it finds that place.
   */
  async function converge(
    scope: Scope,
    traceId: string,
    memoryIds: string[],
    mine?: EngramPlaceDoc,
    generated?: { title: string; written?: boolean },
  ): Promise<TraceDoc | null> {
    const title = generated?.title;
    const key = traceKey(scope.workspaceId, traceId);
    let known = mine;
    let checked: Promise<EngramPlaceDoc | null> | undefined; // the place after `known`, read by the last check
    for (let i = 0; i < 20; i++) {
      // The document and the place after the newest one this writer knows, read together.
      const [doc, after] = await Promise.all([
        repo.find(scope.workspaceId, traceId),
        checked ?? (known ? findById(repo.places, placeKey(key, known.seq + 1)) : Promise.resolve(null)),
      ]);
      if (!doc) return null;
      const last =
        known && !after && doc.messageCount <= known.seq
          ? known
          : await newestPlace(scope.workspaceId, traceId, Math.max(doc.messageCount, after?.seq ?? 0));
      if (!last) return doc;
      const missing = memoryIds.filter((m) => !(doc.memoryIds ?? []).includes(m));
      // A generated title goes into the same write as the counters, while the trace has no title.
      const titled = title !== undefined && !doc.title && doc.titleSource !== 'manual';
      if (doc.messageCount >= last.seq && missing.length === 0 && !titled) return doc;
      const set = {
        ...(doc.messageCount < last.seq ? { messageCount: last.seq, cost: last.totals, updatedAt: new Date() } : {}),
        ...(missing.length ? { memoryIds: [...new Set([...(doc.memoryIds ?? []), ...memoryIds])] } : {}),
        ...(titled ? { title, titleSource: 'generated' as const, updatedAt: new Date() } : {}),
      };
      await repo.traces.updateOne({ _id: doc._id }, { $set: set });
      if (titled) generated!.written = true;
      known = last;
      checked = findById(repo.places, placeKey(key, last.seq + 1));
      if (!(await checked)) return { ...doc, ...set };
    }
    return repo.find(scope.workspaceId, traceId);
  }

  /** See `append` below; also answers the trace document the last converge check read. */
  async function appendEngram(
    scope: Scope,
    traceId: string,
    input: EngramInput,
    known: { absent?: boolean; traceExists?: boolean; title?: string } = {},
  ): Promise<{ engram: EngramDoc; trace: TraceDoc | null; existed: boolean; titled: boolean }> {
    // `known`: the caller has just found that input.id is not stored yet (or will take the stored
    // engram of that id: `existed`), or that the trace exists. `title`: set with the counters when
    // the trace has none (a run's generated title).
    if (input.id && !known.absent) {
      const existing = await repo.findEngram(scope.workspaceId, input.id);
      if (existing) return { engram: existing, trace: null, existed: true, titled: false };
    }
    const ws = scope.workspaceId;
    let hint = known.traceExists
      ? ((await repo.find(ws, traceId))?.messageCount ?? 0)
      : await ensureTrace(scope, traceId, input);
    const id = input.id ?? randomUUID();
    let doc: EngramDoc | null = null;
    let existed = false;
    for (let i = 0; i < 100 && !doc; i++) {
      const prev = await newestPlace(ws, traceId, hint);
      const next = engramDoc(scope, traceId, input, id, (prev?.seq ?? 0) + 1, prev?.totals ?? emptyCost());
      if (await claim(repo.engrams, next)) {
        doc = next;
        // The engram is stored: the request answers its success from here on (src/request-context.ts).
        markCommitted();
      } else {
        // Lost: this id was stored meanwhile (a retried call), or another writer holds the seq.
        doc = await repo.findEngram(ws, id);
        existed = doc !== null;
        if (!doc) {
          // The holder of that seq may not have written its place yet (or died before it): write it from its engram.
          if (!(await findById(repo.places, placeKey(traceKey(ws, traceId), next.seq)))) {
            const holder = await repo.engrams.findOne({ workspaceId: ws, traceId, seq: next.seq });
            if (holder) await place(holder);
          }
          hint = next.seq;
        }
      }
    }
    if (!doc) throw new Error(`could not claim the next place of trace ${traceId} after 100 tries`);
    await place(doc);
    const generated = known.title !== undefined ? { title: known.title, written: false } : undefined;
    const trace = await converge(scope, traceId, input.memoryIds ?? [], placeOf(doc), generated);
    if (generated?.written) await publishTitle(scope, traceId, generated.title);
    // The stream entry is a notification of what is stored: Redis failing here does not undo the write.
    await bestEffort(log, 'engram.created entry', published(scope, traceId, doc));
    return { engram: doc, trace, existed, titled: generated?.written ?? false };
  }

  return {
    get,

    async list(scope: Scope, q: TraceListQuery) {
      const filter: Filter<TraceDoc> & { workspaceId: string } = { workspaceId: scope.workspaceId };
      if (q.brain_id) filter.brainId = q.brain_id;
      if (q.receptor_id) filter.receptorId = q.receptor_id;
      if (q.user_id) filter.userId = q.user_id;
      if (q.neuron_id) {
        if (!scope.brainId) throw validationError('neuron_id needs brain scope: send X-Brain-Id');
        filter.neuronId = q.neuron_id;
        filter.brainId = scope.brainId;
      }
      if (q.trace_type !== 'all') filter.traceType = q.trace_type;
      // A substring is no index range: it is checked on the rows read in the sort's index order, at
      // most SEARCH_SCAN_MAX of them per page (a short page then carries has_more and next_cursor).
      const rx = q.search ? new RegExp(escapeRegex(q.search), 'i') : null;
      const scan = rx
        ? {
            match: (t: TraceDoc) => rx.test(t.traceId) || (t.title != null && rx.test(t.title)),
            scanMax: SEARCH_SCAN_MAX,
          }
        : undefined;
      if (q.created_after || q.created_before) {
        filter.createdAt = {
          ...(q.created_after ? { $gte: new Date(q.created_after) } : {}),
          ...(q.created_before ? { $lte: new Date(q.created_before) } : {}),
        };
      }
      return repo.list(filter, { field: SORT_FIELD[q.sort], dir: q.order === 'asc' ? 1 : -1 }, q, scan);
    },

    /** One engram by id in the caller's workspace (null when missing). */
    findEngram: (scope: Scope, id: string) => repo.findEngram(scope.workspaceId, id),

    /** The trace's engrams in order: the first `limit`, or with `newest` only the newest that many (a run's context). */
    async messages(scope: Scope, traceId: string, limit?: number, newest?: number): Promise<EngramDoc[]> {
      const t = await get(scope, traceId);
      const ws = scope.workspaceId;
      const last = await newestPlace(ws, traceId, t.messageCount);
      const total = last?.seq ?? 0;
      const to = Math.min(total, limit ?? Number.POSITIVE_INFINITY);
      const from = newest !== undefined ? Math.max(1, to - newest + 1) : 1;
      const n = to - from + 1;
      if (to === 0 || n <= 0) return [];
      // By key, in batches: the places from..to, then their engrams. A long range, or one whose places
      // are not all written (a trace from before places), is read with the query, and its missing
      // places written.
      if (n <= KEYED_HISTORY_MAX) {
        const key = traceKey(ws, traceId);
        const places = await inBatches(n, (i) => findById(repo.places, placeKey(key, from + i)));
        if (places.every(Boolean)) {
          const engrams = await inBatches(n, (i) => repo.findEngram(ws, places[i]!.engramId));
          if (engrams.every(Boolean)) return engrams as EngramDoc[];
        }
      }
      const rows = await repo.messages(ws, traceId, limit);
      if (rows.length <= KEYED_HISTORY_MAX) await inBatches(rows.length, (i) => place(rows[i]!));
      return newest !== undefined ? rows.slice(-newest) : rows;
    },

    /** A human turn from the API; source_type comes from the credential, never from the body. */
    addHumanMessage(scope: Scope, traceId: string, body: MessageCreateBody): Promise<EngramDoc> {
      return this.append(scope, traceId, {
        // With an Idempotency-Key the engram's id is derived from it: a retry finds the first attempt's engram.
        id: idempotentId('engram'),
        content: { type: 'human', content: body.content },
        metadata: body.metadata ?? {},
        sourceType: 'user',
        sourceId: scope.userId ?? scope.apiKeyId,
        memoryIds: body.memory_ids,
      });
    },

    /**
     * Appends one engram (idempotent when input.id is set) and publishes it on the trace stream.
     * Its sequence number is claimed by a unique insert (src/db/claims.ts), and it carries the
     * trace's running totals, so order and counters are exact under concurrent writers on MongoDB
     * and FerretDB alike; the trace document's counters converge to the newest engram's.
     */
    async append(
      scope: Scope,
      traceId: string,
      input: EngramInput,
      known: { absent?: boolean; traceExists?: boolean } = {},
    ): Promise<EngramDoc> {
      return (await appendEngram(scope, traceId, input, known)).engram;
    },

    /** `append`, also answering the trace document as the append's last check read it (null: an engram stored before, nothing read). */
    appendWithTrace: appendEngram,

    /**
     * Starts a trace whose id the platform just chose (an invoke without trace_id) with its first
     * engram: the trace document already carries that engram's counters, so this is two inserts
     * and the stream entry, with nothing to read first. Both inserts are claims: a trace id that
     * exists after all (or a retried call) falls back to what append does.
     */
    async start(scope: Scope, traceId: string, input: EngramInput & { id: string }): Promise<EngramDoc> {
      const first = engramDoc(scope, traceId, input, input.id, 1, emptyCost());
      // The three inserts go together (nobody else knows a trace id the platform just chose): an
      // invoke's 202 waits for them, so they cost one store round trip instead of two.
      const [traceNew, engramNew, placed] = await Promise.all([
        claim(repo.traces, traceDoc(scope, traceId, input, 1, first.totals!)),
        claim(repo.engrams, first),
        place(first),
      ]);
      // The id or the first place was taken (a retry, a trace that existed): the ordinary append,
      // without the place claimed here for an engram that is not this one.
      if (!engramNew) {
        // By `_id` alone (a key lookup): `placed` says this call inserted that place, and places are never rewritten.
        if (placed) await repo.places.deleteOne({ _id: placeOf(first)._id });
        return this.append(scope, traceId, input);
      }
      // The engram is the first of a trace that existed without engrams: its counters converge.
      if (!traceNew) await converge(scope, traceId, input.memoryIds ?? [], placeOf(first));
      // The stream entry is sent, not awaited: it is a notification (a reader replays the trace from
      // the store), and the connection keeps it ahead of every later entry this process writes.
      void bestEffort(log, 'engram.created entry', published(scope, traceId, first));
      return first;
    },

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
      read?: TraceDoc,
    ): Promise<TraceDoc> {
      // `read`: the trace as the caller has just read it (a run's reply append), so it is not read again.
      const before = read ?? (await get(scope, traceId));
      let t = before;
      if (source === 'manual' || before.titleSource !== 'manual') {
        const set = { title, titleSource: source, updatedAt: new Date() };
        await repo.traces.updateOne({ _id: before._id }, { $set: set });
        t = { ...before, ...set };
      }
      await publishTitle(scope, traceId, t.title);
      return t;
    },

    /** Publishes a run-state or other trace-scoped event (docs/streams.md, "Trace events"). */
    publish: (scope: Scope, traceId: string, event: Record<string, unknown>) =>
      streams.append(streams.keys.trace(scope.workspaceId, traceId), event),
    streamKey: (scope: Scope, traceId: string) => streams.keys.trace(scope.workspaceId, traceId),
  };
}
export type TraceService = ReturnType<typeof createTraceService>;
