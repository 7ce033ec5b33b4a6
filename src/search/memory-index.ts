/**
 * The embedded search index (docs/search.md): per workspace, a BM25
 * inverted index and an exact vector index over the same entries, updated entry by entry.
 * - Lexical: hand-written BM25, because the measured libraries were too slow or disagreed with
 *   BM25 (measured: minisearch agreement 0.62–0.77, flexsearch not BM25, orama 12–90 ms).
 * - Vector: exact inner-product search by `usearch` (SIMD, 1.6–2.3 ms over 100k × 100 dims against
 *   10 ms in plain JS) over one contiguous matrix per model; exact, so recall is 1 by construction.
 *   A filter is applied to the library's top candidates; when too few pass (a selective filter), the
 *   filtered entries are scanned in JS instead, which is fast because they are few.
 * test/unit/search-index.test.ts checks both legs against brute-force references.
 */
import usearch from 'usearch';

export type SearchType =
  | 'assets'
  | 'artifacts'
  | 'stakeholder_maps'
  | 'meetings'
  | 'action_plans'
  | 'receptors'
  | 'pathways'
  | 'neurons'
  | 'reflexes'
  | 'memories';

/** One searchable unit: a resource head (name, description) or a chunk of its text. */
export interface IndexEntry {
  /** Unique in the workspace: the resource id for a head, the chunk id for a chunk. */
  id: string;
  workspaceId: string;
  brainId: string | null;
  type: SearchType;
  resourceId: string;
  title: string;
  description: string;
  text: string;
  /** Folder path (assets, artifacts); '' elsewhere. */
  path: string;
  isActive?: boolean;
  visibility?: string;
  /** Memories: owner and tags; traces they belong to. */
  ownerType?: string | null;
  ownerId?: string | null;
  tags?: string[];
  vector?: Float32Array | null;
  vectorModel?: string | null;
  /** Memories: project and context from the metadata (recollection search filters). */
  project?: string | null;
  context?: string | null;
  /** Chunks: their position in the resource's text. */
  chunkIndex?: number;
  /** Where the resource is read through the API, its path in the type's listing (`neurons/<name>`), and its last change (ms). */
  url: string;
  displayPath: string;
  updatedAt: number;
}

export interface Scored {
  entry: IndexEntry;
  score: number;
}
export type EntryFilter = (e: IndexEntry) => boolean;

const WORD = /[\p{L}\p{N}]+/gu;
/** Lower-cased words (letters and digits); the same for documents and queries. */
export const tokenize = (text: string): string[] => text.toLowerCase().match(WORD) ?? [];

const K1 = 1.2;
const B = 0.75;

/** The top `k` of scored items, best first (ties by id, so orders are stable). */
function topK<T extends { score: number; entry: IndexEntry }>(items: T[], k: number): T[] {
  return items
    .sort((a, b) => b.score - a.score || (a.entry.id < b.entry.id ? -1 : a.entry.id > b.entry.id ? 1 : 0))
    .slice(0, k);
}

/** One term's postings: slots and term frequencies in growable typed arrays; `df` counts live entries. */
class Posting {
  slots = new Int32Array(4);
  tfs = new Uint16Array(4);
  count = 0;
  df = 0;
  push(slot: number, tf: number) {
    if (this.count === this.slots.length) {
      const slots = new Int32Array(this.count * 2);
      slots.set(this.slots);
      this.slots = slots;
      const tfs = new Uint16Array(this.count * 2);
      tfs.set(this.tfs);
      this.tfs = tfs;
    }
    this.slots[this.count] = slot;
    this.tfs[this.count] = Math.min(tf, 65535);
    this.count++;
    this.df++;
  }
}

/** Term frequencies of an entry; the title counts twice (a word in a name says more than one in a body). */
function termFrequencies(e: IndexEntry): Map<string, number> {
  const tf = new Map<string, number>();
  for (const part of [e.title, e.title, e.description, e.text])
    for (const t of tokenize(part)) tf.set(t, (tf.get(t) ?? 0) + 1);
  return tf;
}

/** Ranks before `other`: a higher score, or the same score and a smaller id. */
const better = (score: number, id: string, other: Scored) =>
  score > other.score || (score === other.score && id < other.entry.id);

/** The vectors of one model in a shard: row `slot` of one contiguous matrix (zeros where no entry is). */
class VectorTable {
  data: Float32Array;
  has = new Uint8Array(0);
  used = 0;
  live = 0;
  constructor(readonly dim: number) {
    this.data = new Float32Array(0);
  }

  set(slot: number, v: Float32Array) {
    if (v.length !== this.dim) return;
    if (slot >= this.has.length) {
      const cap = Math.max(64, slot + 1, this.has.length * 2);
      const data = new Float32Array(cap * this.dim);
      data.set(this.data);
      const has = new Uint8Array(cap);
      has.set(this.has);
      this.data = data;
      this.has = has;
    }
    this.data.set(v, slot * this.dim);
    if (!this.has[slot]) this.live++;
    this.has[slot] = 1;
    this.used = Math.max(this.used, slot + 1);
  }

