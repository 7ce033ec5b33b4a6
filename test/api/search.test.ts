import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import {
  embeddedBackend,
  newestFirst,
  whereTest,
  type EntryWhere,
  type IndexFilter,
  type SearchBackend,
} from '../../src/search/backend.js';
import type { IndexEntry, SearchType } from '../../src/search/memory-index.js';
import { LISTABLE_TYPES } from '../../src/search/query.js';
import { grepRows } from '../../src/search/grep.js';
import { childrenFrom, engineSource, headsSource } from '../../src/search/tree.js';
import { collectionName, connectWeaviate, createWeaviateIndex } from '../../src/search/weaviate-index.js';
import { startTestApp } from '../support/app.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';

/** Discovery (docs/search.md) over a real store, the offline embedder and a real worker (ingest, async search). */
const { app } = usePlatform();
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
type Hit = {
  type: string;
  id: string;
  path: string;
  title: string;
  snippet: string;
  similarity: number;
  score: number;
  url: string;
  chunk_id?: string;
  explain?: Explain;
};
type Explain = {
  lexical: { rank: number; score: number } | null;
  vector: { rank: number; similarity: number } | null;
  fused: number;
  k: number;
  weights: { lexical: number; vector: number };
};

let ws: Ws;
const ids: Record<string, string> = {};
const post = (path: string, body: unknown, w: Ws = ws, headers: Record<string, string> = w.brainHeaders) =>
  app.post(path, w.key, body, headers);
const search = async (body: Record<string, unknown>, w: Ws = ws) => {
  const res = await post('/v1/search', body, w);
  expect(res.status, res.text).toBe(200);
  return res.body as { type: string; results: Hit[]; normalized: Hit[]; total: number; search_mode: string };
};
const titles = (hits: { title: string }[]) => hits.map((h) => h.title);

async function ingestDone(jobId: unknown) {
  const job = await settleJob(app, ws.key, String(jobId));
  expect(job.status, JSON.stringify(job)).toBe('completed');
}

beforeAll(async () => {
  ws = await buildWorkspace(app);
  const neuron = async (name: string, description: string, prompt: string, extra: Record<string, unknown> = {}) => {
    const res = await post('/v1/neurons', {
      name,
      description,
      brain_id: ws.brainId,
      neuron_config: { model: 'local/echo', system_prompt: prompt },
      ...extra,
    });
    expect(res.status, res.text).toBe(201);
    ids[name] = String((res.body as { id: string }).id);
  };
  await neuron(
    'invoice-clerk',
    'Reads supplier invoices and books them',
    'You extract totals and due dates from invoices.',
  );
  await neuron(
    'travel-planner',
    'Plans trips: flights, trains and hotels',
    'You plan itineraries for business travel.',
  );
  await neuron('weather-bot', 'Answers questions about rain and sunshine', 'You forecast the weather.', {
    is_active: false,
  });
  await neuron(
    'support-triage',
    'Sorts customer tickets by urgency',
    'You triage support tickets about invoices and refunds.',
  );
  const reflex = await post('/v1/reflexes', {
    name: 'calendar-tools',
    type: 'effector',
    scope: 'brain',
    description: 'Books meetings in a shared calendar',
    metadata: { handler: 'calculator' },
  });
  expect(reflex.status, reflex.text).toBe(201);
  const pathway = await post('/v1/pathways', {
    name: 'refund-approval',
    description: 'Routes refund requests to a manager for approval',
  });
  expect(pathway.status, pathway.text).toBe(201);

  const artifact = async (title: string, content: string, path = '') => {
    const res = await post('/v1/artifacts', {
      title,
      content,
      content_type: 'text/markdown',
      ...(path ? { path } : {}),
    });
    expect(res.status, res.text).toBe(201);
    const b = res.body as { artifact: { id: string }; job_id: string };
    ids[title] = b.artifact.id;
    await ingestDone(b.job_id);
  };
  await artifact(
    'Quarterly report',
    '# Q3\n\nRevenue grew in the northern region. The platypus project shipped late because of supplier delays.',
    'reports/2026',
  );
  await artifact(
    'Onboarding guide',
    '# Welcome\n\nNew engineers set up their laptop, then read the runbook about the kangaroo cluster.',
    'guides',
  );
  await artifact('Holiday plan', 'Trip to the coast: pack sunscreen, book the ferry, visit the lighthouse.', 'reports');

  const memory = async (
    name: string,
    content: string,
    owner: { owner_type: string; owner_id: string },
    tags: string[],
    metadata: Record<string, unknown> = {},
  ) => {
    const res = await post('/v1/memories/ingest', {
      name,
      description: `${name} memory`,
      content,
      ...owner,
      tags,
      metadata,
      skip_title_description: true,
    });
    expect(res.status, res.text).toBe(201);
    const b = res.body as { memory: { id: string }; job_id: string };
    ids[name] = b.memory.id;
    await ingestDone(b.job_id);
  };
  ids.trace = randomUUID();
  expect((await post(`/v1/traces/${ids.trace}/messages`, { content: 'When does the lighthouse open?' })).status).toBe(
    201,
  );
  await memory(
    'customer prefers email',
    'The customer Alice prefers to be contacted by email, never by phone.',
    { owner_type: 'neuron', owner_id: ids['support-triage'] },
    ['contact', 'alice'],
    { project: 'crm' },
  );
  await memory(
    'budget cap',
    'The travel budget for Q4 is capped at 2000 euros per trip.',
    { owner_type: 'neuron', owner_id: ids['travel-planner'] },
    ['finance'],
  );
  await memory(
    'trace note',
    'During this conversation the user asked about the lighthouse opening hours.',
    { owner_type: 'trace', owner_id: ids.trace },
    ['visit'],
  );
}, 120_000);

