import { describe, expect, it } from 'vitest';
import type { Scope } from '../../src/scope.js';
import { randomUUID } from 'node:crypto';
import { buildWorkspace, startTestApp, useTestApp, type TestApp } from '../support/app.js';
import { dataOf, readSse } from '../support/sse.js';

/**
 * The search index and the resource feed (docs/search.md, Following the feed): a burst that
 * outruns the feed's cap, an empty workspace that never waits for another's backlog, a feed that
 * went backwards, and a search during the first build. Real FerretDB and Redis; memories are
 * written through the memory service (the same path as POST /v1/memories, without the HTTP hop).
 */
// A feed cap of ~100 entries per partition (Redis trims whole nodes of 100; a workspace writes to one
// partition, src/feed.ts): a follower that is held while
// thousands of entries are written is trimmed far past its position. A fresh wait of 60 s: a
// search that waited for someone else's backlog would outlast its test's timeout.
const PARTITIONS = 16;
const app = useTestApp({
  RESOURCE_FEED_PARTITIONS: PARTITIONS,
  RESOURCE_FEED_MAXLEN: 100 * PARTITIONS,
  SEARCH_FRESH_WAIT_MS: 60_000,
});
const onCluster = process.env.CORTEX_TEST_REDIS === 'cluster';
const onWeaviate = process.env.CORTEX_SEARCH === 'weaviate';
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
type Hit = { id: string; title: string };

const scopeOf = (w: Ws): Scope => ({
  workspaceId: w.workspaceId,
  brainId: w.brainId,
  userId: null,
  apiKeyId: w.apiKeyId,
  roles: ['workspace_admin'],
  credential: 'api_key',
});

/** Creates `n` memories named `<prefix> <i> <token i>` with `concurrency` writers; returns their ids in order. */
async function writeMemories(a: TestApp, w: Ws, n: number, prefix: string, concurrency = 16): Promise<string[]> {
  const ids: string[] = new Array<string>(n);
  let next = 0;
  const scope = scopeOf(w);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < n; i = next++) {
        const { memory } = await a.services.memories.create(scope, {
          name: `${prefix} ${i} ${token(prefix, i)}`,
          description: `burst memory number ${i}`,
          source_type: 'text',
        });
        ids[i] = memory._id;
      }
    }),
  );
  return ids;
}
const token = (prefix: string, i: number) => `${prefix}${i.toString(36)}q`;

async function search(a: TestApp, w: Ws, query: string) {
  const res = await a.post('/v1/search', w.key, { query, search_mode: 'lexical', limit: 5 }, w.brainHeaders);
  expect(res.status, res.text).toBe(200);
  return res.body as { results: Hit[]; total: number };
}

/** Every memory id the index shows in the workspace, read through browse page by page. */
async function browseAll(a: TestApp, w: Ws): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let offset = 0; ; offset += 200) {
    const page = await a.services.search.browse(scopeOf(w), { type: 'memories', limit: 200, offset });
    for (const r of page.results) seen.add(r.id);
    if (offset + 200 >= page.total) return seen;
  }
}

