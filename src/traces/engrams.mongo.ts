import type { Collection } from 'mongodb';
import { claim, newest, probeFrom } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import type { StoreBackend } from '../kernel/store/client.js';
import { AppError } from '../kernel/errors.js';
import {
  emptyCost,
  placeKey,
  traceKey,
  type CostSummary,
  type Engram,
  type EngramDoc,
  type EngramPlaceDoc,
  type NewEngram,
  type Trace,
  type TraceDoc,
} from './model.js';
import type { AppendOptions, Appended, TraceStore, WriteGuard } from './store.js';

/** How many traces' newest seq one process remembers as the start of its next walk (a number each). */
const REMEMBERED_TRACES = 10_000;
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

export const decodeTrace = ({ metadata, ...t }: TraceDoc): Trace => ({
  ...t,
  metadata: decodeBlob<Record<string, unknown>>(metadata, {}),
});
export const decodeEngram = ({ metadata, ...e }: EngramDoc): Engram => ({
  ...e,
  metadata: decodeBlob<Record<string, unknown>>(metadata, {}),
});

/** The stored engram at `seq`, carrying the trace's running totals (`prev`: those before it). */
function engramDocOf({ cost, metadata, ...e }: NewEngram, seq: number, prev: CostSummary): EngramDoc {
  return {
    ...e,
    seq,
    metadata: encodeBlob(metadata, 'metadata'),
    totals: {
      totalCostUsd: prev.totalCostUsd + cost.totalCostUsd,
      totalTokens: prev.totalTokens + cost.totalTokens,
      inputTokens: prev.inputTokens + cost.inputTokens,
      outputTokens: prev.outputTokens + cost.outputTokens,
    },
  };
}

/** A write its guard refused (a run whose job ended: cancelled, its trace passed on): 409, never retried. */
const writeRefused = (traceId: string) =>
  new AppError('CONFLICT', 409, `This run may no longer write into trace ${traceId}: its job has ended`);

/** A generated title to set with the counters while the trace has none (a run's first reply). */
interface Generated {
  title: string;
  written?: boolean;
}

/**
 * What the engram log's parts share: its collections, whether places are walked by key, the trace
 * document's reader, and this process's turns and remembered newest places (one instance of each
 * seen by every part).
 */
interface EngramLogContext {
  traces: Collection<TraceDoc>;
  engrams: Collection<EngramDoc>;
  places: Collection<EngramPlaceDoc>;
  // On `ferretdb` the newest place is walked by key; on `mongodb` read with the indexed query.
  keyed: boolean;
  find: (workspaceId: string, traceId: string) => Promise<TraceDoc | null>;
  /**
   * Contention avoidance within one process, beside the claim (which stays the one mechanism:
   * other processes still race through it, and it alone decides): this process's appends to one
   * trace take turns, and the newest place it saw of each trace is where its next walk starts.
   * A map's items finishing at once in one worker then neither lose claims to each other nor walk
   * up from the trace's lagging counter one key at a time. The remembered seq is only a hint: the
   * walk reads that place and the next by key, so a trace deleted and started again meanwhile
   * (its place missing) falls back to the newest engram as before.
   */
  turns: Map<string, Promise<unknown>>;
  newestSeen: Map<string, number>;
}

const seen = ({ newestSeen }: EngramLogContext, key: string, seq: number) => {
  if ((newestSeen.get(key) ?? 0) >= seq) return;
  newestSeen.delete(key); // re-inserted: the map's order is least recently advanced first
  newestSeen.set(key, seq);
  if (newestSeen.size > REMEMBERED_TRACES) newestSeen.delete(newestSeen.keys().next().value!);
};
/** Runs `fn` after every earlier append of this process to trace `key` has settled. */
function inTurn<T>({ turns }: EngramLogContext, key: string, fn: () => Promise<T>): Promise<T> {
  const mine = (turns.get(key) ?? Promise.resolve()).then(fn);
  const settled = mine.then(
    () => undefined,
    () => undefined,
  );
  turns.set(key, settled);
  void settled.then(() => {
    if (turns.get(key) === settled) turns.delete(key);
  });
  return mine;
}