describe('grep', () => {
  it('needs X-Brain-Id, a known type and a query', async () => {
    expect((await app.post('/v1/grep', ws.key, { query: 'neurons' })).status).toBe(400);
    expect((await post('/v1/grep', { query: 'spaceships/x' })).status).toBe(400);
    expect((await post('/v1/grep', {})).status).toBe(400);
    expect((await post('/v1/grep', { query: 'neurons' }, ws, { 'x-brain-id': randomUUID() })).status).toBe(404);
  });

  it('type, type/ and bare type list the type', async () => {
    for (const query of ['neurons', 'neurons/', 'neuron']) {
      const res = await post('/v1/grep', { query });
      expect(res.status, res.text).toBe(200);
      const b = res.body as { type: string; results: { path: string; title: string; url: string }[] };
      expect(b.type).toBe('neurons');
      expect(titles(b.results).sort()).toEqual(['invoice-clerk', 'support-triage', 'travel-planner', 'weather-bot']);
      expect(b.results.find((r) => r.title === 'invoice-clerk')).toMatchObject({
        path: 'neurons/invoice-clerk',
        url: `/v1/neurons/${ids['invoice-clerk']}`,
      });
    }
  });

  it('type/pattern matches names and descriptions case-insensitively, with a snippet that shows the match', async () => {
    const byName = (await post('/v1/grep', { query: 'neurons/CLERK' })).body as {
      results: { title: string; snippet: string }[];
    };
    expect(titles(byName.results)).toEqual(['invoice-clerk']);
    const byDescription = (await post('/v1/grep', { query: 'neurons/hotels' })).body as {
      results: { title: string; snippet: string }[];
    };
    expect(titles(byDescription.results)).toEqual(['travel-planner']);
    expect(byDescription.results[0].snippet.toLowerCase()).toContain('hotels');
    // A neuron's system prompt is not grepped (names and descriptions only).
    expect(((await post('/v1/grep', { query: 'neurons/itineraries' })).body as { results: unknown[] }).results).toEqual(
      [],
    );
  });

  it('matches content for artifacts and memories', async () => {
    const art = (await post('/v1/grep', { query: 'artifacts/platypus' })).body as {
      results: { title: string; snippet: string; path: string }[];
    };
    expect(titles(art.results)).toEqual(['Quarterly report']);
    expect(art.results[0].snippet).toContain('platypus');
    expect(art.results[0].path).toBe('artifacts/reports/2026/Quarterly report');
    const mem = (await post('/v1/grep', { query: 'memories/by phone' })).body as {
      results: { title: string; snippet: string }[];
    };
    expect(titles(mem.results)).toEqual(['customer prefers email']);
    expect(mem.results[0].snippet).toContain('by phone');
  });
});