describe('search index and the resource feed', () => {
  it("an empty workspace's search does not wait for another workspace's backlog; the writer's search waits for its own writes", async () => {
    const [busy, empty] = await Promise.all([buildWorkspace(app), buildWorkspace(app)]);
    expect((await search(app, empty, 'memories/anything')).total).toBe(0); // the index is built
    const release = await app.services.search.holdFollower();
    let released = false;
    try {
      const ids = await writeMemories(app, busy, 50, 'backlog');
      // The follower applies nothing now: another workspace's search answers at once (it has no writes to wait for).
      expect((await search(app, empty, 'memories/backlog')).total).toBe(0);
      const health = await app.get('/health', empty.key);
      expect((health.body as { search_index: { state: string; lag: number } }).search_index.state).toBe('ready');
      // The writer's own search waits for its writes: it answers once the follower applies them.
      const pending = search(app, busy, `memories/${token('backlog', 49)}`);
      await new Promise((r) => setTimeout(r, 300));
      release();
      released = true;
      const found = await pending;
      expect(found.results[0]?.id).toBe(ids[49]);
    } finally {
      if (!released) release();
    }
  }, 30_000);

  // Two and a half minutes of writing to the store: on one Redis only (the cluster project runs the
  // 300-write case below, the same path through a trimmed partition). Not on Weaviate either (known
  // gap, docs/performance-history.md): indexing 20,000 new objects takes Weaviate about 40 s on the
  // shared 2-core machine (at most ~580 a second measured), past the 30 s request deadline of the
  // search that waits for them; the 300-write case runs the same re-sync path there.
  it.skipIf(onCluster || onWeaviate)(
    '20,000 memories written in a burst past the feed cap are every one found (the follower re-syncs from the store)',
    async () => {
      const w = await buildWorkspace(app);
      await search(app, w, 'memories/x'); // built
      const before = app.services.search.status();
      const release = await app.services.search.holdFollower();
      let ids: string[];
      try {
        ids = await writeMemories(app, w, 20_000, 'burst');
      } finally {
        release();
      }
      // The held follower's position was trimmed away: it sees the jump in seq and re-syncs.
      const hit = await search(app, w, `memories/${token('burst', 19_999)}`);
      expect(hit.results[0]?.id).toBe(ids[19_999]);
      const after = app.services.search.status();
      expect(after.builds).toBeGreaterThan(before.builds);
      expect(after.last_build?.reason).toMatch(/skipped entries/);
      const shown = await browseAll(app, w);
      expect(shown.size).toBe(20_000);
      expect(ids.filter((id) => !shown.has(id))).toEqual([]);
      for (const i of [0, 1, 4_321, 9_999, 15_000, 19_998])
        expect((await search(app, w, `memories/${token('burst', i)}`)).results[0]?.id).toBe(ids[i]);
    },
    600_000,
  );

  it('a follower the feed was trimmed past (300 writes over a ~100-entry cap) sees the jump in seq and re-syncs', async () => {
    const w = await buildWorkspace(app);
    await search(app, w, 'memories/x');
    const release = await app.services.search.holdFollower();
    let ids: string[];
    try {
      ids = await writeMemories(app, w, 300, 'trim');
    } finally {
      release();
    }
    expect((await search(app, w, `memories/${token('trim', 0)}`)).results[0]?.id).toBe(ids[0]);
    expect(app.services.search.status().last_build?.reason).toMatch(/skipped entries/);
    expect((await browseAll(app, w)).size).toBe(300);
  }, 60_000);

  it('a burst within the cap is applied in batches (bulk re-reads), not entry by entry', async () => {
    const w = await buildWorkspace(app);
    await search(app, w, 'memories/x');
    const before = app.services.search.status();
    const release = await app.services.search.holdFollower();
    let ids: string[];
    try {
      ids = await writeMemories(app, w, 90, 'batch'); // under the ~100-entry cap: nothing trimmed
    } finally {
      release();
    }
    expect((await search(app, w, `memories/${token('batch', 89)}`)).results[0]?.id).toBe(ids[89]);
    const after = app.services.search.status();
    expect(after.builds).toBe(before.builds);
    expect(after.events - before.events).toBeGreaterThanOrEqual(90);
    expect(after.batches - before.batches).toBeLessThan(5);
    expect((await browseAll(app, w)).size).toBe(90);
  }, 60_000);

  it('a feed that went backwards (Redis lost its entries) is detected and the index re-syncs from the store', async () => {
    const w = await buildWorkspace(app);
    await writeMemories(app, w, 1, 'kept');
    expect((await search(app, w, `memories/${token('kept', 0)}`)).total).toBe(1);
    const release = await app.services.search.holdFollower();
    let lost: string[];
    try {
      // Written and stored, but its feed entry is lost before the follower reads it: Redis comes back without the feed.
      lost = await writeMemories(app, w, 1, 'lost');
      const { feed } = app.deps.streams;
      const p = feed.partitionOf(w.workspaceId);
      await app.deps.redis.del(feed.keys.partition(p), feed.keys.meta(p));
    } finally {
      release();
    }
    const hit = await search(app, w, `memories/${token('lost', 0)}`);
    expect(hit.results[0]?.id).toBe(lost[0]);
    expect(app.services.search.status().last_build?.reason).toMatch(/went backwards/);
  }, 30_000);

  it('a search during the first build answers 503 with Retry-After, then finds what was written before the process started', async () => {
    const first = await startTestApp({ SEARCH_BUILD_WAIT_MS: 0 });
    try {
      const w = await buildWorkspace(first);
      const ids = await writeMemories(first, w, 300, 'early');
      // A second process on the same store and Redis starts with an index that is not built yet.
      const second = await startTestApp({
        SEARCH_BUILD_WAIT_MS: 0,
        MONGODB_DB: first.config.MONGODB_DB,
        REDIS_PREFIX: first.config.REDIS_PREFIX,
      });
      try {
        expect((await second.get('/health', w.key)).body).toMatchObject({ search_index: { state: 'building' } });
        const res = await second.post('/v1/search', w.key, { query: `memories/${token('early', 7)}` }, w.brainHeaders);
        expect(res.status, res.text).toBe(503);
        expect(res.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
        expect(res.headers.get('retry-after')).toBe('2');
        let found: Hit[] = [];
        for (let i = 0; i < 100 && !found.length; i++) {
          const r = await second.post('/v1/search', w.key, { query: `memories/${token('early', 7)}` }, w.brainHeaders);
          if (r.status === 200) found = (r.body as { results: Hit[] }).results;
          else await new Promise((x) => setTimeout(x, 200));
        }
        expect(found[0]?.id).toBe(ids[7]);
        expect((await second.get('/health', w.key)).body).toMatchObject({
          status: 'healthy',
          search_index: { state: 'ready', lag: 0 },
        });
        expect(Object.keys((await second.get('/health')).body).sort()).toEqual(['status', 'version']);
      } finally {
        await second.close();
      }
    } finally {
      await first.close();
    }
  }, 60_000);
});

describe('trace-event readers', () => {
  it('a reader whose cursor is newer than the stream (it went backwards) gets stream_reset and the stream anew, not a silent wait', async () => {
    const w = await buildWorkspace(app);
    const trace = randomUUID();
    const headers = { authorization: `Bearer ${w.key}` };
    expect((await app.post(`/v1/traces/${trace}/messages`, w.key, { content: 'first message' })).status).toBe(201);
    const first = await readSse(`${app.url}/v1/traces/${trace}/events`, { headers, until: (e) => e.length >= 1 });
    const cursor = first.events[0].id!;
    // Redis comes back without the stream.
    await app.deps.redis.del(app.deps.streams.keys.trace(w.workspaceId, trace));
    // The second message is written once the reset is read (a message written before the reader
    // looks would be after the cursor: then there is nothing to reset).
    let posted: Promise<{ status: number }> | null = null;
    const resumed = await readSse(`${app.url}/v1/traces/${trace}/events?after=${cursor}`, {
      headers,
      until: (e) => {
        if (e.length === 1) posted ??= app.post(`/v1/traces/${trace}/messages`, w.key, { content: 'second message' });
        return e.length >= 2;
      },
    });
    expect((await posted!)?.status).toBe(201);
    expect(dataOf(resumed.events[0])).toEqual({ type: 'stream_reset', after: cursor, newest: null });
    expect(resumed.events[0].id).toBeUndefined();
    expect(JSON.stringify(dataOf(resumed.events[1]))).toContain('second message');
  }, 30_000);
});