/** An engram's place: its key, seq and the trace's totals through it. */
const placeOf = (e: EngramDoc): EngramPlaceDoc => ({
  _id: placeKey(traceKey(e.workspaceId, e.traceId), e.seq),
  engramId: e._id,
  seq: e.seq,
  totals: e.totals ?? emptyCost(),
});
/** Writes an engram's place; a duplicate is the same place, written by another writer who found it missing too. */
const place = ({ places }: EngramLogContext, e: EngramDoc) => claim(places, placeOf(e));

/**
 * The newest place of a trace, walked by key from the higher of `counted` (a message count the
 * trace had reached; its counters only lag behind its engrams) and the newest seq this process saw. A place missing at `hint` (a trace from before
 * places, or a writer that died between its engram and its place) is rebuilt from the newest
 * engram: the one scan left on this path, once.
 */
async function walkNewest(
  ctx: EngramLogContext,
  workspaceId: string,
  traceId: string,
  counted: number,
): Promise<EngramPlaceDoc | null> {
  const { engrams, places, newestSeen } = ctx;
  const key = traceKey(workspaceId, traceId);
  const hint = Math.max(counted, newestSeen.get(key) ?? 0);
  let [last, next] = await Promise.all([
    hint > 0 ? findById(places, placeKey(key, hint)) : Promise.resolve(null),
    findById(places, placeKey(key, hint + 1)),
  ]);
  if (hint > 0 && !last) {
    newestSeen.delete(key); // the place is missing: whatever this process remembered is no guide
    const e = await newest(engrams, { workspaceId, traceId }, 'seq');
    if (!e) return null;
    await place(ctx, e);
    last = placeOf(e);
    next = await findById(places, placeKey(key, e.seq + 1));
  }
  const newestPlace = next ? ((await probeFrom(places, (n) => placeKey(key, n), next.seq + 1)).at(-1) ?? next) : last;
  if (newestPlace) seen(ctx, key, newestPlace.seq);
  return newestPlace;
}

/** The newest engram's place (seq and running totals), or null for a trace without engrams. */
async function newestPlace(
  ctx: EngramLogContext,
  workspaceId: string,
  traceId: string,
  hint: number,
): Promise<EngramPlaceDoc | null> {
  if (ctx.keyed) return walkNewest(ctx, workspaceId, traceId, hint);
  const e = await newest(ctx.engrams, { workspaceId, traceId }, 'seq');
  return e ? placeOf(e) : null;
}

/** Whether the trace holds an engram after `seq` (its seq when it does): one key read, or one indexed read. */
const after = async (
  { keyed, places, engrams }: EngramLogContext,
  workspaceId: string,
  traceId: string,
  seq: number,
): Promise<{ seq: number } | null> =>
  keyed
    ? findById(places, placeKey(traceKey(workspaceId, traceId), seq + 1))
    : engrams.findOne({ workspaceId, traceId, seq: seq + 1 }, { projection: { seq: 1 } });

/**
 * Brings the trace document's counters up to the newest engram's running totals. Each writer
 * converges after its own insert, so when appends stop the document matches the engrams exactly.
 *
 * After its write a writer checks only whether an engram after the newest one it wrote for
 * exists (one read): if it does, its write may have been stale and it goes round again. A stale
 * write of an older writer that lands after this one is that writer's to repair: its own check
 * follows its write, which follows this writer's engram, so it finds it.
 */