describe('sync search', () => {
  it('a bare term searches neurons (hybrid by default)', async () => {
    const r = await search({ query: 'invoices' });
    expect(r.type).toBe('neurons');
    expect(r.search_mode).toBe('hybrid');
    expect(r.results[0].title).toBe('invoice-clerk');
    expect(titles(r.results)).toContain('support-triage');
    for (const h of r.results) expect(typeof h.similarity).toBe('number');
    expect(r.normalized.map((n) => n.id)).toEqual(r.results.map((h) => h.id));
  });

  it('rejects an unknown search_mode, filters that the type lacks, too many grep_keywords, keywords with a list-only query', async () => {
    expect((await post('/v1/search', { query: 'neurons/x', search_mode: 'semantic' })).status).toBe(400);
    expect((await post('/v1/search', { query: 'assets/x', filters: { visibility: 'brain' } })).status).toBe(400);
    expect((await post('/v1/search', { query: 'neurons/x', path_prefix: 'reports' })).status).toBe(400);
    expect(
      (await post('/v1/search', { query: 'neurons/x', grep_keywords: Array.from({ length: 13 }, (_, i) => `k${i}`) }))
        .status,
    ).toBe(400);
    expect((await post('/v1/search', { query: 'neurons/', keywords: 'invoice' })).status).toBe(400);
    expect((await post('/v1/search', { query: 'artifacts', grep_keywords: ['x'] })).status).toBe(400);
    expect((await post('/v1/search', { query: 'gadgets/x' })).status).toBe(400);
    expect((await post('/v1/search', { query: '' })).status).toBe(400);
  });

  it('lexical, vector and hybrid modes each answer; filters.is_active and visibility narrow', async () => {
    for (const search_mode of ['lexical', 'vector', 'hybrid']) {
      const r = await search({ query: 'neurons/weather forecast rain', search_mode });
      expect(r.results[0]?.title, search_mode).toBe('weather-bot');
    }
    expect(
      titles(
        (await search({ query: 'neurons/weather forecast rain', filters: { is_active: true }, search_mode: 'lexical' }))
          .results,
      ),
    ).not.toContain('weather-bot');
    expect(
      titles(
        (
          await search({
            query: 'neurons/weather forecast rain',
            filters: { is_active: false },
            search_mode: 'lexical',
          })
        ).results,
      ),
    ).toEqual(['weather-bot']);
    expect((await search({ query: 'neurons/weather', filters: { visibility: 'workspace' } })).results).toEqual([]);
  });

  it('keywords (a string or a list) and grep_keywords are AND terms', async () => {
    const all = titles((await search({ query: 'neurons/invoices tickets', search_mode: 'lexical' })).results);
    expect(all).toEqual(expect.arrayContaining(['invoice-clerk', 'support-triage']));
    expect(titles((await search({ query: 'neurons/invoices', keywords: 'tickets urgency' })).results)).toEqual([
      'support-triage',
    ]);
    expect(
      titles((await search({ query: 'neurons/invoices', keywords: ['tickets'], grep_keywords: ['refunds'] })).results),
    ).toEqual(['support-triage']);
    expect((await search({ query: 'neurons/invoices', grep_keywords: ['tickets', 'spaceship'] })).results).toEqual([]);
  });

  it('path_prefix (or pathPrefix) scopes assets and artifacts to a folder', async () => {
    const everywhere = titles(
      (await search({ query: 'artifacts/lighthouse platypus kangaroo', search_mode: 'lexical' })).results,
    );
    expect(everywhere.sort()).toEqual(['Holiday plan', 'Onboarding guide', 'Quarterly report']);
    expect(
      titles(
        (await search({ query: 'artifacts/lighthouse platypus kangaroo', path_prefix: 'reports' })).results,
      ).sort(),
    ).toEqual(['Holiday plan', 'Quarterly report']);
    expect(
      titles((await search({ query: 'artifacts/lighthouse platypus kangaroo', pathPrefix: 'reports/2026' })).results),
    ).toEqual(['Quarterly report']);
    const chunkHit = (await search({ query: 'artifacts/platypus' })).results[0];
    expect(chunkHit.chunk_id).toMatch(new RegExp(`^${ids['Quarterly report']}:`));
    expect(chunkHit.snippet).toContain('platypus');
  });

  it('explain gives each hit its lexical and vector ranks, and they reproduce the fused score and order', async () => {
    const r = await search({
      query: 'artifacts/supplier revenue engineers coast',
      explain: true,
      weights: { lexical: 2, vector: 1 },
    });
    expect(r.results.length).toBeGreaterThan(1);
    let last = Infinity;
    for (const h of r.results) {
      const e = h.explain!;
      expect(e.k).toBe(60);
      expect(e.weights).toEqual({ lexical: 2, vector: 1 });
      const fused = (e.lexical ? 2 / (60 + e.lexical.rank) : 0) + (e.vector ? 1 / (60 + e.vector.rank) : 0);
      expect(e.fused).toBeCloseTo(fused, 12);
      expect(h.score).toBeCloseTo(fused, 8);
      expect(fused).toBeLessThanOrEqual(last);
      last = fused;
      if (e.vector) expect(h.similarity).toBeCloseTo(e.vector.similarity, 5);
    }
  });

  it('a threshold applies after fusion: vector-only hits below it go, lexical matches stay', async () => {
    const loose = await search({ query: 'artifacts/ferry', explain: true });
    const strict = await search({ query: 'artifacts/ferry', explain: true, threshold: 0.99 });
    expect(titles(strict.results)).toEqual(['Holiday plan']);
    expect(strict.results[0].explain!.lexical).not.toBeNull();
    expect(loose.results.length).toBeGreaterThan(strict.results.length);
  });

  it('reflexes are keyword-only: any mode searches them lexically', async () => {
    const r = await search({ query: 'reflexes/calendar', search_mode: 'vector' });
    expect(r.search_mode).toBe('lexical');
    expect(titles(r.results)).toEqual(['calendar-tools']);
  });

  it('a list-only query lists the type', async () => {
    const r = await search({ query: 'pathways/' });
    expect(titles(r.results)).toEqual(['refund-approval']);
  });
});

