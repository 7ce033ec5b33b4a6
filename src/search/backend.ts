import {
  createMemoryIndex,
  type EntryFilter,
  type IndexEntry,
  type MemoryIndex,
  type Scored,
  type SearchType,
} from './memory-index.js';

/**
 * What a query may narrow entries by, in a form every home of the index can apply itself (the
 * embedded index as a predicate, Weaviate as a filter it evaluates before ranking). Anything a
 * route filters on beyond these goes in `IndexFilter.test` and is applied to the engine's hits.
 */
export interface EntryWhere {
  types: SearchType[];
  /** The brain's entries and those visible beyond their brain (visibility workspace or core). */
  brainId?: string | null;
  /** Entries without an active flag pass either value. */
  isActive?: boolean;
  visibility?: string;
  /** Folder path: the folder itself or below it. */
  pathPrefix?: string;
  /** Folder path: that folder only ('' : no folder), not below it (a level of the resource tree). */
  folder?: string;
  /**
   * A case-insensitive substring that the title, the description or the text must contain: grep's
   * pattern, a necessary condition (grep then matches each field itself). An engine may apply a
   * weaker filter for it, and checks the predicate on what that lets through.
   */
  contains?: string;
  headsOnly?: boolean;
  /** Entries of these resources only. */
  resourceIds?: string[];
  /** Memories (recollection search): owner type, owner ids (lower case), tags (all), metadata project and context. */
  ownerType?: string;
  ownerIds?: string[];
  tags?: string[];
  project?: string;
  context?: string;
}

/** A query's filter: `where` (pushed to the engine) and `test`, the whole filter as a predicate (it includes `where`). */
export interface IndexFilter {
  where: EntryWhere;
  test: EntryFilter;
  /** True when `test` checks more than `where` says (keyword AND terms, a neuron narrowing): the engine over-fetches. */
  post: boolean;
}

/** The predicate of `where` (the embedded index's filter, and the reference the engine's filters are tested against). */
export function whereTest(w: EntryWhere): EntryFilter {
  const types = new Set(w.types);
  const prefix = w.pathPrefix ? w.pathPrefix.replace(/^\/+|\/+$/g, '') : '';
  const owners = w.ownerIds ? new Set(w.ownerIds) : null;
  const needle = w.contains?.toLowerCase();
  const resources = w.resourceIds ? new Set(w.resourceIds) : null;
  return (e) => {
    if (!types.has(e.type)) return false;
    if (w.headsOnly && e.id !== e.resourceId) return false;
    if (resources && !resources.has(e.resourceId)) return false;
    if (w.brainId && e.brainId !== w.brainId && !(e.visibility && e.visibility !== 'brain')) return false;
    if (w.isActive !== undefined && e.isActive !== undefined && e.isActive !== w.isActive) return false;
    if (w.visibility && e.visibility !== w.visibility) return false;
    if (prefix && !(e.path === prefix || e.path.startsWith(`${prefix}/`))) return false;
    if (w.folder !== undefined && e.path !== w.folder) return false;
    if (w.ownerType !== undefined && e.ownerType !== w.ownerType) return false;
    if (owners && !(e.ownerId && owners.has(e.ownerId.toLowerCase()))) return false;
    if (w.tags?.length && !w.tags.every((t) => e.tags?.includes(t))) return false;
    if (w.project && e.project !== w.project) return false;
    if (w.context && e.context !== w.context) return false;
    if (
      needle &&
      !(
        e.title.toLowerCase().includes(needle) ||
        e.description.toLowerCase().includes(needle) ||
        e.text.toLowerCase().includes(needle)
      )
    )
      return false;
    return true;
  };
}

/** The fields of an entry a `scan` may be limited to. */
export type EntryField = Exclude<keyof IndexEntry, 'workspaceId' | 'vector'>;

/** A page of entries and the count of all that match (`SearchBackend.page`). */
export interface EntryPage {
  entries: IndexEntry[];
  total: number;
}

/**
 * Browse's order: newest first, then by title (code units). The embedded index's lists sort a scan
 * with it; Weaviate's `page` re-sorts its window with it (and the resource id, so entries tied on
 * both keep one order from page to page).
 */
export const newestFirst = (a: IndexEntry, b: IndexEntry) => b.updatedAt - a.updatedAt || (a.title < b.title ? -1 : 1);

/**
 * The index interface (docs/search.md, "One index, two homes"): each call is scoped to one
 * workspace. `replaceResources` upserts every entry of each resource (its head and chunks) and drops
 * the entries it no longer has; `lexical` is BM25, `vector` cosine similarity against vectors of the
 * query's model, `scan` every matching entry. The ranking (src/search/rank.ts) is the same over both homes.
 */
export interface SearchBackend {
  readonly kind: 'embedded' | 'weaviate';
  replaceResources(resources: IndexEntry[][]): Promise<void>;
  removeResources(keys: { workspaceId: string; id: string }[]): Promise<void>;
  /** Removes every entry of a workspace (a deleted workspace; Weaviate: its tenant). */
  dropWorkspace(workspaceId: string): Promise<void>;
  lexical(workspaceId: string, terms: string[], f: IndexFilter, limit: number): Promise<Scored[]>;
  vector(workspaceId: string, q: Float32Array, model: string, f: IndexFilter, limit: number): Promise<Scored[]>;
  /**
   * Every matching entry. With `fields`, an engine may read only those fields of each entry (and
   * what its own check of the filter needs); the others are then empty. The embedded index returns
   * whole entries.
   */
  scan(workspaceId: string, f: IndexFilter, fields?: readonly EntryField[]): Promise<IndexEntry[]>;
  /**
   * One page of the matching entries newest first (`newestFirst`) and how many match, where the
   * engine can order and count them itself: null when it cannot express the whole filter (the
   * caller then sorts a `scan`, as it does for a home without `page`). The embedded index has none.
   */
  page?(workspaceId: string, f: IndexFilter, o: { offset: number; limit: number }): Promise<EntryPage | null>;
  /**
   * How many matching entries there are at each `path`, counted by the engine (only the counts
   * leave it: the resource tree's folders): null when it cannot express the whole filter (the
   * caller then counts a `scan`). The embedded index has none.
   */
  paths?(workspaceId: string, f: IndexFilter): Promise<Map<string, number> | null>;
  /** Entries held, at the last look (the embedded index knows it exactly). */
  size(): number;
}

/** The embedded index behind the interface. */
export function embeddedBackend(index: MemoryIndex = createMemoryIndex()): SearchBackend & { memory: MemoryIndex } {
  return {
    kind: 'embedded',
    memory: index,
    replaceResources(resources) {
      for (const entries of resources)
        if (entries.length) index.replaceResource(entries[0].workspaceId, entries[0].resourceId, entries);
      return Promise.resolve();
    },
    removeResources(keys) {
      for (const k of keys) index.removeResource(k.workspaceId, k.id);
      return Promise.resolve();
    },
    dropWorkspace(workspaceId) {
      index.dropWorkspace(workspaceId);
      return Promise.resolve();
    },
    lexical: (ws, terms, f, limit) => Promise.resolve(index.lexical(ws, terms, f.test, limit)),
    vector: (ws, q, model, f, limit) => Promise.resolve(index.vector(ws, q, model, f.test, limit)),
    scan: (ws, f) => Promise.resolve(index.scan(ws, f.test)),
    size: () => index.size(),
  };
}
