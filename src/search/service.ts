import { randomUUID } from 'node:crypto';
import type { Redis } from '../kernel/redis.js';
import type { Config } from '../kernel/config.js';
import type { SearchSources } from './store.js';
import type { Embedder } from '../embeddings/index.js';
import { validationError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import type { Scope } from '../kernel/scope.js';
import type { SearchType } from './memory-index.js';
import {
  andTerms,
  KEYWORD_ONLY,
  LISTABLE_TYPES,
  needlesOf,
  parseQuery,
  SEARCH_TYPES,
  snippetOf,
  typeOf,
  type ParsedQuery,
} from './query.js';
import type { Streams } from '../kernel/streams.js';
import type { SearchJobInput } from '../temporal/definitions.js';
import type { JobService } from '../jobs/index.js';
import { weaviateHome, searchKind } from './home.js';
import { createSearchIndex, isHead } from './indexer.js';
import { createSearchRanking, type SearchHit, type SearchMode, type SearchRequest, type Scoping } from './ranking.js';
import { grepRows } from './grep.js';
import { childrenFrom, decodeCursor, encodeCursor, engineSource, headsSource } from './tree.js';
import type { UsageService } from '../usage/index.js';

export type { SearchHit } from './ranking.js';
/**
 * Discovery (docs/search.md): grep, sync and async search, browse, the resource tree and
 * recollection search, all answered from one in-process index per API (or worker) process.
 * The index is built in the background from a snapshot of the store (bulk reads, page by page),
 * then follows the platform-wide resource feed (every resource event of every workspace, each
 * workspace's in order in its partition) in batches, re-reading the changed resources in bulk. A feed that skipped entries
 * (trimmed before they were read, or lost by Redis) or went backwards is detected by the entries'
 * `seq` and the feed's bounds, and the index re-syncs from the store. A search waits (bounded)
 * only until its own workspace's earlier writes are applied. Several processes each follow the
 * same feed and converge on the same entries.
 */
export function createSearchService(d: SearchDeps) {
  const idx = createSearchIndex({
    ...d,
    home: searchKind(d.config) === 'weaviate' ? weaviateHome({ config: d.config, embedder: d.embedder }) : undefined,
  });
  const ranking = createSearchRanking({
    index: idx.index,
    embedder: d.embedder,
    usage: d.usage,
    config: d.config,
  });
  const ctx: SearchContext = { d, idx, ranking };

  return {
    start: idx.start,
    stop: idx.stop,
    status: idx.status,
    holdFollower: idx.holdFollower,
    resyncOnce: idx.resyncOnce,
    /** Where the index lives: `embedded` or `weaviate`. */
    kind: idx.kind,
    /** For tests and the bench: the process's index. */
    index: idx.index,
    ...createSearchLookups(ctx), // grep, search, recollections
    ...createAsyncSearch(ctx), // startAsync, facetFor, progress, finishAsync, failAsync
    ...createSearchBrowsing(ctx), // browse, tree
  };
}

/** What the search service was created from. */
interface SearchDeps {
  sources: SearchSources;
  redis: Redis;
  streams: Streams;
  embedder: Embedder;
  jobs: JobService;
  usage: UsageService;
  config: Config;
  log: Logger;
}

/** What every group of the search service shares: its deps, the process's index and the ranking over it. */
interface SearchContext {
  d: SearchDeps;
  idx: ReturnType<typeof createSearchIndex>;
  ranking: ReturnType<typeof createSearchRanking>;
}

/** Lookups answered at once: grep, the one-facet search and recollection search. */
function createSearchLookups(ctx: SearchContext) {
  const { idx } = ctx;
  const { fresh } = idx;
  const { entryFilter, rank, toHit, toListHit, listPage, checkFacetFilters, facet, normalize } = ctx.ranking;
  return {
    /** POST /v1/grep: list a type, or match a pattern case-insensitively on names and descriptions (and content for memories, artifacts). */
    async grep(scope: Scope, b: { query: string; limit: number }) {
      // Bad input is a 400 at once, without waiting for the index.
      const p = parseQuery(b.query, { bareTerm: 'type' });
      await fresh(scope.workspaceId);
      const scoping: Scoping = { brainId: scope.brainId, types: new Set([p.type]), and: [] };
      if (p.listOnly) {
        return {
          type: p.type,
          results: (await listPage(scope, scoping, { offset: 0, limit: b.limit })).entries.map((e) => ({
            path: e.displayPath,
            title: e.title,
            snippet: toListHit(e).snippet,
            url: e.url,
          })),
        };
      }
      const rows = await grepRows(idx.index(), scope.workspaceId, p.type, p.pattern, (w, headsOnly) =>
        entryFilter({ ...scoping, ...w }, headsOnly),
      );
      return {
        type: p.type,
        results: rows.slice(0, b.limit).map((r) => {
          const e = r.match;
          const text = isHead(e)
            ? r.where === 0
              ? [e.title, e.description].filter(Boolean).join(' — ')
              : r.where === 1
                ? e.description
                : e.text
            : e.text;
          return {
            path: r.head.displayPath,
            title: r.head.title,
            snippet: snippetOf(text, [p.pattern]),
            url: r.head.url,
          };
        }),
      };
    },

    /** POST /v1/search: one facet, ranked. */
    async search(scope: Scope, r: SearchRequest) {
      const p = parseQuery(r.query, { bareTerm: 'neurons' });
      const and = andTerms(r.keywords, r.grep_keywords);
      if (p.listOnly && and.length)
        throw validationError(
          `keywords: a list-only query ("${r.query}") takes no keywords; write ${p.type}/<pattern>`,
        );
      checkFacetFilters(p.type, r);
      await fresh(scope.workspaceId);
      const { hits, total } = await facet(scope, p, r, and);
      return {
        type: p.type,
        results: hits,
        normalized: normalize(hits),
        total,
        search_mode: KEYWORD_ONLY.has(p.type) ? 'lexical' : r.search_mode,
      };
    },

    /** POST /v1/recollections/search: memories of the given owners, by vector, full text or both. */
    async recollections(
      scope: Scope,
      b: {
        query: string;
        owner_type: string;
        owner_ids: string[];
        trace_id?: string;
        neuron_id?: string;
        project?: string;
        context?: string;
        tags?: string[];
        limit: number;
        threshold: number;
        strategy: 'vector' | 'qdrant' | 'fulltext' | 'hybrid';
      },
    ) {
      await fresh(scope.workspaceId);
      const owners = new Set(b.owner_ids.map((o) => o.toLowerCase()));
      if (b.owner_type === 'trace' && b.trace_id) owners.add(b.trace_id.toLowerCase());
      if (!owners.size) throw validationError('owner_ids: may be empty only with owner_type trace and a trace_id');
      const tags = b.tags ?? [];
      const neuronId = b.owner_type === 'neuron' ? b.neuron_id : undefined;
      const filter = entryFilter({
        brainId: scope.brainId,
        types: new Set(['memories']),
        and: [],
        memory: { ownerType: b.owner_type, ownerIds: [...owners], tags, project: b.project, context: b.context },
        extra: neuronId ? (e) => e.ownerId === neuronId : undefined,
      });
      const strategy = b.strategy === 'qdrant' ? 'vector' : b.strategy;
      const mode: SearchMode = strategy === 'fulltext' ? 'lexical' : strategy === 'vector' ? 'vector' : 'hybrid';
      const ranked = await rank(scope, b.query, filter, {
        mode,
        depth: Math.max(50, b.limit * 5),
        keywordOnly: false,
        threshold: mode === 'lexical' ? undefined : b.threshold,
      });
      const needles = needlesOf(b.query, []);
      const results = ranked.slice(0, b.limit).map((h) => ({
        memory_id: h.entry.resourceId,
        name: h.entry.title,
        snippet: toHit(h.entry, needles, h).snippet,
        similarity: h.similarity,
        score: Math.round(h.score * 1e9) / 1e9,
        owner_type: h.entry.ownerType ?? null,
        owner_id: h.entry.ownerId ?? null,
        tags: h.entry.tags ?? [],
        url: h.entry.url,
        ...(isHead(h.entry) ? {} : { chunk_id: h.entry.id }),
      }));
      return { strategy: b.strategy, results, total: results.length };
    },
  };
}

/** The async multi-facet search: its start and the activities of its `search` workflow. */
function createAsyncSearch(ctx: SearchContext) {
  const { d } = ctx;
  const { fresh } = ctx.idx;
  const { facet, normalize } = ctx.ranking;
  return {
    /** Starts the async multi-facet search (`search` workflow): one activity per type. */
    async startAsync(
      scope: Scope,
      q: {
        q: string;
        types: SearchType[];
        limit: number;
        offset: number;
        is_active?: boolean;
        search_mode: SearchMode;
      },
    ) {
      if (!q.q.trim()) throw validationError('q: must not be empty');
      const jobId = randomUUID();
      const { job } = await d.jobs.create(scope, { id: jobId, kind: 'search', brainId: scope.brainId });
      const input: SearchJobInput = {
        jobId,
        workspaceId: scope.workspaceId,
        brainId: scope.brainId ?? null,
        userId: scope.userId,
        apiKeyId: scope.apiKeyId,
        roles: [...scope.roles],
        q: q.q,
        types: q.types,
        limit: q.limit,
        offset: q.offset,
        isActive: q.is_active ?? null,
        searchMode: q.search_mode,
      };
      await d.jobs.startWorkflow(job, 'search', [input], `search "${q.q.slice(0, 60)}" over ${q.types.join(', ')}`);
      return jobId;
    },

    /** The activity of one facet of an async search. */
    async facetFor(i: SearchJobInput, type: SearchType) {
      await fresh(i.workspaceId);
      const scope = scopeOf(i);
      const p: ParsedQuery = { type, pattern: i.q, listOnly: false };
      const r: SearchRequest = {
        query: i.q,
        search_mode: i.searchMode,
        filters: i.isActive === null ? undefined : { is_active: i.isActive },
        limit: i.limit,
        offset: i.offset,
        explain: false,
      };
      const { hits, total } = await facet(scope, p, r, []);
      return { type, hits, total };
    },
    async progress(i: SearchJobInput, done: number, total: number, type: string) {
      await d.jobs.transition(i.workspaceId, i.jobId, {
        status: 'running',
        progress: Math.round((100 * done) / total),
        currentStep: `searched ${type} (${done}/${total})`,
      });
    },
    async finishAsync(i: SearchJobInput, facets: { type: SearchType; hits: SearchHit[]; total: number }[]) {
      const results: Record<string, SearchHit[]> = {};
      for (const f of facets) results[f.type] = f.hits;
      const all = facets.flatMap((f) => f.hits).sort((a, b) => b.score - a.score || b.similarity - a.similarity);
      const result = {
        results,
        total: facets.reduce((n, f) => n + f.hits.length, 0),
        totals: Object.fromEntries(facets.map((f) => [f.type, f.total])),
        normalized: normalize(all),
      };
      await d.jobs.finalize(i.workspaceId, i.jobId, {
        status: 'completed',
        progress: 100,
        currentStep: 'completed',
        result,
      });
      return { total: result.total };
    },
    async failAsync(i: SearchJobInput, reason: string) {
      await d.jobs.finalize(i.workspaceId, i.jobId, { status: 'failed', failedReason: reason, currentStep: 'failed' });
    },
  };
}

/** Browsing: a type's heads newest first, and the resource tree. */
function createSearchBrowsing(ctx: SearchContext) {
  const { idx } = ctx;
  const { fresh } = idx;
  const { entryFilter, toListHit, listPage } = ctx.ranking;
  return {
    /** GET/POST /v1/browse: the heads of one type visible in the brain, newest first. */
    async browse(scope: Scope, b: { type: string; limit: number; offset: number }) {
      await fresh(scope.workspaceId);
      const type = typeOf(b.type);
      const { entries, total } = await listPage(scope, { brainId: scope.brainId, types: new Set([type]), and: [] }, b);
      return {
        type,
        results: entries.map(toListHit),
        total,
        limit: b.limit,
        offset: b.offset,
      };
    },

    /**
     * POST /v1/browse/resource-tree: the root lists the types (with counts); `<type>` lists a type's
     * folders and resources (assets and artifacts by folder: `<type>/<folder>`); resources are leaves.
     * Each parent gets at most `limit` nodes; `cursor` continues one parent.
     */
    async tree(
      scope: Scope,
      b: { brainId: string; parent_key?: string; parent_keys?: string[]; limit: number; cursor?: string },
    ) {
      await fresh(scope.workspaceId);
      const index = idx.index();
      const visible = (types: SearchType[], where: Pick<Scoping, 'folder' | 'pathPrefix'> = {}) =>
        entryFilter({ brainId: b.brainId, types: new Set(types), and: [], ...where }, true);
      // An index that counts and groups itself answers each level with queries of that level; the
      // embedded one from one scan of the brain's heads.
      const src =
        index.paths && index.page
          ? engineSource(index, scope.workspaceId, (type, where) => visible([type], where))
          : headsSource(() => index.scan(scope.workspaceId, visible([...LISTABLE_TYPES])));
      const level = async (key: string | null, offset: number) => {
        const nodes = await childrenFrom(src, key);
        const page = nodes.slice(offset, offset + b.limit);
        const more = offset + page.length < nodes.length;
        return {
          parent_key: key,
          nodes: page,
          total: nodes.length,
          next_cursor: more ? encodeCursor(key, offset + page.length) : null,
        };
      };
      if (b.parent_keys)
        return { brain_id: b.brainId, results: await Promise.all(b.parent_keys.map((k) => level(k, 0))) };
      const key = b.parent_key ?? null;
      const offset = b.cursor ? decodeCursor(b.cursor, key) : 0;
      return { brain_id: b.brainId, ...(await level(key, offset)) };
    },
  };
}

function scopeOf(i: SearchJobInput): Scope {
  return {
    workspaceId: i.workspaceId,
    brainId: i.brainId ?? undefined,
    userId: i.userId,
    apiKeyId: i.apiKeyId,
    roles: i.roles as Scope['roles'],
    credential: 'system',
  };
}

export { SEARCH_TYPES };