describe('the index follows the store', () => {
  it('a resource created through the API is found at once; an update and a delete are too', async () => {
    const created = await post('/v1/neurons', {
      name: 'ornithologist',
      description: 'Identifies birds by their song',
      brain_id: ws.brainId,
    });
    expect(created.status).toBe(201);
    const id = String((created.body as { id: string }).id);
    expect(titles((await search({ query: 'birds song' })).results)[0]).toBe('ornithologist');
    expect(
      (await app.put(`/v1/neurons/${id}`, ws.key, { description: 'Identifies moths at night' }, ws.brainHeaders))
        .status,
    ).toBe(200);
    expect(titles((await search({ query: 'neurons/birds', search_mode: 'lexical' })).results)).not.toContain(
      'ornithologist',
    );
    expect(titles((await search({ query: 'neurons/moths', search_mode: 'lexical' })).results)).toEqual([
      'ornithologist',
    ]);
    expect((await app.del(`/v1/neurons/${id}`, ws.key, ws.brainHeaders)).status).toBe(200);
    expect(titles((await search({ query: 'neurons/moths', search_mode: 'lexical' })).results)).toEqual([]);
    expect(titles(((await post('/v1/grep', { query: 'neurons/ornith' })).body as { results: Hit[] }).results)).toEqual(
      [],
    );
  });

  it('another API process built from the store (a restart) gives the same hits', async () => {
    const queries = [
      { query: 'invoices' },
      { query: 'artifacts/supplier delays', explain: true },
      { query: 'memories/email phone' },
    ];
    const before = await Promise.all(queries.map((q) => search(q)));
    const other = await startTestApp({
      MONGODB_DB: app.config.MONGODB_DB,
      REDIS_PREFIX: app.config.REDIS_PREFIX,
      DATA_DIR: app.config.DATA_DIR,
      TEMPORAL_TASK_QUEUE: app.config.TEMPORAL_TASK_QUEUE,
    });
    try {
      for (const [i, q] of queries.entries()) {
        const res = await other.post('/v1/search', ws.key, q, ws.brainHeaders);
        expect(res.status).toBe(200);
        expect((res.body as { results: Hit[] }).results).toEqual(before[i].results);
      }
    } finally {
      await other.close();
    }
  });

  it('meetings are found by their notes and transcript, and a patch is followed', async () => {
    const created = await post('/v1/meetings', {
      title: 'Vendor review',
      description: 'Monthly review',
      body: { notes: 'Discussed the wombat migration.' },
    });
    expect(created.status, created.text).toBe(201);
    const id = String((created.body as { id: string }).id);
    expect(titles((await search({ query: 'meetings/wombat' })).results)).toEqual(['Vendor review']);
    const patched = await post(`/v1/resources/meeting/${id}/patch`, {
      transcript_segments: [{ speaker: 'A', text: 'The echidna contract renews in May.' }],
    });
    expect(patched.status, patched.text).toBe(200);
    expect(titles((await search({ query: 'meetings/echidna contract' })).results)).toEqual(['Vendor review']);
    expect(titles(((await post('/v1/grep', { query: 'meetings/vendor' })).body as { results: Hit[] }).results)).toEqual(
      ['Vendor review'],
    );
  });

  it('stakeholder maps are found by the names of their stakeholders', async () => {
    const map = await app.get('/v1/stakeholder-map', ws.key, ws.brainHeaders);
    expect(map.status, map.text).toBe(200);
    const id = String((map.body as { resource_id: string }).resource_id);
    const patched = await post(`/v1/resources/stakeholder_map/${id}/patch`, {
      ops: [{ op: 'upsert_stakeholder', name: 'Philippa Quokkaman' }],
    });
    expect(patched.status, patched.text).toBe(200);
    const hits = (await search({ query: 'stakeholder_maps/quokkaman' })).results;
    expect(hits.map((h) => h.id)).toEqual([id]);
  });

  it('a second workspace finds nothing of the first', async () => {
    const other = await buildWorkspace(app);
    expect((await search({ query: 'invoices' }, other)).results).toEqual([]);
    expect((await search({ query: 'artifacts/platypus' }, other)).results).toEqual([]);
    expect(((await post('/v1/grep', { query: 'neurons' }, other)).body as { results: unknown[] }).results).toEqual([]);
    // Naming the first workspace's brain is a 404.
    expect((await post('/v1/search', { query: 'invoices' }, other, ws.brainHeaders)).status).toBe(404);
  });
});

