import type { Db, Filter } from 'mongodb';
import { claim } from '../kernel/store/claims.js';
import { escapeRegex, findById, type IndexSpec, type StoreBackend } from '../kernel/store/client.js';
import { encodeBlob } from '../kernel/store/codec.js';
import { page, pageIndexes, type Page, type PageQuery, type PageSort } from '../kernel/store/paging.js';
import { createEngramLog, decodeEngram, decodeTrace } from './engrams.mongo.js';
import {
  emptyCost,
  placeKey,
  traceKey,
  type Engram,
  type EngramDoc,
  type EngramPlaceDoc,
  type NewEngram,
  type NewTrace,
  type Trace,
  type TraceDoc,
  type TraceListFilter,
  type TraceSortField,
} from './model.js';
import type { TraceStore } from './store.js';

export const traceIndexes: IndexSpec[] = [
  { collection: 'traces', keys: { workspaceId: 1, traceId: 1 }, unique: true, name: 'ws_trace_unique' },
  // GET /v1/traces pages by (sort field, _id) (src/kernel/store/paging.ts): each sort under the workspace with
  // and without the trace type, and the default sort under each single equality filter.
  ...pageIndexes('traces', ['workspaceId', 'traceType'], ['createdAt', 'updatedAt', 'messageCount']),
  ...pageIndexes('traces', ['workspaceId'], ['createdAt', 'updatedAt', 'messageCount']),
  ...(['brainId', 'receptorId', 'userId'] as const).flatMap((f) =>
    pageIndexes('traces', ['workspaceId', f, 'traceType'], ['updatedAt']),
  ),
  ...pageIndexes('traces', ['workspaceId', 'brainId', 'neuronId', 'traceType'], ['updatedAt']),
  // The claim of an engram's place in its trace (src/kernel/store/claims.ts): one engram per (trace, seq).
  { collection: 'engrams', keys: { workspaceId: 1, traceId: 1, seq: 1 }, unique: true, name: 'ws_trace_seq_unique' },
];

/** Traces a search reads per page at most (docs/decisions.md, "Lists that page by key"). */
const SEARCH_SCAN_MAX = 5_000;

const encodeTrace = (t: NewTrace): TraceDoc => ({
  ...t,
  _id: traceKey(t.workspaceId, t.traceId),
  metadata: encodeBlob(t.metadata, 'metadata'),
});

/** The trace store on MongoDB (and FerretDB); every query filters by workspace (see engrams.mongo.ts for the engram sequence). */
export function createTraceRepo(db: Db, backend: StoreBackend = 'ferretdb'): TraceStore {
  const traces = db.collection<TraceDoc>('traces');
  const engrams = db.collection<EngramDoc>('engrams');
  const places = db.collection<EngramPlaceDoc>('engram_places');
  const findDoc = async (workspaceId: string, traceId: string) =>
    (await findById(traces, traceKey(workspaceId, traceId), { workspaceId, traceId })) ??
    traces.findOne({ workspaceId, traceId });
  const log = createEngramLog(traces, engrams, places, backend, findDoc);
  return {
    get: async (workspaceId: string, traceId: string): Promise<Trace | null> => {
      const t = await findDoc(workspaceId, traceId);
      return t && decodeTrace(t);
    },
    /** The trace whose record id (`_id`, the `id` a list shows) this is, in the workspace. */
    getByRecordId: async (workspaceId: string, id: string): Promise<Trace | null> => {
      const t = await findById(traces, id, { workspaceId });
      return t && decodeTrace(t);
    },
    /** Creates the trace (a claim on the unique (workspace, trace) index); false when it exists. */
    create: (t: NewTrace): Promise<boolean> => claim(traces, encodeTrace(t)),
    /**
     * A page of the workspace's traces. `search`: a substring of the trace id or title, checked on
     * the rows read in the sort's index order, at most SEARCH_SCAN_MAX of them per page (a short page
     * then carries has_more and next_cursor): a substring is no index range.
     */
    async list(
      workspaceId: string,
      f: TraceListFilter,
      sort: { field: TraceSortField; dir: 1 | -1 },
      q: PageQuery,
      search?: string,
    ): Promise<Page<Trace>> {
      const filter: Filter<TraceDoc> = { workspaceId };
      if (f.brainId) filter.brainId = f.brainId;
      if (f.receptorId) filter.receptorId = f.receptorId;
      if (f.userId) filter.userId = f.userId;
      if (f.neuronId) filter.neuronId = f.neuronId;
      if (f.traceType) filter.traceType = f.traceType;
      if (f.createdAfter || f.createdBefore) {
        filter.createdAt = {
          ...(f.createdAfter ? { $gte: f.createdAfter } : {}),
          ...(f.createdBefore ? { $lte: f.createdBefore } : {}),
        };
      }
      const rx = search ? new RegExp(escapeRegex(search), 'i') : null;
      const scan = rx
        ? {
            match: (t: TraceDoc) => rx.test(t.traceId) || (t.title != null && rx.test(t.title)),
            scanMax: SEARCH_SCAN_MAX,
          }
        : undefined;
      const p = await page(traces, filter, sort as PageSort, q, { scan });
      return { ...p, items: p.items.map(decodeTrace) };
    },
    /** Sets the trace's title (by its key and workspace). */
    setTitle: async (
      t: Pick<Trace, '_id' | 'workspaceId'>,
      set: { title: string; titleSource: 'manual' | 'generated'; updatedAt: Date },
    ): Promise<void> => {
      await traces.updateOne({ _id: t._id, workspaceId: t.workspaceId }, { $set: set });
    },
    findEngram: async (workspaceId: string, id: string): Promise<Engram | null> => {
      const e = await findById(engrams, id, { workspaceId });
      return e && decodeEngram(e);
    },
    appendEngram: log.appendEngram,
    /** The first engram of a trace the platform just chose the id of (see engrams.mongo.ts); null: append instead. */
    start: (t: NewTrace, input: NewEngram) => log.start(encodeTrace(t), input),
    history: log.history,
    /**
     * A fork: the new trace holding copies of `source` (engrams 1..n of another trace, in order).
     * A copy keeps its seq and running totals (the prefix is the same), so the engrams and their
     * places are inserted as they are, then the trace document with the last copy's counters: the
     * trace appears only once its history is whole. Every insert is a claim keyed by the new trace
     * (a retry with the same ids finds what the first attempt wrote).
     */
    async fork(t: NewTrace, source: Engram[], copyId: (seq: number) => string): Promise<Trace> {
      const docs: EngramDoc[] = source.map(({ metadata, ...e }) => ({
        ...e,
        _id: copyId(e.seq),
        workspaceId: t.workspaceId,
        traceId: t.traceId,
        metadata: encodeBlob(metadata, 'metadata'),
        totals: e.totals ?? emptyCost(),
      }));
      const key = traceKey(t.workspaceId, t.traceId);
      for (let i = 0; i < docs.length; i += 100) {
        const batch = docs.slice(i, i + 100);
        await Promise.all(
          batch.flatMap((d) => [
            claim(engrams, d),
            claim(places, { _id: placeKey(key, d.seq), engramId: d._id, seq: d.seq, totals: d.totals! }),
          ]),
        );
      }
      const last = docs.at(-1);
      const trace: NewTrace = {
        ...t,
        messageCount: last?.seq ?? 0,
        cost: last?.totals ?? emptyCost(),
        memoryIds: [...new Set(docs.flatMap((d) => d.memoryIds ?? []))],
      };
      await claim(traces, encodeTrace(trace));
      return decodeTrace((await findDoc(t.workspaceId, t.traceId))!);
    },
    removeTail: log.removeTail,
  };
}
