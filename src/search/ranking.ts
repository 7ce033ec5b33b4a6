import { randomUUID } from 'node:crypto';
import type { Config } from '../kernel/config.js';
import type { Embedder } from '../embeddings/index.js';
import { validationError } from '../kernel/errors.js';
import type { Scope } from '../kernel/scope.js';
import { newestFirst, whereTest, type EntryWhere, type IndexFilter, type SearchBackend } from './backend.js';
import { tokenize, type IndexEntry, type SearchType } from './memory-index.js';
import { rankEntries, type HitExplain } from './rank.js';
import { HAS_PATH, HAS_VISIBILITY, haystack, KEYWORD_ONLY, needlesOf, snippetOf, type ParsedQuery } from './query.js';
import { isHead } from './indexer.js';
import type { UsageService } from '../usage/index.js';

export type SearchMode = 'hybrid' | 'lexical' | 'vector';

/** One search hit (the search and grep hit of docs/search.md), with what a client needs to open it. */
export interface SearchHit {
  type: SearchType;
  id: string;
  path: string;
  title: string;
  snippet: string;
  url: string;
  similarity: number;
  score: number;
  chunk_id?: string;
  explain?: HitExplain;
}
interface ListHit {
  type: SearchType;
  id: string;
  path: string;
  title: string;
  snippet: string;
  url: string;
  updated_at: string;
  is_active?: boolean;
}

export interface SearchRequest {
  query: string;
  search_mode: SearchMode;
  filters?: { is_active?: boolean; visibility?: 'brain' | 'workspace' | 'core' };
  path_prefix?: string;
  keywords?: string | string[];
  grep_keywords?: string[];
  limit: number;
  offset: number;
  threshold?: number;
  explain: boolean;
  weights?: { lexical?: number; vector?: number };
}

/** Filters one search applies to index entries (besides workspace, which picks the shard). */
export interface Scoping {
  brainId: string | null | undefined;
  types: Set<SearchType>;
  isActive?: boolean;
  visibility?: string;
  pathPrefix?: string;
  /** A folder's own entries (the resource tree). */
  folder?: string;
  /** Grep's pattern (a necessary condition: see `EntryWhere.contains`). */
  contains?: string;
  /** Entries of these resources only. */
  resourceIds?: string[];
  and: string[];
  /** Recollection search: the memory fields (owner, tags, project, context). */
  memory?: Pick<EntryWhere, 'ownerType' | 'ownerIds' | 'tags' | 'project' | 'context'>;
  /** A check no engine filter expresses (applied to the engine's hits). */
  extra?: (e: IndexEntry) => boolean;
}

/** What a ranking shares: the deps its factory received. */
interface RankingContext {
  d: {
    index: () => SearchBackend;
    embedder: Embedder;
    usage: UsageService;
    config: Config;
  };
  /** The embedder runs in process (free): a query's embedding is not billed. */
  localHeads: boolean;
}

/**
 * How the index answers a query (docs/search.md): entries filtered by scope, ranked by BM25 and
 * exact vectors fused with RRF, and shaped into hits.
 */
export function createSearchRanking(d: RankingContext['d']) {
  const ctx: RankingContext = { d, localHeads: d.embedder.model.startsWith('local/') };
  const { rank } = createRankingLegs(ctx);
  const { list, listPage, facet } = createRankingPages(ctx, { rank });
  return { entryFilter, rank, toHit, toListHit, list, listPage, checkFacetFilters, facet, normalize };
}

function entryFilter(s: Scoping, headsOnly = false): IndexFilter {
  const where: EntryWhere = {
    types: [...s.types],
    brainId: s.brainId,
    isActive: s.isActive,
    visibility: s.visibility,
    pathPrefix: s.pathPrefix,
    folder: s.folder,
    contains: s.contains,
    resourceIds: s.resourceIds,
    headsOnly,
    ...s.memory,
  };
  const base = whereTest(where);
  const post = s.and.length > 0 || !!s.extra;
  const test = !post
    ? base
    : (e: IndexEntry) => {
        if (!base(e)) return false;
        if (s.and.length) {
          const h = haystack(e);
          if (!s.and.every((t) => h.includes(t))) return false;
        }
        return !s.extra || s.extra(e);
      };
  return { where, test, post };
}

/** The ranking legs: the query's vector (billed for a remote model) and the fused ranking of one text query. */
function createRankingLegs(ctx: RankingContext) {
  const { d, localHeads } = ctx;
  const { config: c } = d;

  async function queryVector(scope: Scope, text: string): Promise<{ vector: Float32Array; model: string } | null> {
    if (!text.trim()) return null;
    const out = await d.embedder.embed([text]);
    if (!localHeads) {
      // A remote model bills the query's tokens: one ledger row per query, like any embedding call.
      await d.usage.record({
        key: `search:${randomUUID()}`,
        workspaceId: scope.workspaceId,
        kind: 'embedding',
        modelId: out.model,
        usage: { inputTokens: out.tokens, outputTokens: 0, totalTokens: out.tokens },
        attribution: {
          brainId: scope.brainId ?? null,
          userId: scope.userId,
          apiKeyId: scope.apiKeyId,
          jobId: null,
          traceId: null,
          receptorId: null,
          neuronId: null,
          pathwayId: null,
        },
      });
    }
    return { vector: out.vectors[0], model: out.model };
  }

  /**
   * Ranks entries for one text query: BM25 and exact vectors (each the top `depth`), fused with
   * RRF (k, weights), the threshold applied after fusion to hits only the vector leg found, then
   * one hit per resource (its best entry).
   */
  async function rank(
    scope: Scope,
    text: string,
    filter: IndexFilter,
    o: {
      mode: SearchMode;
      depth: number;
      keywordOnly: boolean;
      threshold?: number;
      weights?: { lexical?: number; vector?: number };
    },
  ) {
    const useVector = o.mode !== 'lexical' && !o.keywordOnly;
    const q = useVector ? await queryVector(scope, text) : null;
    return rankEntries(d.index(), {
      workspaceId: scope.workspaceId,
      terms: tokenize(text),
      query: q,
      filter,
      depth: o.depth,
      lexical: o.mode !== 'vector' || o.keywordOnly,
      k: c.SEARCH_RRF_K,
      weights: {
        lexical: o.weights?.lexical ?? c.SEARCH_LEXICAL_WEIGHT,
        vector: o.weights?.vector ?? c.SEARCH_VECTOR_WEIGHT,
      },
      threshold: o.threshold,
    });
  }

  return { rank };
}

