import type { Page, PageQuery } from '../kernel/store/paging.js';
import type { Engram, NewEngram, NewTrace, Trace, TraceListFilter, TraceSortField } from './model.js';

/**
 * Asked right before an engram's insert: whether its writer may still write into the trace (a
 * run's write lease, src/runs/trace-writes.ts). False refuses the write: nothing is stored.
 */
export type WriteGuard = () => Promise<boolean>;

/** How one append goes: its hint, the memories and title it brings, and who is told or asked on the way. */
export interface AppendOptions {
  hint: number;
  memoryIds: string[];
  title?: string;
  onStored?: () => void;
  guard?: WriteGuard;
}

/**
 * What an append answers: the engram, whether it was stored before, the trace as converged (null
 * when the counters were written without reading it: an append without memory ids or a title),
 * whether a title was set.
 */
export interface Appended {
  engram: Engram;
  existed: boolean;
  trace: Trace | null;
  titled: boolean;
}

/**
 * What the trace service asks of its store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter, engrams.mongo.ts its engram log): traces and their engram sequence. Every
 * operation is scoped to the workspace.
 */
export interface TraceStore {
  /** The trace of (workspace, trace id), metadata decoded; null when the workspace has none. */
  get(workspaceId: string, traceId: string): Promise<Trace | null>;
  /** The trace whose record id (`_id`, the `id` a list shows) this is, in the workspace. */
  getByRecordId(workspaceId: string, id: string): Promise<Trace | null>;
  /** Creates the trace (a claim on the unique (workspace, trace) key); false when it exists. */
  create(t: NewTrace): Promise<boolean>;
  /**
   * A page of the workspace's traces. `search`: a substring of the trace id or title, checked on
   * the rows read in the sort's order, up to a bounded number per page (a short page then carries
   * has_more and next_cursor).
   */
  list(
    workspaceId: string,
    f: TraceListFilter,
    sort: { field: TraceSortField; dir: 1 | -1 },
    q: PageQuery,
    search?: string,
  ): Promise<Page<Trace>>;
  /** Sets the trace's title (by its key and workspace). */
  setTitle(
    t: Pick<Trace, '_id' | 'workspaceId'>,
    set: { title: string; titleSource: 'manual' | 'generated'; updatedAt: Date },
  ): Promise<void>;
  /** The engram of that id in the workspace, metadata decoded. */
  findEngram(workspaceId: string, id: string): Promise<Engram | null>;
  /**
   * Appends one engram: claims the trace's next seq (the engram carries the trace's running
   * totals) and converges the trace's counters (and `title`, a generated one, while the trace has
   * none). `hint`: a message count the trace has reached. `onStored` runs as soon as the engram is
   * stored. An id stored before answers that engram.
   */
  appendEngram(input: NewEngram, o: AppendOptions): Promise<Appended>;
  /**
   * The first engram of a trace the platform just chose the id of: the trace (carrying that
   * engram's counters) and the engram, stored together. Null when the engram's id or the first
   * place was taken (a retry, a trace that existed): nothing of this call is left; append instead.
   */
  start(t: NewTrace, input: NewEngram): Promise<Engram | null>;
  /** The trace's engrams in order: the first `limit`, or with `newest` only the newest that many. */
  history(
    workspaceId: string,
    traceId: string,
    hint: number,
    o?: { limit?: number; newest?: number },
  ): Promise<Engram[]>;
  /**
   * A fork: the new trace holding copies of `source` (engrams 1..n of another trace, in order),
   * each keeping its seq and running totals; the trace appears only once its history is whole.
   * Idempotent for a retry with the same ids.
   */
  fork(t: NewTrace, source: Engram[], copyId: (seq: number) => string): Promise<Trace>;
  /**
   * Removes the engrams `jobIds` wrote from the end of the trace (double-texting's rollback) and
   * sets the trace's counters back to the engram before them. Answers how many were removed; none
   * when one of those newer engrams is another run's (they are then left as they are).
   */
  removeTail(workspaceId: string, traceId: string, jobIds: string[]): Promise<number>;
}