describe('async multi-facet search', () => {
  it("runs one activity per type and completes with every type's hits, the total and the normalized list", async () => {
    const start = await app.get(
      `/v1/search?q=${encodeURIComponent('lighthouse invoices')}&limit=5`,
      ws.key,
      ws.brainHeaders,
    );
    expect(start.status, start.text).toBe(202);
    const jobId = (start.body as { job_id: string }).job_id;
    const job = await settleJob(app, ws.key, jobId);
    expect(job.status, JSON.stringify(job)).toBe('completed');
    expect(job.progress).toBe(100);
    const result = job.result as { results: Record<string, Hit[]>; total: number; normalized: Hit[] };
    expect(Object.keys(result.results).sort()).toEqual([
      'action_plans',
      'artifacts',
      'assets',
      'meetings',
      'neurons',
      'pathways',
      'receptors',
      'reflexes',
      'stakeholder_maps',
    ]);
    expect(titles(result.results.artifacts)).toContain('Holiday plan');
    expect(titles(result.results.neurons)).toContain('invoice-clerk');
    expect(result.total).toBe(Object.values(result.results).reduce((n, h) => n + h.length, 0));
    expect(result.normalized).toHaveLength(result.total);
  });

  it('types as a JSON array or a name; is_active; bad input is a 400', async () => {
    const start = await app.get(
      `/v1/search?q=weather&types=${encodeURIComponent('["neurons","reflexes"]')}&is_active=false`,
      ws.key,
      ws.brainHeaders,
    );
    expect(start.status, start.text).toBe(202);
    const job = await settleJob(app, ws.key, (start.body as { job_id: string }).job_id);
    const result = job.result as { results: Record<string, Hit[]> };
    expect(Object.keys(result.results).sort()).toEqual(['neurons', 'reflexes']);
    expect(titles(result.results.neurons)).toEqual(['weather-bot']);
    expect((await app.get('/v1/search?types=neurons', ws.key, ws.brainHeaders)).status).toBe(400);
    expect((await app.get('/v1/search?q=x&types=planets', ws.key, ws.brainHeaders)).status).toBe(400);
    expect((await app.get('/v1/search?q=x&types=[1,2]', ws.key, ws.brainHeaders)).status).toBe(400);
    expect((await app.get('/v1/search?q=x&search_mode=fuzzy', ws.key, ws.brainHeaders)).status).toBe(400);
    expect((await app.get('/v1/search?q=x&type=neurons&types=reflexes', ws.key, ws.brainHeaders)).status).toBe(400);
    const single = await app.get('/v1/search?q=calendar&type=reflexes', ws.key, ws.brainHeaders);
    expect(single.status).toBe(202);
  });
});

/** Runs `fn` on a Weaviate collection of its own (4-dim vectors, no sync) beside an embedded index, and deletes the collection after. */
async function onOwnCollection(
  prefix: string,
  fn: (wv: SearchBackend, emb: SearchBackend) => Promise<void>,
): Promise<void> {
  const client = await connectWeaviate({ url: inject('weaviateUrl'), grpc: inject('weaviateGrpcAddress') });
  const database = `${prefix}_${randomUUID().slice(0, 8)}`;
  try {
    await fn(
      (await createWeaviateIndex({ client, database, model: 'local/none', dimension: 4 })).backend,
      embeddedBackend(),
    );
  } finally {
    await client.collections.delete(collectionName(database, 'local/none', 4));
    await client.close();
  }
}

/**
 * Browse on Weaviate is ordered and counted by the engine (`page`): its pages must be the embedded
 * index's (newest first, ties by title in code units, the same total and offsets), ties on
 * updatedAt across a page's edge and titles that differ only in case included. The entries are
 * written straight into a collection of their own (no sync touches it).
 */