const toHit = (
  e: IndexEntry,
  needles: string[],
  extra: { score: number; similarity: number; explain?: HitExplain },
): SearchHit => ({
  type: e.type,
  id: e.resourceId,
  path: e.displayPath,
  title: e.title,
  snippet: snippetOf(isHead(e) ? [e.description, e.text].filter(Boolean).join(' — ') || e.title : e.text, needles),
  url: e.url,
  similarity: extra.similarity,
  score: extra.score,
  ...(isHead(e) ? {} : { chunk_id: e.id }),
  ...(extra.explain ? { explain: extra.explain } : {}),
});

const toListHit = (e: IndexEntry): ListHit => ({
  type: e.type,
  id: e.resourceId,
  path: e.displayPath,
  title: e.title,
  snippet: snippetOf([e.description, e.text].filter(Boolean).join(' — '), [], 200),
  url: e.url,
  updated_at: new Date(e.updatedAt).toISOString(),
  ...(e.isActive === undefined ? {} : { is_active: e.isActive }),
});

/** Lists and facets: a type's heads newest first (paged by the engine where it can) and one facet of a search. */
function createRankingPages(ctx: RankingContext, legs: Pick<ReturnType<typeof createRankingLegs>, 'rank'>) {
  const { d } = ctx;
  const { rank } = legs;

  /** Heads of one type visible in the brain, newest first. */
  async function list(scope: Scope, s: Scoping): Promise<IndexEntry[]> {
    return (await d.index().scan(scope.workspaceId, entryFilter(s, true))).sort(newestFirst);
  }

  /**
   * One page of `list` and its length: from the engine where it orders and counts them itself
   * (Weaviate's `page`: only the page's window leaves the engine), else a slice of `list`.
   */
  async function listPage(
    scope: Scope,
    s: Scoping,
    o: { offset: number; limit: number },
  ): Promise<{ entries: IndexEntry[]; total: number }> {
    const index = d.index();
    const page = index.page ? await index.page(scope.workspaceId, entryFilter(s, true), o) : null;
    if (page) return page;
    const rows = await list(scope, s);
    return { entries: rows.slice(o.offset, o.offset + o.limit), total: rows.length };
  }

  /** One facet of a search, sync or async. */
  async function facet(scope: Scope, p: ParsedQuery, r: SearchRequest, and: string[]) {
    const scoping: Scoping = {
      brainId: scope.brainId,
      types: new Set([p.type]),
      isActive: r.filters?.is_active,
      visibility: r.filters?.visibility,
      pathPrefix: r.path_prefix,
      and,
    };
    const filter = entryFilter(scoping);
    if (p.listOnly) {
      const { entries, total } = await listPage(scope, scoping, r);
      return { hits: entries.map((e) => ({ ...toListHit(e), similarity: 0, score: 0 })), total };
    }
    // Keywords alone (no pattern) rank by the keywords themselves.
    const text = p.pattern || and.join(' ');
    const ranked = await rank(scope, text, filter, {
      mode: r.search_mode,
      depth: Math.max(50, (r.offset + r.limit) * 5),
      keywordOnly: KEYWORD_ONLY.has(p.type),
      threshold: r.threshold,
      weights: r.weights,
    });
    const needles = needlesOf(p.pattern, and);
    return {
      hits: ranked.slice(r.offset, r.offset + r.limit).map((h) =>
        toHit(h.entry, needles, {
          score: Math.round(h.score * 1e9) / 1e9,
          similarity: h.similarity,
          explain: r.explain ? h.explain : undefined,
        }),
      ),
      total: ranked.length,
    };
  }

  return { list, listPage, facet };
}

function checkFacetFilters(type: SearchType, r: { filters?: SearchRequest['filters']; path_prefix?: string }) {
  if (r.filters?.visibility && !HAS_VISIBILITY.has(type))
    throw validationError(
      `filters.visibility: ${type} have no visibility (it applies to ${[...HAS_VISIBILITY].join(', ')})`,
    );
  if (r.path_prefix && !HAS_PATH.has(type))
    throw validationError(`path_prefix: ${type} have no folder paths (it applies to assets and artifacts)`);
}

/** The same hits in one shape whatever their type (the `normalized` shape is ours; docs/search.md). */
const normalize = (hits: (SearchHit | (ListHit & { similarity: number; score: number }))[]) =>
  hits.map((h) => ({
    type: h.type,
    id: h.id,
    title: h.title,
    path: h.path,
    snippet: h.snippet,
    url: h.url,
    score: h.score,
    similarity: h.similarity,
    ...('chunk_id' in h && h.chunk_id ? { chunk_id: h.chunk_id } : {}),
  }));