  clear(slot: number) {
    if (!this.has[slot]) return;
    this.has[slot] = 0;
    this.live--;
    this.data.fill(0, slot * this.dim, (slot + 1) * this.dim);
  }

  dot(slot: number, q: Float32Array): number {
    let s = 0;
    const base = slot * this.dim;
    for (let i = 0; i < this.dim; i++) s += q[i] * this.data[base + i];
    return s;
  }
}

class Shard {
  entries: (IndexEntry | null)[] = [];
  private bySlotId = new Map<string, number>();
  private byResource = new Map<string, Set<number>>();
  /**
   * Postings in typed arrays (slot, term frequency), appended as entries arrive. A removed entry
   * leaves its postings behind as tombstones (its slot reads null and is skipped); slots are not
   * reused, and the shard is rebuilt once tombstones pass a quarter of it.
   */
  private postings = new Map<string, Posting>();
  private lengths = new Uint32Array(1024);
  private totalLength = 0;
  private live = 0;
  private dead = 0;
  vectors = new Map<string, VectorTable>();
  /** Scratch accumulators of a lexical query (reset after each one). */
  private acc = new Float64Array(0);
  private hitCount = new Uint16Array(0);

  get size() {
    return this.live;
  }

  add(e: IndexEntry) {
    this.remove(e.id);
    const slot = this.entries.length;
    this.entries.push(e);
    this.bySlotId.set(e.id, slot);
    let set = this.byResource.get(e.resourceId);
    if (!set) this.byResource.set(e.resourceId, (set = new Set()));
    set.add(slot);
    const tf = termFrequencies(e);
    let length = 0;
    for (const [t, n] of tf) {
      let p = this.postings.get(t);
      if (!p) this.postings.set(t, (p = new Posting()));
      p.push(slot, n);
      length += n;
    }
    if (slot >= this.lengths.length) {
      const l = new Uint32Array(this.lengths.length * 2);
      l.set(this.lengths);
      this.lengths = l;
    }
    this.lengths[slot] = length;
    this.totalLength += length;
    this.live++;
    if (e.vector && e.vectorModel) {
      let table = this.vectors.get(e.vectorModel);
      if (!table) this.vectors.set(e.vectorModel, (table = new VectorTable(e.vector.length)));
      table.set(slot, e.vector);
    }
  }

  remove(id: string) {
    const slot = this.bySlotId.get(id);
    if (slot === undefined) return;
    const e = this.entries[slot]!;
    for (const t of termFrequencies(e).keys()) {
      const p = this.postings.get(t);
      if (p && --p.df === 0) this.postings.delete(t);
    }
    this.totalLength -= this.lengths[slot];
    this.lengths[slot] = 0;
    this.entries[slot] = null;
    if (e.vectorModel) this.vectors.get(e.vectorModel)?.clear(slot);
    this.bySlotId.delete(id);
    this.byResource.get(e.resourceId)?.delete(slot);
    if (this.byResource.get(e.resourceId)?.size === 0) this.byResource.delete(e.resourceId);
    this.live--;
    this.dead++;
    if (this.dead > 1024 && this.dead > this.live / 4) this.compact();
  }

  /** Rebuilds the shard from its live entries (drops tombstones, renumbers slots). */
  private compact() {
    const live = this.entries.filter((x): x is IndexEntry => x !== null);
    this.entries = [];
    this.bySlotId.clear();
    this.byResource.clear();
    this.postings.clear();
    this.lengths = new Uint32Array(Math.max(1024, live.length));
    this.totalLength = 0;
    this.live = 0;
    this.dead = 0;
    this.vectors = new Map();
    for (const e of live) this.add(e);
  }

  removeResource(resourceId: string) {
    // Ids first: a removal may compact the shard, which renumbers slots.
    const ids = [...(this.byResource.get(resourceId) ?? [])].map((slot) => this.entries[slot]!.id);
    for (const id of ids) this.remove(id);
  }

  /** BM25 (k1 1.2, b 0.75) over the query's distinct terms; `all` keeps only entries that contain every term. */
  lexical(terms: string[], filter: EntryFilter, limit: number, all = false): Scored[] {
    const distinct = [...new Set(terms)];
    if (!distinct.length || !this.live) return [];
    const n = this.live;
    const avgdl = this.totalLength / n || 1;
    const cap = this.entries.length;
    if (this.acc.length < cap) {
      this.acc = new Float64Array(cap * 2);
      this.hitCount = new Uint16Array(cap * 2);
    }
    const { acc, hitCount } = this;
    const touched: number[] = [];
    for (const t of distinct) {
      const p = this.postings.get(t);
      if (!p) {
        if (all) {
          for (const slot of touched) {
            acc[slot] = 0;
            hitCount[slot] = 0;
          }
          return [];
        }
        continue;
      }
      const idf = Math.log(1 + (n - p.df + 0.5) / (p.df + 0.5));
      const norm = K1 * (1 - B);
      const perLength = (K1 * B) / avgdl;
      const { slots, tfs, count } = p;
      const entries = this.entries;
      for (let i = 0; i < count; i++) {
        const slot = slots[i];
        if (entries[slot] === null) continue; // a tombstone
        const tf = tfs[i];
        if (hitCount[slot] === 0) touched.push(slot);
        acc[slot] += idf * ((tf * (K1 + 1)) / (tf + norm + perLength * this.lengths[slot]));
        hitCount[slot]++;
      }
    }
    // The best `limit`, kept sorted (score desc, id asc); the filter is asked only about a slot that would enter.
    const best: Scored[] = [];
    for (const slot of touched) {
      const sc = acc[slot];
      const ok = !all || hitCount[slot] >= distinct.length;
      acc[slot] = 0;
      hitCount[slot] = 0;
      if (!ok) continue;
      const e = this.entries[slot]!;
      if (best.length >= limit && !better(sc, e.id, best[best.length - 1])) continue;
      if (!filter(e)) continue;
      let i = best.length;
      if (best.length < limit) best.push({ entry: e, score: sc });
      else i = best.length - 1;
      while (i > 0 && better(sc, e.id, best[i - 1])) {
        best[i] = best[i - 1];
        i--;
      }
      best[i] = { entry: e, score: sc };
    }
    return best;
  }