async function converge(
  ctx: EngramLogContext,
  workspaceId: string,
  traceId: string,
  memoryIds: string[],
  mine?: EngramPlaceDoc,
  generated?: Generated,
): Promise<TraceDoc | null> {
  const { traces, find } = ctx;
  const title = generated?.title;
  let known = mine;
  let checked: Promise<{ seq: number } | null> | undefined; // the engram after `known`, read by the last check
  for (let i = 0; i < 20; i++) {
    // The document and the engram after the newest one this writer knows, read together.
    const [doc, next] = await Promise.all([
      find(workspaceId, traceId),
      checked ?? (known ? after(ctx, workspaceId, traceId, known.seq) : Promise.resolve(null)),
    ]);
    if (!doc) return null;
    const last =
      known && !next && doc.messageCount <= known.seq
        ? known
        : await newestPlace(ctx, workspaceId, traceId, Math.max(doc.messageCount, next?.seq ?? 0));
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
    await traces.updateOne({ _id: doc._id, workspaceId }, { $set: set });
    if (titled) generated!.written = true;
    known = last;
    checked = after(ctx, workspaceId, traceId, last.seq);
    if (!(await checked)) return { ...doc, ...set };
  }
  return find(workspaceId, traceId);
}

/** Claims the next seq for `input` (or finds the engram of its id stored meanwhile), starting from `hint`. */
async function claimSeq(
  ctx: EngramLogContext,
  input: NewEngram,
  hint: number,
  onStored?: () => void,
  guard?: WriteGuard,
) {
  const { engrams, places } = ctx;
  const { workspaceId: ws, traceId, _id: id } = input;
  for (let i = 0; i < 100; i++) {
    const prev = await newestPlace(ctx, ws, traceId, hint);
    const next = engramDocOf(input, (prev?.seq ?? 0) + 1, prev?.totals ?? emptyCost());
    if (guard && !(await guard())) throw writeRefused(traceId);
    if (await claim(engrams, next)) {
      onStored?.();
      return { doc: next, existed: false };
    }
    // Lost: this id was stored meanwhile (a retried call), or another writer holds the seq.
    const stored = await findById(engrams, id, { workspaceId: ws });
    if (stored) return { doc: stored, existed: true };
    // The holder of that seq may not have written its place yet (or died before it): write it from its engram.
    if (!(await findById(places, placeKey(traceKey(ws, traceId), next.seq)))) {
      const holder = await engrams.findOne({ workspaceId: ws, traceId, seq: next.seq });
      if (holder) await place(ctx, holder);
    }
    hint = next.seq;
  }
  throw new Error(`could not claim the next place of trace ${traceId} after 100 tries`);
}

/** One append, in its turn (see `appendEngram`). */
async function appendOne(ctx: EngramLogContext, input: NewEngram, o: AppendOptions): Promise<Appended> {
  const { doc, existed } = await claimSeq(ctx, input, o.hint, o.onStored, o.guard);
  await place(ctx, doc);
  seen(ctx, traceKey(doc.workspaceId, doc.traceId), doc.seq);
  if (!o.memoryIds.length && o.title === undefined) {
    // Counters only: one write, on the condition that the trace is behind this engram. Each
    // writer makes it after its own engram, and a write never lowers the counters, so the
    // writer of the newest engram leaves them at its totals whatever order the writes land in
    // (no read, no check after). No match: the trace is ahead already, or it is one of the traces
    // found only by the (workspace, trace) index; converge below tells which.
    const r = await ctx.traces.updateOne(
      { _id: traceKey(doc.workspaceId, doc.traceId), workspaceId: doc.workspaceId, messageCount: { $lt: doc.seq } },
      { $set: { messageCount: doc.seq, cost: placeOf(doc).totals, updatedAt: new Date() } },
    );
    if (r.matchedCount === 1) return { engram: decodeEngram(doc), existed, trace: null, titled: false };
  }
  const generated = o.title !== undefined ? { title: o.title, written: false } : undefined;
  const trace = await converge(ctx, doc.workspaceId, input.traceId, o.memoryIds, placeOf(doc), generated);
  return {
    engram: decodeEngram(doc),
    existed,
    trace: trace && decodeTrace(trace),
    titled: generated?.written ?? false,
  };
}

