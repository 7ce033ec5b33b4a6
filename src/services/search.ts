import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { blockingReader } from '../redis.js';
import type { Config } from '../config.js';
import type { Repos } from '../db/index.js';
import type { Embedder } from '../embeddings/index.js';
import { AppError, validationError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Scope } from '../scope.js';
import {
  createMemoryIndex,
  tokenize,
  type EntryFilter,
  type IndexEntry,
  type MemoryIndex,
  type SearchType,
} from '../search/memory-index.js';
import { rankEntries, type HitExplain } from '../search/rank.js';
import {
  andTerms,
  CONTENT_GREP,
  LISTABLE_TYPES,
  HAS_PATH,
  HAS_VISIBILITY,
  haystack,
  KEYWORD_ONLY,
  needlesOf,
  parseQuery,
  SEARCH_TYPES,
  snippetOf,
  typeOf,
  type ParsedQuery,
} from '../search/query.js';
import { createSources, TYPE_OF_KIND, type ResourceKey, type Source } from '../search/sources.js';
import { compareIds, type StreamEntry, type Streams } from '../streams.js';
import type { SearchJobInput } from '../temporal/definitions.js';
import type { JobService } from './jobs.js';
import type { ResourceRef } from './resource-events.js';
import type { UsageService } from './usage.js';

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
export interface ListHit {
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
interface Scoping {
  brainId: string | null | undefined;
  types: Set<SearchType>;
  isActive?: boolean;
  visibility?: string;
  pathPrefix?: string;
  and: string[];
  extra?: EntryFilter;
}

const isHead = (e: IndexEntry) => e.id === e.resourceId;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Feed entries read and applied at once: one re-read per collection per batch. */
const FEED_BATCH = 1000;
/** How long the follower blocks on an idle feed, and how often it checks the feed's bounds and Redis's identity. */
const CHECK_MS = 2000;

/** What `/health` says about this process's index (docs/search.md, Start-up and health). */
export interface SearchIndexStatus {
  /** `building` until the first snapshot is in; searches wait at most SEARCH_BUILD_WAIT_MS for it, then 503. */
  state: 'building' | 'ready';
  /** A re-sync from the store is running (the previous index keeps answering meanwhile). */
  resyncing: boolean;
  /** The last feed entry applied, and how many feed entries were written after it (at the last look). */
  applied: string;
  lag: number | null;
  entries: number;
  builds: number;
  batches: number;
  events: number;
  last_build: { reason: string; started_at: string; ms: number | null; resources: number } | null;
}

/**
 * Discovery (docs/search.md): grep, sync and async search, browse, the resource tree and
 * recollection search, all answered from one in-process index per API (or worker) process.
 * The index is built in the background from a snapshot of the store (bulk reads, page by page),
 * then follows the platform-wide resource feed (every resource event of every workspace, in
 * order) in batches, re-reading the changed resources in bulk. A feed that skipped entries
 * (trimmed before they were read, or lost by Redis) or went backwards is detected by the entries'
 * `seq` and the feed's bounds, and the index re-syncs from the store. A search waits (bounded)
 * only until its own workspace's earlier writes are applied. Several processes each follow the
 * same feed and converge on the same entries.
 */
export function createSearchService(d: {
  repos: Repos;
  redis: Redis;
  streams: Streams;
  embedder: Embedder;
  jobs: JobService;
  usage: UsageService;
  config: Config;
  log: Logger;
}) {
  const { config: c } = d;
  const feedKey = d.streams.keys.feed();
  const sources = createSources(d.repos);
  const sourceOf = new Map<SearchType, Source>(sources.map((s) => [s.type, s]));
  const localHeads = d.embedder.model.startsWith('local/');
  let index: MemoryIndex = createMemoryIndex();
  let built = false;
  let resyncing = false;
  /** The last feed entry applied (its seq; null when it had none) and the Redis clock when the last snapshot began. */
  let applied: { id: string; seq: number | null } = { id: '0-0', seq: 0 };
  let snapshotMs = 0;
  let feedSeq: number | null = null;
  let runId: string | null = null;
  let loop: Promise<void> | null = null;
  let stopped = false;
  let reader: Redis | null = null;
  let held: Promise<void> | null = null;
  let parked = false;
  const stats = { builds: 0, batches: 0, events: 0, lastBuild: null as SearchIndexStatus['last_build'] };
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };

  /** Waits until `done()` holds, at most `ms` (woken by every applied batch and finished build); returns `done()`. */
  async function waitFor(done: () => boolean, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!done() && !stopped && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const fin = () => {
          waiters.delete(fin);
          clearTimeout(t);
          resolve();
        };
        const t = setTimeout(fin, Math.max(1, deadline - Date.now()));
        waiters.add(fin);
      });
    }
    return done();
  }

  /** Heads get vectors from the offline embedder (in process, free); chunks carry the vectors ingest stored. */
  async function withHeadVectors(entries: IndexEntry[]): Promise<IndexEntry[]> {
    if (!localHeads) return entries;
    const need = entries.filter(
      (e) => isHead(e) && !KEYWORD_ONLY.has(e.type) && !e.vector && `${e.title} ${e.description}`.trim(),
    );
    if (!need.length) return entries;
    const out = await d.embedder.embed(need.map((e) => `${e.title}. ${e.description}`));
    need.forEach((e, i) => {
      e.vector = out.vectors[i];
      e.vectorModel = out.model;
    });
    return entries;
  }

  /** Replaces the entries of each resource (a page of the walk, or a batch's re-reads), head vectors embedded in one call. */
  async function put(into: MemoryIndex, found: IndexEntry[][]): Promise<void> {
    await withHeadVectors(found.flat());
    for (const entries of found)
      if (entries.length) into.replaceResource(entries[0].workspaceId, entries[0].resourceId, entries);
  }

  /** Redis's run id: a new one means it restarted, and may have come back without its newest entries. */
  async function redisRunId(): Promise<string | null> {
    try {
      return /run_id:(\w+)/.exec(await d.redis.info('server'))?.[1] ?? null;
    } catch {
      return null;
    }
  }

  /**
   * A new index from a snapshot of the store: the feed's position is read first, then every source
   * is walked page by page (bulk reads); the follower applies what the feed got after that position.
   * The previous index keeps answering until the new one replaces it.
   */
  async function resync(reason: string): Promise<void> {
    const t0 = Date.now();
    resyncing = true;
    stats.lastBuild = { reason, started_at: new Date(t0).toISOString(), ms: null, resources: 0 };
    try {
      const [pos, id] = await Promise.all([d.streams.feedPosition(), redisRunId()]);
      const next = createMemoryIndex();
      let resources = 0;
      for (const s of sources) {
        for await (const page of s.all()) {
          if (stopped) return;
          await put(next, page);
          resources += page.length;
          stats.lastBuild.resources = resources;
        }
      }
      index = next;
      applied = { id: pos.id, seq: pos.seq };
      feedSeq = pos.seq;
      snapshotMs = pos.timeMs;
      runId = id;
      built = true;
      stats.builds++;
      stats.lastBuild.ms = Date.now() - t0;
      d.log.info(
        { reason, resources, entries: index.size(), ms: stats.lastBuild.ms },
        'search index built from the store',
      );
    } finally {
      resyncing = false;
      wake();
    }
  }

  /** Why a batch cannot be applied after `applied`: its entries' seq skip a number or step back. */
  function gapIn(batch: StreamEntry[]): string | null {
    let prev = applied.seq;
    for (const e of batch) {
      if (e.seq === undefined) {
        prev = null;
        continue;
      } // written before entries had a seq
      if (prev !== null && e.seq !== prev + 1) {
        return e.seq > prev + 1
          ? `the feed skipped entries ${prev + 1}..${e.seq - 1} (trimmed before they were read, or lost)`
          : `the feed went backwards (entry ${e.seq} after ${prev})`;
      }
      prev = e.seq;
    }
    return null;
  }

  /** The feed's position and Redis's identity (when the feed is idle, and every CHECK_MS): why to re-sync, or null. */
  async function check(): Promise<string | null> {
    const [pos, id] = await Promise.all([d.streams.feedPosition(), redisRunId()]);
    feedSeq = pos.seq;
    if (id && runId && id !== runId) return 'Redis restarted (it may have come back without its newest entries)';
    if (compareIds(pos.id, applied.id) < 0 || (applied.seq !== null && pos.seq < applied.seq))
      return `the feed went backwards (its newest entry is ${pos.id}, seq ${pos.seq}; applied ${applied.id})`;
    return null;
  }

  /** Applies a batch of feed entries: the changed resources re-read in bulk (one read per collection), then replaced or removed. */
  async function applyBatch(batch: StreamEntry[]): Promise<void> {
    const byType = new Map<SearchType, Map<string, ResourceKey>>();
    for (const e of batch) {
      const ws = String(e.data.workspace_id ?? '');
      const ref = e.data.resource as ResourceRef | undefined;
      const type = ref ? TYPE_OF_KIND[ref.kind] : undefined;
      if (!ws || !ref || !type || !sourceOf.has(type)) continue;
      let keys = byType.get(type);
      if (!keys) byType.set(type, (keys = new Map()));
      keys.set(ref.id, { workspaceId: ws, id: ref.id });
    }
    const read = await Promise.all(
      [...byType].map(async ([type, keys]) => ({
        keys: [...keys.values()],
        found: await sourceOf.get(type)!.loadMany([...keys.values()]),
      })),
    );
    const found: IndexEntry[][] = [];
    for (const r of read) {
      for (const k of r.keys) {
        const entries = r.found.get(k.id);
        if (entries) found.push(entries);
        else index.removeResource(k.workspaceId, k.id);
      }
    }
    await put(index, found);
  }

  /** Builds the index, then follows the feed in batches; re-syncs from the store when the feed lost entries or went backwards. */
  async function follow(): Promise<void> {
    reader = blockingReader(d.redis);
    let reason: string | null = 'start';
    let lastCheck = Date.now();
    while (!stopped) {
      try {
        if (held) {
          parked = true;
          wake();
          await held;
          parked = false;
        }
        if (reason) {
          if (built) d.log.warn({ reason }, 'search index: re-syncing from the store');
          await resync(reason);
          reason = null;
          lastCheck = Date.now();
          continue;
        }
        const batch = await d.streams.read(reader, feedKey, applied.id, CHECK_MS, FEED_BATCH);
        if (stopped) break;
        if (batch) {
          reason = gapIn(batch);
          if (reason) continue;
          await applyBatch(batch);
          const last = batch[batch.length - 1];
          applied = { id: last.id, seq: last.seq ?? null };
          stats.batches++;
          stats.events += batch.length;
          wake();
        }
        if (!batch || Date.now() - lastCheck >= CHECK_MS) {
          lastCheck = Date.now();
          reason = await check();
        }
      } catch (err) {
        if (stopped) break;
        d.log.warn(
          { err: (err as Error).message },
          'search index: building or following the resource feed failed; retrying',
        );
        await sleep(1000);
      }
    }
  }

  function stop() {
    stopped = true;
    reader?.disconnect();
    wake();
  }
  d.redis.once('end', stop);

  /** Starts the background build and the follower (once per process); returns at once. */
  function start(): void {
    if (stopped || loop) return;
    loop = follow();
  }

  /** The index's first build, waited for at most SEARCH_BUILD_WAIT_MS; then 503 with Retry-After. */
  async function whenBuilt(): Promise<void> {
    if (built) return;
    start();
    if (!(await waitFor(() => built, c.SEARCH_BUILD_WAIT_MS))) {
      throw new AppError('SERVICE_UNAVAILABLE', 503, 'The search index is still being built; retry after Retry-After', {
        'Retry-After': '2',
      });
    }
  }

  /**
   * Read your writes: waits (at most SEARCH_FRESH_WAIT_MS) until the index has applied the
   * workspace's newest feed entry, its mark. A workspace that wrote nothing since the last
   * snapshot, or whose writes are applied, does not wait; other workspaces' backlogs never count.
   */
  async function fresh(workspaceId: string): Promise<void> {
    await whenBuilt();
    const mark = await d.streams.feedMark(workspaceId);
    const done = () => !mark || compareIds(applied.id, mark) >= 0 || compareIds(mark, `${snapshotMs}-0`) < 0;
    if (!done()) await waitFor(done, c.SEARCH_FRESH_WAIT_MS);
  }

  /** For /health: the index's state, position and lag (entries written after the applied one, at the follower's last look). */
  function status(): SearchIndexStatus {
    return {
      state: built ? 'ready' : 'building',
      resyncing: built && resyncing,
      applied: applied.id,
      lag: feedSeq !== null && applied.seq !== null ? Math.max(0, feedSeq - applied.seq) : null,
      entries: index.size(),
      builds: stats.builds,
      batches: stats.batches,
      events: stats.events,
      last_build: stats.lastBuild,
    };
  }

  /**
   * Tests: a follower that falls behind. Resolves once the follower has stopped (after the batch
   * it is reading, at most CHECK_MS); it applies nothing until the returned function is called.
   */
  async function holdFollower(): Promise<() => void> {
    let release = () => {};
    held = new Promise<void>((r) => {
      release = () => {
        held = null;
        r();
      };
    });
    start();
    await waitFor(() => parked, 60_000);
    return release;
  }

  function entryFilter(s: Scoping): EntryFilter {
    const prefix = s.pathPrefix ? s.pathPrefix.replace(/^\/+|\/+$/g, '') : '';
    return (e) => {
      if (!s.types.has(e.type)) return false;
      if (s.brainId && e.brainId !== s.brainId && !(e.visibility && e.visibility !== 'brain')) return false;
      if (s.isActive !== undefined && e.isActive !== undefined && e.isActive !== s.isActive) return false;
      if (s.visibility && e.visibility !== s.visibility) return false;
      if (prefix && !(e.path === prefix || e.path.startsWith(`${prefix}/`))) return false;
      if (s.and.length) {
        const h = haystack(e);
        if (!s.and.every((t) => h.includes(t))) return false;
      }
      return !s.extra || s.extra(e);
    };
  }

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
    filter: EntryFilter,
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
    return rankEntries(index, {
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

  /** Heads of one type visible in the brain, newest first. */
  function list(scope: Scope, s: Scoping): IndexEntry[] {
    return index
      .scan(scope.workspaceId, (e) => isHead(e) && entryFilter(s)(e))
      .sort((a, b) => b.updatedAt - a.updatedAt || (a.title < b.title ? -1 : 1));
  }

  function checkFacetFilters(type: SearchType, r: { filters?: SearchRequest['filters']; path_prefix?: string }) {
    if (r.filters?.visibility && !HAS_VISIBILITY.has(type))
      throw validationError(
        `filters.visibility: ${type} have no visibility (it applies to ${[...HAS_VISIBILITY].join(', ')})`,
      );
    if (r.path_prefix && !HAS_PATH.has(type))
      throw validationError(`path_prefix: ${type} have no folder paths (it applies to assets and artifacts)`);
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
      const rows = list(scope, scoping);
      return {
        hits: rows.slice(r.offset, r.offset + r.limit).map((e) => ({ ...toListHit(e), similarity: 0, score: 0 })),
        total: rows.length,
      };
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

  return {
    start,
    stop,
    status,
    holdFollower,
    /** For tests and the bench: the process's index. */
    index: () => index,

    /** POST /v1/grep: list a type, or match a pattern case-insensitively on names and descriptions (and content for memories, artifacts). */
    async grep(scope: Scope, b: { query: string; limit: number }) {
      await fresh(scope.workspaceId);
      const p = parseQuery(b.query, { bareTerm: 'type' });
      const scoping: Scoping = { brainId: scope.brainId, types: new Set([p.type]), and: [] };
      if (p.listOnly) {
        return {
          type: p.type,
          results: list(scope, scoping)
            .slice(0, b.limit)
            .map((e) => ({ path: e.displayPath, title: e.title, snippet: toListHit(e).snippet, url: e.url })),
        };
      }
      const needle = p.pattern.toLowerCase();
      const byResource = new Map<string, { head?: IndexEntry; match?: IndexEntry; where: number; count: number }>();
      const visible = entryFilter(scoping);
      for (const e of index.scan(scope.workspaceId, visible)) {
        const slot = byResource.get(e.resourceId) ?? { where: 9, count: 0 };
        if (isHead(e)) slot.head = e;
        const fields = isHead(e)
          ? [e.title, e.description, ...(CONTENT_GREP.has(e.type) ? [e.text] : [])]
          : CONTENT_GREP.has(e.type)
            ? [e.text]
            : [];
        fields.forEach((f, i) => {
          const n = f.toLowerCase().split(needle).length - 1;
          if (!n) return;
          slot.count += n;
          // Where it matched first decides the order: the name, then the description, then content.
          const where = isHead(e) ? i : 3;
          if (where < slot.where) {
            slot.where = where;
            slot.match = e;
          }
        });
        byResource.set(e.resourceId, slot);
      }
      const rows = [...byResource.values()]
        .filter((r) => r.match && r.head)
        .sort((a, b) => a.where - b.where || b.count - a.count || (a.head!.title < b.head!.title ? -1 : 1));
      return {
        type: p.type,
        results: rows.slice(0, b.limit).map((r) => {
          const e = r.match!;
          const text = isHead(e)
            ? r.where === 0
              ? [e.title, e.description].filter(Boolean).join(' — ')
              : r.where === 1
                ? e.description
                : e.text
            : e.text;
          return {
            path: r.head!.displayPath,
            title: r.head!.title,
            snippet: snippetOf(text, [p.pattern]),
            url: r.head!.url,
          };
        }),
      };
    },

    /** POST /v1/search: one facet, ranked. */
    async search(scope: Scope, r: SearchRequest) {
      await fresh(scope.workspaceId);
      const p = parseQuery(r.query, { bareTerm: 'neurons' });
      const and = andTerms(r.keywords, r.grep_keywords);
      if (p.listOnly && and.length)
        throw validationError(
          `keywords: a list-only query ("${r.query}") takes no keywords; write ${p.type}/<pattern>`,
        );
      checkFacetFilters(p.type, r);
      const { hits, total } = await facet(scope, p, r, and);
      return {
        type: p.type,
        results: hits,
        normalized: normalize(hits),
        total,
        search_mode: KEYWORD_ONLY.has(p.type) ? 'lexical' : r.search_mode,
      };
    },

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

    /** GET/POST /v1/browse: the heads of one type visible in the brain, newest first. */
    async browse(scope: Scope, b: { type: string; limit: number; offset: number }) {
      await fresh(scope.workspaceId);
      const type = typeOf(b.type);
      const rows = list(scope, { brainId: scope.brainId, types: new Set([type]), and: [] });
      return {
        type,
        results: rows.slice(b.offset, b.offset + b.limit).map(toListHit),
        total: rows.length,
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
      const heads = index.scan(
        scope.workspaceId,
        (e) => isHead(e) && (e.brainId === b.brainId || !!(e.visibility && e.visibility !== 'brain')),
      );
      const level = (key: string | null, offset: number) => {
        const nodes = childrenOf(heads, key);
        const page = nodes.slice(offset, offset + b.limit);
        const more = offset + page.length < nodes.length;
        return {
          parent_key: key,
          nodes: page,
          total: nodes.length,
          next_cursor: more ? encodeCursor(key, offset + page.length) : null,
        };
      };
      if (b.parent_keys) return { brain_id: b.brainId, results: b.parent_keys.map((k) => level(k, 0)) };
      const key = b.parent_key ?? null;
      const offset = b.cursor ? decodeCursor(b.cursor, key) : 0;
      return { brain_id: b.brainId, ...level(key, offset) };
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
      const extra: EntryFilter = (e) =>
        e.ownerType === b.owner_type &&
        !!e.ownerId &&
        owners.has(e.ownerId.toLowerCase()) &&
        tags.every((t) => e.tags?.includes(t)) &&
        (!b.project || e.project === b.project) &&
        (!b.context || e.context === b.context) &&
        (!b.neuron_id || (e.ownerType === 'neuron' ? e.ownerId === b.neuron_id : true));
      const filter = entryFilter({ brainId: scope.brainId, types: new Set(['memories']), and: [], extra });
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
export type SearchService = ReturnType<typeof createSearchService>;

export interface TreeNode {
  key: string;
  label: string;
  kind: 'type' | 'folder' | 'resource';
  type: string;
  has_children: boolean;
  count?: number;
  id?: string;
  url?: string;
  updated_at?: string;
}

/** The children of one tree key among the visible heads (see `tree`). */
function childrenOf(heads: IndexEntry[], key: string | null): TreeNode[] {
  if (key === null) {
    return LISTABLE_TYPES.map((t) => {
      const count = heads.filter((e) => e.type === t).length;
      return { key: t, label: t, kind: 'type' as const, type: t, has_children: count > 0, count };
    });
  }
  if (key.startsWith('resource:')) return [];
  const slash = key.indexOf('/');
  const type = typeOf(slash < 0 ? key : key.slice(0, slash), LISTABLE_TYPES, 'parent_key');
  const folder = slash < 0 ? '' : key.slice(slash + 1).replace(/^\/+|\/+$/g, '');
  if (folder && !HAS_PATH.has(type)) throw validationError(`parent_key: ${type} have no folders`);
  const ofType = heads.filter((e) => e.type === type);
  const leaf = (e: IndexEntry): TreeNode => ({
    key: `resource:${e.resourceId}`,
    label: e.title,
    kind: 'resource',
    type,
    has_children: false,
    id: e.resourceId,
    url: e.url,
    updated_at: new Date(e.updatedAt).toISOString(),
  });
  const byTitle = (a: IndexEntry, b: IndexEntry) =>
    a.title.localeCompare(b.title) || (a.resourceId < b.resourceId ? -1 : 1);
  if (!HAS_PATH.has(type)) return ofType.sort(byTitle).map(leaf);
  const sub = new Map<string, number>();
  const here: IndexEntry[] = [];
  for (const e of ofType) {
    if (e.path === folder) {
      here.push(e);
      continue;
    }
    if (folder && !e.path.startsWith(`${folder}/`)) continue;
    const rest = folder ? e.path.slice(folder.length + 1) : e.path;
    const name = rest.split('/')[0];
    if (name) sub.set(name, (sub.get(name) ?? 0) + 1);
  }
  const folders: TreeNode[] = [...sub.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, count]) => ({
      key: `${type}/${folder ? `${folder}/` : ''}${name}`,
      label: name,
      kind: 'folder',
      type,
      has_children: true,
      count,
    }));
  return [...folders, ...here.sort(byTitle).map(leaf)];
}

const encodeCursor = (key: string | null, offset: number) =>
  Buffer.from(JSON.stringify({ k: key, o: offset })).toString('base64url');
function decodeCursor(cursor: string, key: string | null): number {
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { k?: unknown; o?: unknown };
    if ((c.k ?? null) === key && typeof c.o === 'number' && Number.isInteger(c.o) && c.o >= 0) return c.o;
  } catch {
    /* fall through */
  }
  throw validationError(
    'cursor: not a cursor of this parent_key (send the next_cursor you were given, with the same parent_key)',
  );
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
