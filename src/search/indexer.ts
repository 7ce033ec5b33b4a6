import { randomUUID } from 'node:crypto';
import type { Config } from '../kernel/config.js';
import type { SearchSources } from './store.js';
import type { Embedder } from '../embeddings/index.js';
import { AppError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import { serverIdentity, type Redis } from '../kernel/redis.js';
import { embeddedBackend, type SearchBackend } from './backend.js';
import type { IndexEntry, SearchType } from './memory-index.js';
import { KEYWORD_ONLY } from './query.js';
import { createSources, TYPE_OF_KIND, type ResourceKey, type Source } from './sources.js';
import { compareIds, type FeedBatch, type FeedReader, type StreamEntry, type Streams } from '../kernel/streams.js';
import type { ResourceRef } from '../platform/index.js';
import type { IndexHome } from './home.js';

export const isHead = (e: IndexEntry) => e.id === e.resourceId;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Feed entries read at once from each partition and applied together: one re-read per collection per batch. */
const FEED_BATCH = 1000;
/** How long the follower blocks on an idle feed, and how often it checks the feed's bounds and Redis's identity. */
const CHECK_MS = 2000;
/** How often a process that is not the syncer reads the syncer's stored position while a search waits on it. */
const OBSERVE_MS = 50;
/**
 * The syncer writes only until this share of its lease has passed since its last renewal began: it
 * stops before the lease can lapse and be taken over (a write in flight, clocks a little apart).
 */
const LEASE_WRITE_SHARE = 0.6;

/** What `/health` says about this process's index (docs/search.md, Start-up and health). */
interface SearchIndexStatus {
  /** `building` until the first snapshot is in; searches wait at most SEARCH_BUILD_WAIT_MS for it, then 503. */
  state: 'building' | 'ready';
  /** A re-sync from the store is running (the previous index keeps answering meanwhile). */
  resyncing: boolean;
  /**
   * This process writes the feed into the index: always for the embedded index (each process has its
   * own); on Weaviate only the elected syncer (the others read its stored position).
   */
  syncer: boolean;
  /**
   * The newest feed entry applied (of any partition), and how many feed entries were written after
   * the applied ones, all partitions together (at the last look).
   */
  applied: string;
  lag: number | null;
  entries: number;
  builds: number;
  batches: number;
  events: number;
  last_build: { reason: string; started_at: string; ms: number | null; resources: number } | null;
}

/**
 * The search index of this process (docs/search.md): built in the background from a snapshot of
 * the store (bulk reads, page by page), then following the platform-wide resource feed (every
 * resource event of every workspace, each workspace's in order in its partition; src/kernel/feed.ts) in
 * batches, re-reading the changed resources in bulk. A partition that skipped entries (trimmed
 * before they were read, or lost by Redis) or went backwards is detected by the entries' `seq` and
 * the partition's bounds, and the index re-syncs from the store. A search waits (bounded) only
 * until its own workspace's earlier writes are applied.
 */
/** The feed entry that removes a deleted workspace's whole index (its Weaviate tenant). */
export const WORKSPACE_DELETED = 'workspace_deleted';

export function createSearchIndex(d: IndexDeps) {
  const home: IndexHome = d.home ?? embeddedHome();
  const feed = d.streams.feed;
  const n = feed.partitions;
  const sources = createSources(d.sources);
  const ctx: IndexContext = {
    d,
    c: d.config,
    home,
    feed,
    n,
    sources,
    sourceOf: new Map<SearchType, Source>(sources.map((s) => [s.type, s])),
    localHeads: d.embedder.model.startsWith('local/'),
    holder: randomUUID(),
    leaseMs: d.config.SEARCH_SYNC_LEASE_MS,
    lease: d.sources.syncLease,
    state: {
      built: false,
      resyncing: false,
      applied: Array.from({ length: n }, () => ({ id: '0-0', seq: 0 })),
      snapshotMs: new Array<number>(n).fill(0),
      feedSeq: null,
      runId: null,
      loop: null,
      stopped: false,
      reader: null,
      electing: false,
      term: null,
      held: null,
      parked: false,
      observing: false,
    },
    stats: { builds: 0, batches: 0, events: 0, lastBuild: null },
    waiters: new Set(),
  };
  const build = createIndexBuild(ctx); // resync, applyBatch, redisRunId
  const follower = createIndexFollower(ctx, build); // follow
  const election = createIndexElection(ctx, follower); // elect, observe
  const { start, stop, status, resyncOnce, holdFollower, fresh } = createIndexControl(ctx, {
    ...build,
    ...follower,
    ...election,
  });
  d.redis.once('end', () => void stop());

  return {
    start,
    stop,
    status,
    resyncOnce,
    holdFollower,
    fresh,
    /** The current index (a re-sync of the embedded index replaces it). */
    index: () => home.current(),
    /** Where the index lives: `embedded` or `weaviate`. */
    kind: home.kind,
  };
}

/** What the search index is created from. */
interface IndexDeps {
  sources: SearchSources;
  redis: Redis;
  streams: Streams;
  embedder: Embedder;
  config: Config;
  log: Logger;
  /** Where the index lives (src/search/home.ts); the embedded index when not given. */
  home?: IndexHome;
}

/** What changes while the index builds, follows and elects: one object, so every group sees the same values. */
interface IndexState {
  built: boolean;
  resyncing: boolean;
  /**
   * Per partition: the last feed entry applied (its seq; null when it had none), the clock of the
   * partition's Redis when the last snapshot began, and the partition's counter at the last look.
   */
  applied: { id: string; seq: number | null }[];
  snapshotMs: number[];
  feedSeq: number[] | null;
  runId: string | null;
  loop: Promise<void> | null;
  stopped: boolean;
  reader: FeedReader | null;
  /** Shared home (Weaviate): this process competes for the syncer's lease (start() was called). */
  electing: boolean;
  /** This process holds the syncer's lease and may write until `until` (performance.now()); null otherwise. */
  term: { until: number } | null;
  held: Promise<void> | null;
  parked: boolean;
  /** A process that is not the syncer reads the syncer's stored position (observe()). */
  observing: boolean;
}

/** What every group of the search index shares: its deps, what they derive, the mutable state and the waiters. */
interface IndexContext {
  d: IndexDeps;
  c: Config;
  home: IndexHome;
  feed: Streams['feed'];
  n: number;
  sources: Source[];
  sourceOf: Map<SearchType, Source>;
  localHeads: boolean;
  holder: string;
  leaseMs: number;
  lease: SearchSources['syncLease'];
  state: IndexState;
  stats: { builds: number; batches: number; events: number; lastBuild: SearchIndexStatus['last_build'] };
  waiters: Set<() => void>;
}

/** The sync's position as a home stores it (one entry per feed partition). */
const position = ({ state }: IndexContext) => ({
  partitions: state.applied.map((a, p) => ({ feedId: a.id, seq: a.seq, snapshotMs: state.snapshotMs[p] })),
  runId: state.runId,
});
/**
 * Whether this process may write into its home now: the embedded index and `npm run search:sync`
 * always; on a shared home that this process follows, only while it holds the syncer's lease.
 */
const mayWrite = ({ state }: IndexContext) =>
  !state.stopped && (state.term ? performance.now() < state.term.until : !state.electing);
/** Thrown before a write that this process may no longer make (it stopped, or lost the lease). */
const fence = (ctx: IndexContext) => {
  if (!mayWrite(ctx)) throw new Error('search index: this process no longer writes the index');
};
const wake = ({ waiters }: IndexContext) => {
  for (const w of [...waiters]) w();
};

/** Writing into the index: a full build from a snapshot of the store, and a batch of feed entries. */
function createIndexBuild(ctx: IndexContext) {
  const { d, home, feed, sources, sourceOf, localHeads, stats, state } = ctx;

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
  async function put(into: SearchBackend, found: IndexEntry[][]): Promise<void> {
    await withHeadVectors(found.flat());
    await into.replaceResources(found.filter((entries) => entries.length > 0));
  }

  /** Redis's run id (a cluster's: its masters'): a new one means a restart or a failover, which may have lost entries. */
  async function redisRunId(): Promise<string | null> {
    try {
      return await serverIdentity(d.redis);
    } catch {
      return null;
    }
  }

  /**
   * A new index from a snapshot of the store: the feed's position (every partition's) is read
   * first, then every source is walked page by page (bulk reads); the follower applies what the
   * feed got after that position.
   * The previous index keeps answering until the new one replaces it.
   */
  async function resync(reason: string): Promise<void> {
    const t0 = Date.now();
    state.resyncing = true;
    stats.lastBuild = { reason, started_at: new Date(t0).toISOString(), ms: null, resources: 0 };
    try {
      const [pos, id] = await Promise.all([feed.positions(), redisRunId()]);
      const next = await home.beginResync();
      const written0 = home.written?.();
      let resources = 0;
      const last = stats.lastBuild;
      // The store's next page is read while the previous one is written (one write in flight).
      let writing: Promise<void> = Promise.resolve();
      for (const s of sources) {
        for await (const page of s.all()) {
          await writing;
          if (!mayWrite(ctx)) return;
          writing = put(next.target, page).then(() => {
            resources += page.length;
            last.resources = resources;
          });
          // Awaited before the next page; a failure meanwhile must not be an unhandled rejection.
          writing.catch(() => {});
        }
      }
      await writing;
      fence(ctx);
      await next.commit();
      state.applied = pos.map((p) => ({ id: p.id, seq: p.seq }));
      state.feedSeq = pos.map((p) => p.seq);
      state.snapshotMs = pos.map((p) => p.timeMs);
      state.runId = id;
      state.built = true;
      stats.builds++;
      stats.lastBuild.ms = Date.now() - t0;
      fence(ctx);
      await home.save(position(ctx));
      d.log.info(
        {
          reason,
          resources,
          entries: home.current().size(),
          ms: stats.lastBuild.ms,
          ...(written0 === undefined ? {} : { written: (home.written?.() ?? 0) - written0 }),
        },
        'search index built from the store',
      );
    } finally {
      state.resyncing = false;
      wake(ctx);
    }
  }

  /** Applies a batch of feed entries: the changed resources re-read in bulk (one read per collection), then replaced or removed. */
  async function applyBatch(batch: StreamEntry[]): Promise<void> {
    const byType = new Map<SearchType, Map<string, ResourceKey>>();
    const dropped = new Set<string>();
    for (const e of batch) {
      const ws = String(e.data.workspace_id ?? '');
      // A deleted workspace (src/tenancy, the erase's `search` step): every entry of it goes.
      if (ws && e.data.action === WORKSPACE_DELETED) dropped.add(ws);
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
    const gone: ResourceKey[] = [];
    for (const r of read) {
      for (const k of r.keys) {
        const entries = r.found.get(k.id);
        if (entries) found.push(entries);
        else gone.push(k);
      }
    }
    const index = home.current();
    await withHeadVectors(found.flat());
    fence(ctx);
    if (gone.length) await index.removeResources(gone);
    await put(index, found);
    for (const ws of dropped) await index.dropWorkspace(ws);
  }

  return { resync, applyBatch, redisRunId };
}

/** Following the feed: the loop that builds, then applies the feed's batches and checks its bounds. */
function createIndexFollower(ctx: IndexContext, build: ReturnType<typeof createIndexBuild>) {
  const { d, home, feed, n, stats, state } = ctx;
  const { resync, applyBatch, redisRunId } = build;

  /** Why a partition's batch cannot be applied after its applied entry: its entries' seq skip a number or step back. */
  function gapIn({ partition, entries }: FeedBatch): string | null {
    let prev = state.applied[partition].seq;
    for (const e of entries) {
      if (e.seq === undefined) {
        prev = null;
        continue;
      } // written before entries had a seq
      if (prev !== null && e.seq !== prev + 1) {
        return e.seq > prev + 1
          ? `the feed skipped entries ${prev + 1}..${e.seq - 1} of partition ${partition} (trimmed before they were read, or lost)`
          : `the feed went backwards (entry ${e.seq} after ${prev} in partition ${partition})`;
      }
      prev = e.seq;
    }
    return null;
  }

  /** The feed's position and Redis's identity (when the feed is idle, and every CHECK_MS): why to re-sync, or null. */
  async function check(): Promise<string | null> {
    const [pos, id] = await Promise.all([feed.positions(), redisRunId()]);
    state.feedSeq = pos.map((p) => p.seq);
    if (id && state.runId && id !== state.runId)
      return 'Redis restarted (it may have come back without its newest entries)';
    for (const [p, at] of pos.entries()) {
      const done = state.applied[p];
      if (compareIds(at.id, done.id) < 0 || (done.seq !== null && at.seq < done.seq))
        return `the feed went backwards (partition ${p}: its newest entry is ${at.id}, seq ${at.seq}; applied ${done.id})`;
    }
    return null;
  }

  /** Builds the index, then follows the feed in batches; re-syncs from the store when the feed lost entries or went backwards. */
  async function follow(): Promise<void> {
    let reason: string | null = 'start';
    let lastCheck = Date.now();
    // A home that keeps its index (Weaviate) resumes from its stored position: no rebuild, searches at once.
    while (mayWrite(ctx) && reason === 'start') {
      try {
        await home.open();
        const [pos, id] = await Promise.all([home.load(), redisRunId()]);
        // A position of another partition count (RESOURCE_FEED_PARTITIONS changed) is re-synced whole.
        if (pos && pos.partitions.length === n && !(pos.runId && id && pos.runId !== id)) {
          state.applied = pos.partitions.map((p) => ({ id: p.feedId, seq: p.seq }));
          state.snapshotMs = pos.partitions.map((p) => p.snapshotMs);
          state.runId = id;
          state.built = true;
          d.log.info(
            { applied: state.applied.map((a) => a.id) },
            'search index: resuming the sync from its stored position',
          );
          wake(ctx);
          reason = null;
        } else break;
      } catch (err) {
        if (!mayWrite(ctx)) break;
        d.log.warn({ err: (err as Error).message }, 'search index: opening its home failed; retrying');
        await sleep(1000);
      }
    }
    while (mayWrite(ctx)) {
      try {
        if (state.held) {
          // A held follower reads nothing, not even a read already in flight (a cluster reader
          // keeps one per partition): its reader is closed until the hold ends.
          state.reader?.close();
          state.reader = null;
          state.parked = true;
          wake(ctx);
          await state.held;
          state.parked = false;
        }
        if (reason) {
          if (state.built) d.log.warn({ reason }, 'search index: re-syncing from the store');
          await resync(reason);
          reason = null;
          lastCheck = Date.now();
          continue;
        }
        state.reader ??= feed.reader();
        const read = await state.reader.read(
          state.applied.map((a) => a.id),
          CHECK_MS,
          FEED_BATCH,
        );
        if (!mayWrite(ctx)) break;
        if (read.length) {
          reason = read.map(gapIn).find((r) => r !== null) ?? null;
          if (reason) continue;
          // Partitions hold different workspaces: their entries are applied together in one batch.
          const batch = read.flatMap((b) => b.entries);
          await applyBatch(batch);
          for (const b of read) {
            const last = b.entries[b.entries.length - 1];
            state.applied[b.partition] = { id: last.id, seq: last.seq ?? null };
          }
          fence(ctx);
          await home.save(position(ctx));
          stats.batches++;
          stats.events += batch.length;
          wake(ctx);
        }
        if (!read.length || Date.now() - lastCheck >= CHECK_MS) {
          lastCheck = Date.now();
          reason = await check();
          await home.refresh();
        }
      } catch (err) {
        if (!mayWrite(ctx)) break;
        d.log.warn(
          { err: (err as Error).message },
          'search index: building or following the resource feed failed; retrying',
        );
        await sleep(1000);
      }
    }
  }

  return { follow };
}

/** The syncer's election on a shared home (Weaviate), and the stored position read by the other processes. */
function createIndexElection(ctx: IndexContext, follower: ReturnType<typeof createIndexFollower>) {
  const { d, home, n, holder, leaseMs, lease, waiters, state } = ctx;
  const { follow } = follower;

  /**
   * Shared home (Weaviate): competes for the syncer's lease until the process stops; while it holds
   * the lease it is the syncer (follow() from the stored position, renewing the lease), else it
   * tries again every fifth of the lease. Searches on a process that is not the syncer read the
   * syncer's stored position instead (observe()).
   */
  async function elect(): Promise<void> {
    let key: string | null = null;
    while (!state.stopped) {
      try {
        await home.open();
        key ??= `search-sync:${home.name()}`;
        const t0 = performance.now();
        if (await lease.take(key, holder, leaseMs)) {
          state.term = { until: t0 + leaseMs * LEASE_WRITE_SHARE };
          await serve(key);
          continue;
        }
        // Another process syncs: its stored position is what /health and the next search start from.
        await adoptStored();
      } catch (err) {
        if (state.stopped) break;
        d.log.warn({ err: (err as Error).message }, 'search sync: taking the syncer lease failed; retrying');
      }
      await sleep(leaseMs / 5);
    }
  }

  /** This process is the syncer: it follows the feed into the index while it keeps the lease (renewed every fifth of it). */
  async function serve(key: string): Promise<void> {
    d.log.info({ index: key }, 'search sync: this process is the syncer');
    let renewing = false;
    const renew = setInterval(() => {
      if (renewing || !state.term) return;
      renewing = true;
      const t0 = performance.now();
      lease
        .renew(key, holder, leaseMs)
        .then((kept) => {
          if (!state.term) return;
          if (kept) state.term.until = t0 + leaseMs * LEASE_WRITE_SHARE;
          else {
            state.term.until = 0;
            state.reader?.close();
            d.log.warn({ index: key }, 'search sync: the syncer lease was taken over; this process stops writing');
          }
        })
        .catch((err: unknown) =>
          d.log.warn({ err: (err as Error).message }, 'search sync: renewing the syncer lease failed'),
        )
        .finally(() => (renewing = false));
    }, leaseMs / 5);
    try {
      await follow();
    } finally {
      clearInterval(renew);
      const kept = state.term !== null && performance.now() < state.term.until;
      state.term = null;
      state.feedSeq = null;
      state.reader?.close();
      state.reader = null;
      // Stopping while the lease is still ours: give it back, so another process takes over at once.
      if (kept) await lease.release(key, holder).catch(() => {});
      d.log.info({ index: key }, 'search sync: this process is no longer the syncer');
      wake(ctx);
    }
  }

  /**
   * Shared home, not the syncer: while searches wait, reads the syncer's stored position (the home's,
   * written after the entries it covers) every OBSERVE_MS; its applied entries and snapshot clocks
   * are what `fresh()` and `whenBuilt()` compare against.
   */
  async function adoptStored(): Promise<void> {
    const pos = await home.load();
    if (!state.term && pos && pos.partitions.length === n) {
      state.applied = pos.partitions.map((p) => ({ id: p.feedId, seq: p.seq }));
      state.snapshotMs = pos.partitions.map((p) => p.snapshotMs);
      state.built = true;
      wake(ctx);
    }
    await home.refresh();
  }
  function observe(): void {
    if (state.observing || !home.shared || state.term || state.stopped) return;
    state.observing = true;
    void (async () => {
      let warned = 0;
      try {
        while (!state.stopped && !state.term && waiters.size > 0) {
          try {
            await home.open();
            await adoptStored();
          } catch (err) {
            if (Date.now() - warned > 10_000) {
              warned = Date.now();
              d.log.warn({ err: (err as Error).message }, "search index: reading the syncer's position failed");
            }
          }
          await sleep(OBSERVE_MS);
        }
      } finally {
        state.observing = false;
      }
    })();
  }

  return { elect, observe };
}

/** What the service calls: start and stop, the waits of a search (first build, read your writes), status and tests' holds. */
function createIndexControl(
  ctx: IndexContext,
  steps: Pick<ReturnType<typeof createIndexBuild>, 'resync'> &
    ReturnType<typeof createIndexFollower> &
    ReturnType<typeof createIndexElection>,
) {
  const { c, home, feed, stats, waiters, state } = ctx;
  const { resync, follow, elect, observe } = steps;

  /** Waits until `done()` holds, at most `ms` (woken by every applied batch and finished build); returns `done()`. */
  async function waitFor(done: () => boolean, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!done() && !state.stopped && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const fin = () => {
          waiters.delete(fin);
          clearTimeout(t);
          resolve();
        };
        const t = setTimeout(fin, Math.max(1, deadline - Date.now()));
        waiters.add(fin);
        observe();
      });
    }
    return done();
  }

  /** Stops following (and gives the syncer lease back when it holds it); resolves once that is done, at most 2 s. */
  async function stop(): Promise<void> {
    state.stopped = true;
    state.reader?.close();
    wake(ctx);
    if (state.loop) await Promise.race([state.loop.catch(() => {}), sleep(2000)]);
  }
  /** Starts the background build and the follower (once per process); returns at once. */
  function start(): void {
    if (state.stopped || state.loop) return;
    state.electing = home.shared;
    state.loop = state.electing ? elect() : follow();
  }

  /** The index's first build, waited for at most SEARCH_BUILD_WAIT_MS; then 503 with Retry-After. */
  async function whenBuilt(): Promise<void> {
    if (state.built) return;
    start();
    if (!(await waitFor(() => state.built, c.SEARCH_BUILD_WAIT_MS))) {
      throw new AppError('SERVICE_UNAVAILABLE', 503, 'The search index is still being built; retry after Retry-After', {
        'Retry-After': '2',
      });
    }
  }

  /**
   * Read your writes: waits (at most SEARCH_FRESH_WAIT_MS) until the index has applied the
   * workspace's newest feed entry, its mark (in the workspace's partition). A workspace that wrote
   * nothing since the last snapshot, or whose writes are applied, does not wait; other workspaces'
   * backlogs never count. Any process's writes count: the mark is in Redis.
   */
  async function fresh(workspaceId: string): Promise<void> {
    await whenBuilt();
    const mark = await feed.mark(workspaceId);
    const done = () =>
      !mark ||
      compareIds(state.applied[mark.partition].id, mark.id) >= 0 ||
      compareIds(mark.id, `${state.snapshotMs[mark.partition]}-0`) < 0;
    if (!done()) await waitFor(done, c.SEARCH_FRESH_WAIT_MS);
  }

  /** For /health: the index's state, position and lag (entries written after the applied one, at the follower's last look). */
  function status(): SearchIndexStatus {
    const seqs = state.applied.map((a) => a.seq);
    return {
      state: state.built ? 'ready' : 'building',
      resyncing: state.built && state.resyncing,
      syncer: !home.shared || state.term !== null,
      applied: state.applied.map((a) => a.id).reduce((a, b) => (compareIds(a, b) >= 0 ? a : b)),
      lag:
        state.feedSeq !== null && seqs.every((x) => x !== null)
          ? state.feedSeq.reduce((sum, at, p) => sum + Math.max(0, at - seqs[p]!), 0)
          : null,
      entries: state.built ? home.current().size() : 0,
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
    state.held = new Promise<void>((r) => {
      release = () => {
        state.held = null;
        r();
      };
    });
    start();
    await waitFor(() => state.parked, 60_000);
    return release;
  }

  /**
   * `npm run search:sync`: one full re-sync from the store into the index's home, without following
   * the feed (an operator moving a deployment's index into Weaviate, or repairing it). The stored
   * position is the feed's position before the walk, so the processes resume from there.
   */
  async function resyncOnce(reason = 'operator: full re-sync'): Promise<SearchIndexStatus> {
    await home.open();
    await resync(reason);
    return status();
  }

  return { start, stop, status, resyncOnce, holdFollower, fresh };
}

/** The embedded home: the index in this process's memory; a re-sync builds a new one and swaps it in. */
function embeddedHome(): IndexHome {
  let current: SearchBackend = embeddedBackend();
  return {
    kind: 'embedded',
    shared: false,
    name: () => 'embedded',
    current: () => current,
    open: () => Promise.resolve(),
    load: () => Promise.resolve(null),
    save: () => Promise.resolve(),
    refresh: () => Promise.resolve(),
    beginResync() {
      const next = embeddedBackend();
      return Promise.resolve({
        target: next,
        commit: () => {
          current = next;
          return Promise.resolve();
        },
      });
    },
  };
}