describe.runIf(process.env.CORTEX_SEARCH === 'weaviate')('browse pages from Weaviate', () => {
  it('match the embedded index page for page: order, total, offset', async () => {
    await onOwnCollection('browse', async (wv, emb) => {
      const workspaceId = randomUUID();
      const brainId = randomUUID();
      const other = randomUUID();
      const t0 = Date.UTC(2026, 0, 1);
      const resources: IndexEntry[][] = [];
      for (let i = 0; i < 130; i++) {
        // 40 heads share one updatedAt (wider than a page's first margin), the rest come in threes;
        // titles alternate case ('T' sorts before 't' in code units, Weaviate compares case-insensitively).
        const updatedAt = i < 40 ? t0 : t0 + Math.floor(i / 3) * 1000;
        const resourceId = randomUUID();
        const head: IndexEntry = {
          id: resourceId,
          workspaceId,
          // A tenth in another brain: visible when their visibility is workspace, not when brain.
          brainId: i % 10 === 9 ? other : brainId,
          type: 'memories',
          resourceId,
          title: `${i % 2 ? 'T' : 't'}itle ${String((i * 37) % 130).padStart(3, '0')}`,
          description: `memory ${i}`,
          text: `memory ${i}`,
          path: '',
          visibility: i % 20 === 9 ? 'brain' : 'workspace',
          url: `/v1/memories/${resourceId}`,
          displayPath: `memories/${resourceId}`,
          updatedAt,
        };
        const chunk: IndexEntry = { ...head, id: randomUUID(), text: `chunk of ${i}`, chunkIndex: 0 };
        resources.push(i % 4 ? [head] : [head, chunk]);
      }
      await wv.replaceResources(resources);
      await emb.replaceResources(resources);
      const where: EntryWhere = { types: ['memories'], brainId, headsOnly: true };
      const fl: IndexFilter = { where, test: whereTest(where), post: false };
      const all = (await emb.scan(workspaceId, fl)).sort(newestFirst);
      expect(all).toHaveLength(130 - 7);
      for (const limit of [1, 7, 50, 200])
        for (let offset = 0; offset <= all.length; offset += limit) {
          const page = await wv.page!(workspaceId, fl, { offset, limit });
          expect(page?.total, `offset ${offset} limit ${limit}`).toBe(all.length);
          expect(
            page?.entries.map((e) => e.title),
            `offset ${offset} limit ${limit}`,
          ).toEqual(all.slice(offset, offset + limit).map((e) => e.title));
        }
      // What the filter cannot say (a post-check) is not paged by the engine: the caller sorts a scan.
      expect(await wv.page!(workspaceId, { ...fl, post: true }, { offset: 0, limit: 10 })).toBeNull();
      expect(await wv.page!(randomUUID(), fl, { offset: 0, limit: 10 })).toEqual({ entries: [], total: 0 });
    });
  });
});

/**
 * The resource tree's levels and grep on Weaviate (counts, `aggregate.groupBy` on path, one folder's
 * heads, the pattern pushed into the filter as token patterns) against the embedded index on the
 * same entries: folders with spaces and wildcard characters, hidden heads of another brain, chunks
 * that alone hold a pattern, a stopword, punctuation, case and non-ASCII letters.
 */
describe.runIf(process.env.CORTEX_SEARCH === 'weaviate')('the tree and grep from Weaviate', () => {
  it('match the embedded index level for level and row for row', async () => {
    await onOwnCollection('tree', async (wv, emb) => {
      const workspaceId = randomUUID();
      const brainId = randomUUID();
      const other = randomUUID();
      const t0 = Date.UTC(2026, 0, 1);
      const paths = ['', 'a', 'a/b', 'a/b/c', 'a b', 'x*y', 'x*y/z', 'ab', 'a/bc', 'reports/2026'];
      const texts = [
        'The platypus project shipped late.',
        'Contact by e-mail, never by phone.',
        'Q3 report: revenue grew.',
        'A trip to İstanbul and a 5\u212Ak run.',
        'Über die Brücke gehen.',
        'the end',
      ];
      const resources: IndexEntry[][] = [];
      let n = 0;
      const add = (type: SearchType, path: string, i: number, o: Partial<IndexEntry> = {}, chunk?: string) => {
        const resourceId = randomUUID();
        const head: IndexEntry = {
          id: resourceId,
          workspaceId,
          brainId: n % 9 === 8 ? other : brainId,
          type,
          resourceId,
          title: `${type} ${String(i).padStart(2, '0')}${i % 5 === 0 ? ' Report' : ''}`,
          description: i % 3 === 0 ? texts[i % texts.length] : `${type} number ${i}`,
          text: i % 4 === 1 ? texts[(i + 1) % texts.length] : `plain text ${i}`,
          path,
          visibility: n % 18 === 8 ? 'workspace' : 'brain',
          url: `/v1/${type}/${resourceId}`,
          displayPath: `${type}/${resourceId}`,
          updatedAt: t0 + n * 1000,
          ...o,
        };
        n++;
        resources.push(chunk ? [head, { ...head, id: randomUUID(), text: chunk, chunkIndex: 0 }] : [head]);
      };
      for (let i = 0; i < 60; i++)
        add('artifacts', paths[i % paths.length], i, {}, i % 7 === 3 ? texts[i % 6] : undefined);
      for (let i = 0; i < 40; i++) add('memories', '', i, {}, i % 5 === 2 ? texts[(i + 2) % 6] : undefined);
      for (let i = 0; i < 12; i++) add('neurons', '', i, { isActive: i % 2 === 0 });
      // Two leaves with one title (the tree orders them by id).
      add('neurons', '', 99, { title: 'twin' });
      add('neurons', '', 98, { title: 'twin' });
      await wv.replaceResources(resources);
      await emb.replaceResources(resources);

      const visible = (types: SearchType[], w: Partial<EntryWhere>, headsOnly: boolean): IndexFilter => {
        const where: EntryWhere = { types, brainId, headsOnly, ...w };
        return { where, test: whereTest(where), post: false };
      };
      const engine = engineSource(wv, workspaceId, (type, where) => visible([type], where, true));
      const embedded = headsSource(() => emb.scan(workspaceId, visible([...LISTABLE_TYPES], {}, true)));
      for (const key of [
        null,
        'artifacts',
        'artifacts/a',
        'artifacts/a/b',
        'artifacts/a/b/c',
        'artifacts/a b',
        'artifacts/x*y',
        'artifacts/reports',
        'artifacts/none',
        'memories',
        'neurons',
      ]) {
        const want = await childrenFrom(embedded, key);
        expect(want.length, String(key)).toBeGreaterThan(key === 'artifacts/none' ? -1 : 0);
        expect(await childrenFrom(engine, key), String(key)).toEqual(want);
      }

      const rows = async (index: SearchBackend, type: SearchType, pattern: string) =>
        (await grepRows(index, workspaceId, type, pattern, (w, headsOnly) => visible([type], w, headsOnly))).map(
          (r) => [r.head.title, r.where, r.count, r.match.id, r.head.url],
        );
      for (const type of ['artifacts', 'memories', 'neurons'] as const)
        for (const pattern of [
          'platypus',
          'report',
          'REPORT',
          'q3 report',
          ': revenue',
          'e-mail',
          'mail, never',
          'the',
          ' the ',
          'e',
          'stanbul',
          'istanbul',
          '5k',
          'über',
          'brücke',
          'number 1',
          '*',
          'x?y',
          '—',
        ]) {
          const want = await rows(emb, type, pattern);
          expect(await rows(wv, type, pattern), `${type}/${pattern}`).toEqual(want);
        }
      // The patterns found what they should (the comparison above is not between two empty lists).
      expect((await rows(emb, 'memories', 'platypus')).length).toBeGreaterThan(0);
      expect((await rows(emb, 'artifacts', 'stanbul')).length).toBeGreaterThan(0);
      expect((await rows(emb, 'artifacts', '5k')).length).toBeGreaterThan(0);
      expect((await rows(emb, 'artifacts', 'the')).length).toBeGreaterThan(0);
      expect((await rows(emb, 'memories', 'brücke')).length).toBeGreaterThan(0);
    });
  });
});