/** The history by the indexed query alone: ascending from seq 1, or the newest ones read descending. */
function queried(
  { engrams }: EngramLogContext,
  workspaceId: string,
  traceId: string,
  o: { limit?: number; newest?: number },
) {
  if (o.newest === undefined)
    return engrams
      .find({ workspaceId, traceId })
      .sort({ seq: 1 })
      .limit(o.limit ?? 0)
      .toArray();
  if (o.newest <= 0) return Promise.resolve([]);
  return engrams
    .find({ workspaceId, traceId, ...(o.limit !== undefined ? { seq: { $lte: o.limit } } : {}) })
    .sort({ seq: -1 })
    .limit(o.newest)
    .toArray()
    .then((rows) => rows.reverse());
}

/**
 * Appends: one engram in its turn, or a new trace's first. `start` takes the trace document
 * already encoded (the trace store's `start` encodes it), so it is typed here beside the contract's.
 */
function createEngramAppends(ctx: EngramLogContext): Pick<TraceStore, 'appendEngram'> & {
  start(trace: TraceDoc, input: NewEngram): Promise<Engram | null>;
} {
  const { traces, engrams, places } = ctx;
  return {
    /**
     * Appends one engram: claims the trace's next seq (a unique insert; the engram carries the
     * trace's running totals), writes its place and converges the trace's counters (and `title`,
     * a generated one, while the trace has none). `hint`: a message count the trace has reached.
     * `onStored` runs as soon as the engram is stored. An id stored before answers that engram.
     */
    appendEngram: (input: NewEngram, o: AppendOptions): Promise<Appended> =>
      inTurn(ctx, traceKey(input.workspaceId, input.traceId), () => appendOne(ctx, input, o)),

    /**
     * Starts a trace whose id the platform just chose with its first engram: the trace document
     * (already carrying that engram's counters), the engram and its place, inserted together (each
     * a claim). Null when the engram's id or the first place was taken (a retry, a trace that
     * existed): nothing of this call is left, and the caller appends as usual.
     */
    async start(trace: TraceDoc, input: NewEngram): Promise<Engram | null> {
      const first = engramDocOf(input, 1, emptyCost());
      const [traceNew, engramNew, placed] = await Promise.all([
        claim(traces, { ...trace, messageCount: 1, cost: first.totals!, memoryIds: [...new Set(input.memoryIds)] }),
        claim(engrams, first),
        place(ctx, first),
      ]);
      if (!engramNew) {
        // By `_id` alone (a key lookup): `placed` says this call inserted that place, and places are never rewritten.
        if (placed) await places.deleteOne({ _id: placeOf(first)._id });
        return null;
      }
      // The engram is the first of a trace that existed without engrams: its counters converge.
      if (!traceNew) await converge(ctx, first.workspaceId, first.traceId, input.memoryIds, placeOf(first));
      return decodeEngram(first);
    },
  };
}