  /** Exact cosine similarity (vectors are unit length) against entries with a vector of the same model. */
  vector(q: Float32Array, model: string, filter: EntryFilter, limit: number): Scored[] {
    const table = this.vectors.get(model);
    if (!table || table.dim !== q.length || !table.live || limit <= 0) return [];
    const pass = (slot: number) => {
      const e = table.has[slot] ? this.entries[slot] : null;
      return e && filter(e) ? e : null;
    };
    const rows = table.used;
    const candidates = Math.min(rows, Math.max(limit * 4, 64));
    const out: Scored[] = [];
    const found = usearch.exactSearch(
      table.data.subarray(0, rows * table.dim),
      q,
      table.dim,
      candidates,
      usearch.MetricKind.IP,
    );
    for (const key of found.keys) {
      const slot = Number(key);
      const e = pass(slot);
      if (e) out.push({ entry: e, score: table.dot(slot, q) });
      if (out.length >= limit) break;
    }
    // Fewer than `limit` of the top candidates pass the filter, and more rows exist: scan the passing rows.
    if (out.length < limit && candidates < table.live) {
      out.length = 0;
      for (let slot = 0; slot < rows; slot++) {
        const e = pass(slot);
        if (e) out.push({ entry: e, score: table.dot(slot, q) });
      }
    }
    return topK(out, limit);
  }

  *scan(filter: EntryFilter): Generator<IndexEntry> {
    for (const e of this.entries) if (e && filter(e)) yield e;
  }
}

/** The in-process index: one shard per workspace (a workspace's queries never touch another's entries). */
export function createMemoryIndex() {
  const shards = new Map<string, Shard>();
  const shard = (ws: string) => {
    let s = shards.get(ws);
    if (!s) shards.set(ws, (s = new Shard()));
    return s;
  };
  return {
    /** Replaces every entry of one resource (its head and its chunks). */
    replaceResource(workspaceId: string, resourceId: string, entries: IndexEntry[]) {
      const s = shard(workspaceId);
      s.removeResource(resourceId);
      for (const e of entries) s.add(e);
    },
    removeResource(workspaceId: string, resourceId: string) {
      shards.get(workspaceId)?.removeResource(resourceId);
    },
    lexical(workspaceId: string, terms: string[], filter: EntryFilter, limit: number, all = false) {
      return shards.get(workspaceId)?.lexical(terms, filter, limit, all) ?? [];
    },
    vector(workspaceId: string, q: Float32Array, model: string, filter: EntryFilter, limit: number) {
      return shards.get(workspaceId)?.vector(q, model, filter, limit) ?? [];
    },
    scan(workspaceId: string, filter: EntryFilter): IndexEntry[] {
      return [...(shards.get(workspaceId)?.scan(filter) ?? [])];
    },
    size(workspaceId?: string) {
      if (workspaceId) return shards.get(workspaceId)?.size ?? 0;
      let n = 0;
      for (const s of shards.values()) n += s.size;
      return n;
    },
    /** Forgets every entry of a workspace (a deleted workspace). */
    dropWorkspace(workspaceId: string) {
      shards.delete(workspaceId);
    },
    clear() {
      shards.clear();
    },
  };
}
export type MemoryIndex = ReturnType<typeof createMemoryIndex>;

/** Reciprocal rank fusion (k = 60 by default): each leg contributes weight / (k + rank), ranks from 1. */
export function fuseRrf<T extends { entry: IndexEntry }>(legs: { name: string; hits: T[]; weight: number }[], k = 60) {
  const fused = new Map<string, { entry: IndexEntry; score: number; ranks: Record<string, number> }>();
  for (const leg of legs) {
    leg.hits.forEach((h, i) => {
      const cur = fused.get(h.entry.id) ?? { entry: h.entry, score: 0, ranks: {} };
      cur.score += leg.weight / (k + i + 1);
      cur.ranks[leg.name] = i + 1;
      fused.set(h.entry.id, cur);
    });
  }
  return topK([...fused.values()], fused.size);
}