describe('browse and the resource tree', () => {
  it('lists a type with limit 1 to 200, and full_heads adds the full documents', async () => {
    const get = await app.get('/v1/browse?type=neurons&limit=2', ws.key, ws.brainHeaders);
    expect(get.status, get.text).toBe(200);
    expect((get.body as { results: unknown[]; total: number }).results).toHaveLength(2);
    expect((get.body as { total: number }).total).toBe(4);
    expect((await app.get('/v1/browse', ws.key, ws.brainHeaders)).status).toBe(400);
    expect((await app.get('/v1/browse?type=planets', ws.key, ws.brainHeaders)).status).toBe(400);
    for (const limit of [0, 201]) expect((await post('/v1/browse', { type: 'neurons', limit })).status).toBe(400);
    const full = await post('/v1/browse', { type: 'artifacts', limit: 200, full_heads: true });
    expect(full.status, full.text).toBe(200);
    const b = full.body as { results: { id: string }[]; heads: { id: string; title: string }[] };
    expect(b.heads.map((h) => h.id).sort()).toEqual(b.results.map((r) => r.id).sort());
    expect(b.heads.map((h) => h.title).sort()).toEqual(['Holiday plan', 'Onboarding guide', 'Quarterly report']);
  });

  it('root, folders, batch parents; parent_key and parent_keys are exclusive; a cursor pages one parent', async () => {
    const root = (await post('/v1/browse/resource-tree', {})).body as { nodes: { key: string; count: number }[] };
    expect(root.nodes.find((n) => n.key === 'artifacts')!.count).toBe(3);
    const arts = (await post('/v1/browse/resource-tree', { parent_key: 'artifacts' })).body as {
      nodes: { key: string; kind: string; label: string }[];
    };
    expect(arts.nodes.map((n) => `${n.kind}:${n.label}`)).toEqual(['folder:guides', 'folder:reports']);
    const batch = (
      await post('/v1/browse/resource-tree', { parent_keys: ['artifacts/reports', 'artifacts/reports/2026'] })
    ).body as { results: { parent_key: string; nodes: { label: string }[] }[] };
    expect(batch.results.map((r) => [r.parent_key, r.nodes.map((n) => n.label)])).toEqual([
      ['artifacts/reports', ['2026', 'Holiday plan']],
      ['artifacts/reports/2026', ['Quarterly report']],
    ]);
    expect((await post('/v1/browse/resource-tree', { parent_key: 'artifacts', parent_keys: ['neurons'] })).status).toBe(
      400,
    );
    expect((await post('/v1/browse/resource-tree', { parent_keys: ['neurons'], cursor: 'x' })).status).toBe(400);
    expect((await post('/v1/browse/resource-tree', { parent_key: 'planets' })).status).toBe(400);
    expect((await app.post('/v1/browse/resource-tree', ws.key, {})).status).toBe(400); // no brain at all
    const seen: string[] = [];
    let cursor: string | null | undefined;
    do {
      const page = await post('/v1/browse/resource-tree', {
        parent_key: 'neurons',
        limit: 3,
        ...(cursor ? { cursor } : {}),
      });
      expect(page.status, page.text).toBe(200);
      const b = page.body as { nodes: { label: string }[]; next_cursor: string | null; total: number };
      expect(b.nodes.length).toBeLessThanOrEqual(3);
      seen.push(...b.nodes.map((n) => n.label));
      cursor = b.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['invoice-clerk', 'support-triage', 'travel-planner', 'weather-bot']);
    const first = (await post('/v1/browse/resource-tree', { parent_key: 'neurons', limit: 3 })).body as {
      next_cursor: string;
    };
    expect(
      (await post('/v1/browse/resource-tree', { parent_key: 'artifacts', cursor: first.next_cursor })).status,
    ).toBe(400);
  });
});