/** A trace's history: its tail removed (a rolled-back run), its engrams read in order. */
function createEngramHistory(ctx: EngramLogContext): Pick<TraceStore, 'removeTail' | 'history'> {
  const { traces, engrams, places, keyed, newestSeen } = ctx;
  return {
    /**
     * Removes the engrams `jobIds` wrote from the end of the trace (double-texting's rollback,
     * docs/neurons.md): runs of one trace never write at the same time, so a run's engrams are the
     * trace's newest. Everything from the run's first engram on is removed (engrams and places), and
     * the trace's counters are set back to the engram before it. Answers how many were removed;
     * none when one of those newer engrams is another run's (they are then left as they are).
     */
    async removeTail(workspaceId: string, traceId: string, jobIds: string[]): Promise<number> {
      const firstOfRun = await engrams
        .find({ workspaceId, traceId, jobId: { $in: jobIds } })
        .sort({ seq: 1 })
        .limit(1)
        .toArray();
      const from = firstOfRun[0]?.seq;
      if (from === undefined) return 0;
      const tail = await engrams
        .find({ workspaceId, traceId, seq: { $gte: from } }, { projection: { _id: 1, seq: 1, jobId: 1 } })
        .toArray();
      if (tail.some((e) => !e.jobId || !jobIds.includes(e.jobId))) return 0;
      const key = traceKey(workspaceId, traceId);
      const top = Math.max(...tail.map((e) => e.seq));
      // Places first: a reader walking places then finds the end where the engrams end.
      const placeIds = Array.from({ length: top - from + 1 }, (_, i) => placeKey(key, from + i));
      await places.deleteMany({ _id: { $in: placeIds } });
      await engrams.deleteMany({ workspaceId, traceId, _id: { $in: tail.map((e) => e._id) } });
      newestSeen.delete(key);
      const before = from > 1 ? await engrams.findOne({ workspaceId, traceId, seq: from - 1 }) : null;
      await traces.updateOne(
        { _id: key, workspaceId },
        { $set: { messageCount: from - 1, cost: before?.totals ?? emptyCost(), updatedAt: new Date() } },
      );
      return tail.length;
    },

    /** The trace's engrams in order: the first `limit`, or with `newest` only the newest that many. */
    async history(
      workspaceId: string,
      traceId: string,
      hint: number,
      o: { limit?: number; newest?: number } = {},
    ): Promise<Engram[]> {
      if (o.limit === 0) return [];
      if (!keyed) return (await queried(ctx, workspaceId, traceId, o)).map(decodeEngram);
      const last = await walkNewest(ctx, workspaceId, traceId, hint);
      const total = last?.seq ?? 0;
      const to = Math.min(total, o.limit ?? Number.POSITIVE_INFINITY);
      const from = o.newest !== undefined ? Math.max(1, to - o.newest + 1) : 1;
      const n = to - from + 1;
      if (to === 0 || n <= 0) return [];
      // By key, in batches: the places from..to, then their engrams. A long range, or one whose places
      // are not all written (a trace from before places), is read with the query, and its missing
      // places written.
      if (n <= KEYED_HISTORY_MAX) {
        const key = traceKey(workspaceId, traceId);
        const ps = await inBatches(n, (i) => findById(places, placeKey(key, from + i)));
        if (ps.every(Boolean)) {
          const es = await inBatches(n, (i) => findById(engrams, ps[i]!.engramId, { workspaceId }));
          if (es.every(Boolean)) return (es as EngramDoc[]).map(decodeEngram);
        }
      }
      const rows = await engrams
        .find({ workspaceId, traceId })
        .sort({ seq: 1, createdAt: 1 })
        .limit(o.limit ?? 0)
        .toArray();
      if (rows.length <= KEYED_HISTORY_MAX) await inBatches(rows.length, (i) => place(ctx, rows[i]!));
      return (o.newest !== undefined ? rows.slice(-o.newest) : rows).map(decodeEngram);
    },
  };
}

/**
 * The engram sequence of traces: appends claim the next seq by unique insert (the engrams'
 * (workspace, trace, seq) index) and converge the trace document's counters to the newest engram's
 * running totals. Where the newest engram of a trace is: on `ferretdb` walked by key through its
 * places (FerretDB's SQLite backend scans the engram collection for any filter but `_id` alone); on
 * `mongodb` read with the indexed query (seq descending, limit 1). Places are written on both, so
 * either form reads a store the other wrote.
 */
export function createEngramLog(
  traces: Collection<TraceDoc>,
  engrams: Collection<EngramDoc>,
  places: Collection<EngramPlaceDoc>,
  backend: StoreBackend,
  find: (workspaceId: string, traceId: string) => Promise<TraceDoc | null>,
) {
  const ctx: EngramLogContext = {
    traces,
    engrams,
    places,
    keyed: backend === 'ferretdb',
    find,
    turns: new Map(),
    newestSeen: new Map(),
  };
  return {
    ...createEngramAppends(ctx), // appendEngram, start
    ...createEngramHistory(ctx), // removeTail, history
  };
}