describe('recollection search', () => {
  type Rec = { results: { memory_id: string; name: string; similarity: number; tags: string[] }[] };
  const rs = async (body: Record<string, unknown>) => {
    const res = await post('/v1/recollections/search', body);
    expect(res.status, res.text).toBe(200);
    return res.body as Rec;
  };
  const owners = () => ({ owner_type: 'neuron', owner_ids: [ids['support-triage'], ids['travel-planner']] });

  it("vector (default, qdrant is a synonym), fulltext and hybrid find the owners' memories", async () => {
    for (const strategy of ['vector', 'qdrant', 'fulltext', 'hybrid']) {
      const r = await rs({
        query: 'how should we contact the customer by email',
        ...owners(),
        strategy,
        threshold: 0.3,
      });
      expect(r.results[0]?.name, strategy).toBe('customer prefers email');
    }
    const only = await rs({
      query: 'travel budget euros',
      owner_type: 'neuron',
      owner_ids: [ids['support-triage']],
      strategy: 'fulltext',
    });
    expect(only.results.map((r) => r.name)).not.toContain('budget cap');
  });

  it('the vector threshold (default 0.7) drops weak matches; tags must all match; project filters', async () => {
    const weak = await rs({ query: 'zebra', ...owners(), threshold: 0.99 });
    expect(weak.results).toEqual([]);
    expect(
      (
        await rs({ query: 'customer email', ...owners(), strategy: 'fulltext', tags: ['contact', 'alice'] })
      ).results.map((r) => r.name),
    ).toEqual(['customer prefers email']);
    expect(
      (await rs({ query: 'customer email', ...owners(), strategy: 'fulltext', tags: ['contact', 'bob'] })).results,
    ).toEqual([]);
    expect(
      (await rs({ query: 'customer email', ...owners(), strategy: 'fulltext', project: 'crm' })).results,
    ).toHaveLength(1);
    expect((await rs({ query: 'customer email', ...owners(), strategy: 'fulltext', project: 'erp' })).results).toEqual(
      [],
    );
  });

  it('owner_ids may be empty with a trace owner and trace_id; brain by header or body; every 400', async () => {
    const r = await rs({
      query: 'lighthouse opening hours',
      owner_type: 'trace',
      owner_ids: [],
      trace_id: ids.trace,
      strategy: 'hybrid',
    });
    expect(r.results.map((x) => x.name)).toEqual(['trace note']);
    const byBody = await app.post('/v1/recollections/search', ws.key, {
      query: 'lighthouse',
      owner_type: 'trace',
      owner_ids: [ids.trace],
      brain_id: ws.brainId,
      strategy: 'fulltext',
    });
    expect(byBody.status, byBody.text).toBe(200);
    expect((byBody.body as Rec).results.map((x) => x.name)).toEqual(['trace note']);
    expect((await post('/v1/recollections/search', { query: 'x', owner_type: 'trace', owner_ids: [] })).status).toBe(
      400,
    );
    expect((await post('/v1/recollections/search', { query: 'x', owner_ids: [ids.trace] })).status).toBe(400);
    expect((await post('/v1/recollections/search', { owner_type: 'trace', owner_ids: [ids.trace] })).status).toBe(400);
    expect(
      (await post('/v1/recollections/search', { query: 'x', owner_type: 'trace', owner_ids: [ids.trace], limit: 101 }))
        .status,
    ).toBe(400);
    expect(
      (
        await post('/v1/recollections/search', {
          query: 'x',
          owner_type: 'trace',
          owner_ids: [ids.trace],
          strategy: 'bm25',
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await app.post('/v1/recollections/search', ws.key, {
          query: 'x',
          owner_type: 'trace',
          owner_ids: [ids.trace],
          brain_id: randomUUID(),
        })
      ).status,
    ).toBe(404);
  });
});
