/**
 * Search figures for `npm run bench` (docs/search.md, Figures): the embedded index at 100k chunks
 * in one workspace (hybrid query latency, vector recall against brute force, BM25 agreement with
 * a reference, build time and memory) and relevance on a labelled set over the spec documents
 * (nDCG@10 of lexical, vector and hybrid). Everything runs in process on the real index, the real
 * ranking path (src/search/rank.ts) and the offline embedder; run alone with `npm run bench:search`.
 * Beside it, the same chunks in a Weaviate the bench starts (hybrid p50/p95, recall@10, fill rate,
 * server RSS), browse, the tree and grep at 2,000 and 20,000 memories in a workspace
 * (scripts/bench/measures/search-browse.ts; BENCH_SEARCH_BROWSE sets the sizes, 0 skips), and API start-up
 * with the chunks in the store on both homes
 * (scripts/bench/measures/search-startup.ts; BENCH_SEARCH_STARTUP=0 skips it, BENCH_SEARCH_STARTUP_CHUNKS
 * sets the sizes, 100000,1000000 by default).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../../src/kernel/config.js';
import { createWinkEmbedder } from '../../../src/embeddings/index.js';
import { loadWinkVectors } from '../../../src/embeddings/wink.js';
import { createMemoryIndex, tokenize, type IndexEntry, type MemoryIndex } from '../../../src/search/memory-index.js';
import { embeddedBackend, type IndexFilter, type SearchBackend } from '../../../src/search/backend.js';
import { rankEntries } from '../../../src/search/rank.js';
import { connectWeaviate, createWeaviateIndex } from '../../../src/search/weaviate-index.js';
import type { ServiceForm } from '../../../test/support/worker.js';
import { browseSummary, measureBrowse, type BrowseBenchSize } from './search-browse.js';
import { measureSearchStartup, startupSummary, type SearchStartupResult } from './search-startup.js';
import { build } from '../../build.js';
import { cacheDir, startEmbedded } from '../../embedded.js';

const CHUNKS = Number(process.env.BENCH_SEARCH_CHUNKS ?? 100_000);
const QUERIES = 300;
const WS = 'bench-ws';
const K = 60;
/** The defaults of SEARCH_LEXICAL_WEIGHT and SEARCH_VECTOR_WEIGHT (src/kernel/config.ts). */
const WEIGHTS = {
  lexical: loadConfigDefaults().SEARCH_LEXICAL_WEIGHT,
  vector: loadConfigDefaults().SEARCH_VECTOR_WEIGHT,
};
/** Vector weights tried beside the default (lexical weight 1) on the labelled set. */
const VECTOR_WEIGHTS = [1, 0.75, 0.5, 0.25];
function loadConfigDefaults() {
  return loadConfig({}, {});
}
const here = path.dirname(fileURLToPath(import.meta.url));
/** No filter (the relevance set is one workspace of one type). */
const ALL: IndexFilter = { where: { types: ['artifacts'] }, test: () => true, post: false };

export interface SearchBenchResult {
  chunks: number;
  buildMs: number;
  embedMs: number;
  heapMb: number;
  rssMb: number;
  hybrid: { p50: number; p95: number };
  hybridHard: { p50: number; p95: number };
  lexical: { p50: number; p95: number };
  vector: { p50: number; p95: number };
  recall10: number;
  agreement: { easy: number; hard: number };
  /** The same chunks and queries with the index in Weaviate (null: no weaviate-server provisioned, or BENCH_SEARCH_WEAVIATE=0). */
  weaviate: {
    ingestMs: number;
    hybrid: { p50: number; p95: number };
    recall10: number;
    /** The top 10 of the vector leg as rank.ts asks for it (depth 50, the brain filter), against brute force. */
    recall10Depth50: number;
    rssMb: number | null;
    /** Browse, the tree and grep at two workspace sizes (scripts/bench/measures/search-browse.ts; null: BENCH_SEARCH_BROWSE=0). */
    browse: BrowseBenchSize[] | null;
  } | null;
  /** API start-up with the chunks in the store, both homes (scripts/bench/measures/search-startup.ts; null: BENCH_SEARCH_STARTUP=0). */
  startup: SearchStartupResult | null;
  relevance: {
    queries: number;
    docs: number;
    lexical: number;
    vector: number;
    hybrid: number;
    byKind: Record<string, { n: number; lexical: number; vector: number; hybrid: number }>;
    sweep: Record<string, number>;
  } | null;
}

function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const mb = (b: number) => Math.round(b / 1e5) / 10;

/** BM25 the slow, obvious way (k1 1.2, b 0.75, title counted twice), over every document. */
const tokenCache = new WeakMap<IndexEntry[], string[][]>();
function bm25Reference(docs: IndexEntry[], terms: string[], top: number): string[] {
  let toks = tokenCache.get(docs);
  if (!toks)
    tokenCache.set(
      docs,
      (toks = docs.map((d) => [
        ...tokenize(d.title),
        ...tokenize(d.title),
        ...tokenize(d.description),
        ...tokenize(d.text),
      ])),
    );
  const avgdl = toks.reduce((a, t) => a + t.length, 0) / docs.length;
  const q = [...new Set(terms)];
  const df = new Map(q.map((t) => [t, toks.filter((x) => x.includes(t)).length]));
  const scored: { id: string; s: number }[] = [];
  toks.forEach((t, i) => {
    let s = 0;
    for (const term of q) {
      const n = df.get(term)!;
      if (!n) continue;
      let tf = 0;
      for (const w of t) if (w === term) tf++;
      if (!tf) continue;
      const idf = Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
      s += idf * ((tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * t.length) / avgdl)));
    }
    if (s > 0) scored.push({ id: docs[i].id, s });
  });
  return scored
    .sort((a, b) => b.s - a.s || (a.id < b.id ? -1 : 1))
    .slice(0, top)
    .map((x) => x.id);
}

/** Discounted cumulative gain at 10 of a ranked list of ids against graded judgements, normalised by the ideal. */
function ndcg10(ranked: string[], relevant: Record<string, number>): number {
  const gain = (g: number) => 2 ** g - 1;
  const dcg = ranked.slice(0, 10).reduce((a, id, i) => a + gain(relevant[id] ?? 0) / Math.log2(i + 2), 0);
  const ideal = Object.values(relevant)
    .sort((a, b) => b - a)
    .slice(0, 10)
    .reduce((a, g, i) => a + gain(g) / Math.log2(i + 2), 0);
  return ideal ? dcg / ideal : 0;
}

/** The spec documents split at every heading (the labelled set's documents). */
async function specSections(): Promise<{ id: string; title: string; text: string }[]> {
  const dir = path.join(here, '..', '..', '..', '..', 'shared', 'spec');
  const files = [
    '1-conversations-agents-workflows-jobs.md',
    '2-knowledge-search-catalog-services.md',
    '3-snake-demo-service.md',
  ];
  const out: { id: string; title: string; text: string }[] = [];
  for (const f of files) {
    const lines = (await readFile(path.join(dir, f), 'utf8')).split('\n');
    let cur: { id: string; title: string; text: string[] } | null = null;
    const flush = () => {
      if (cur) out.push({ id: cur.id, title: cur.title, text: cur.text.join('\n') });
    };
    for (const line of lines) {
      const m = /^#+\s+(.*)$/.exec(line);
      if (m) {
        flush();
        cur = { id: `${f.replace(/\.md$/, '')}#${m[1].trim()}`, title: m[1].trim(), text: [] };
      } else cur?.text.push(line);
    }
    flush();
  }
  return out;
}

async function relevance(
  embed: (texts: string[]) => Promise<Float32Array[]>,
  model: string,
): Promise<SearchBenchResult['relevance']> {
  let set: { queries: { q: string; kind: string; relevant: Record<string, number> }[] };
  try {
    set = JSON.parse(await readFile(path.join(here, 'search-relevance.json'), 'utf8')) as typeof set;
  } catch {
    return null;
  }
  const sections = await specSections();
  const index = createMemoryIndex();
  const backend = embeddedBackend(index);
  const vectors = await embed(sections.map((s) => `${s.title}. ${s.text}`));
  sections.forEach((s, i) =>
    index.replaceResource('spec', s.id, [
      {
        id: s.id,
        workspaceId: 'spec',
        brainId: null,
        type: 'artifacts',
        resourceId: s.id,
        title: s.title,
        description: '',
        text: s.text,
        path: '',
        url: '',
        displayPath: s.id,
        updatedAt: 0,
        vector: vectors[i],
        vectorModel: model,
      },
    ]),
  );
  const modes = { lexical: 0, vector: 0, hybrid: 0 };
  const sweep: Record<number, number> = {};
  const byKind: Record<string, { n: number; lexical: number; vector: number; hybrid: number }> = {};
  for (const q of set.queries) {
    const [qv] = await embed([q.q]);
    const run = async (lexical: boolean, vector: boolean, weights = WEIGHTS) =>
      (
        await rankEntries(backend, {
          workspaceId: 'spec',
          terms: tokenize(q.q),
          query: vector ? { vector: qv, model } : null,
          filter: ALL,
          depth: 50,
          lexical,
          k: K,
          weights,
        })
      ).map((h) => h.entry.resourceId);
    const scores = {
      lexical: ndcg10(await run(true, false), q.relevant),
      vector: ndcg10(await run(false, true), q.relevant),
      hybrid: ndcg10(await run(true, true), q.relevant),
    };
    for (const w of VECTOR_WEIGHTS)
      sweep[w] = (sweep[w] ?? 0) + ndcg10(await run(true, true, { lexical: 1, vector: w }), q.relevant);
    const kind = (byKind[q.kind] ??= { n: 0, lexical: 0, vector: 0, hybrid: 0 });
    kind.n++;
    for (const m of ['lexical', 'vector', 'hybrid'] as const) {
      modes[m] += scores[m];
      kind[m] += scores[m];
    }
  }
  const n = set.queries.length;
  for (const k of Object.values(byKind)) {
    k.lexical /= k.n;
    k.vector /= k.n;
    k.hybrid /= k.n;
  }
  return {
    queries: n,
    docs: sections.length,
    lexical: modes.lexical / n,
    vector: modes.vector / n,
    hybrid: modes.hybrid / n,
    byKind,
    sweep: Object.fromEntries(Object.entries(sweep).map(([w, v]) => [w, v / n])),
  };
}

/** `form`: how the start-up measure runs its API processes (bench.ts builds dist/ first: compiled). */
export async function measureSearch(
  say: (line: string) => void,
  form: ServiceForm = 'compiled',
): Promise<SearchBenchResult> {
  const cacheDir = process.env.EMBEDDINGS_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'cortex', 'embeddings');
  const embedder = createWinkEmbedder(cacheDir);
  const wv = await loadWinkVectors(cacheDir);
  const words: string[] = [];
  for (let row = 0; row < Math.min(30_000, wv.size); row++) {
    const w = wv.index.word(row);
    if (/^[a-z]+$/.test(w) && wv.index.get(w) === row) words[row] = w;
  }
  const vocab = words.filter(Boolean);
  const r = rng(42);
  // Zipf-like: frequent words often, rare words seldom, as in real text.
  const word = () => vocab[Math.min(vocab.length - 1, Math.floor(vocab.length * r() ** 3))];

  say(`search: generating ${CHUNKS} chunks (40–120 words each) and embedding them with ${embedder.model}`);
  const texts = Array.from({ length: CHUNKS }, () => Array.from({ length: 40 + Math.floor(r() * 80) }, word).join(' '));
  const t0 = performance.now();
  const vecs: Float32Array[] = [];
  for (let i = 0; i < texts.length; i += 2000) vecs.push(...(await embedder.embed(texts.slice(i, i + 2000))).vectors);
  const embedMs = performance.now() - t0;
  const docs: IndexEntry[] = texts.map((text, i) => ({
    id: `c${i}`,
    workspaceId: WS,
    brainId: 'b',
    type: 'artifacts',
    resourceId: `r${Math.floor(i / 4)}`,
    title: `document ${Math.floor(i / 4)}`,
    description: '',
    text,
    path: '',
    url: '',
    displayPath: '',
    updatedAt: 0,
    vector: vecs[i],
    vectorModel: embedder.model,
    chunkIndex: i % 4,
  }));
  global.gc?.();
  const heap0 = process.memoryUsage();
  const t1 = performance.now();
  const index: MemoryIndex = createMemoryIndex();
  for (let i = 0; i < docs.length; i += 4) index.replaceResource(WS, docs[i].resourceId, docs.slice(i, i + 4));
  const buildMs = performance.now() - t1;
  const backend: SearchBackend = embeddedBackend(index);
  global.gc?.();
  const heap1 = process.memoryUsage();
  say(`search: index built in ${Math.round(buildMs)} ms (${index.size(WS)} entries)`);

  const mid = () => vocab[200 + Math.floor(r() * 8000)];
  const easy = Array.from({ length: QUERIES }, () => Array.from({ length: 2 + Math.floor(r() * 2) }, mid).join(' '));
  const hard = easy.map((q) => `${q} ${vocab[Math.floor(r() * 20)]}`);
  const filter = (e: IndexEntry) => e.brainId === 'b' && e.type === 'artifacts';
  const timeHybrid = async (qs: string[]) => {
    const ms: number[] = [];
    for (const q of qs) {
      const s = performance.now();
      const [qv] = (await embedder.embed([q])).vectors;
      (
        await rankEntries(backend, {
          workspaceId: WS,
          terms: tokenize(q),
          query: { vector: qv, model: embedder.model },
          filter: { where: { types: ['artifacts'], brainId: 'b' }, test: filter, post: false },
          depth: 50,
          lexical: true,
          k: K,
          weights: WEIGHTS,
        })
      ).slice(0, 10);
      ms.push(performance.now() - s);
    }
    return { p50: pct(ms, 0.5), p95: pct(ms, 0.95) };
  };
  await timeHybrid(easy.slice(0, 20)); // warm-up
  const hybrid = await timeHybrid(easy);
  const hybridHard = await timeHybrid(hard);
  const legMs = { lexical: [] as number[], vector: [] as number[] };
  const qvs = (await embedder.embed(easy)).vectors;
  easy.forEach((q, i) => {
    let s = performance.now();
    index.lexical(WS, tokenize(q), filter, 50);
    legMs.lexical.push(performance.now() - s);
    s = performance.now();
    index.vector(WS, qvs[i], embedder.model, filter, 50);
    legMs.vector.push(performance.now() - s);
  });

  say('search: recall@10 of the vector leg against brute force, and BM25 agreement with the reference');
  let recall = 0;
  const recallQueries = 50;
  for (let i = 0; i < recallQueries; i++) {
    const q = qvs[i];
    const brute = docs
      .map((d) => {
        let s = 0;
        for (let j = 0; j < q.length; j++) s += q[j] * d.vector![j];
        return { id: d.id, s };
      })
      .sort((a, b) => b.s - a.s)
      .slice(0, 10)
      .map((x) => x.id);
    const got = new Set(index.vector(WS, q, embedder.model, () => true, 10).map((h) => h.entry.id));
    recall += brute.filter((id) => got.has(id)).length / 10;
  }
  const agree = (qs: string[]) => {
    let a = 0;
    for (const q of qs) {
      const ref = bm25Reference(docs, tokenize(q), 10);
      const got = new Set(index.lexical(WS, tokenize(q), () => true, 10).map((h) => h.entry.id));
      a += ref.length ? ref.filter((id) => got.has(id)).length / ref.length : 1;
    }
    return a / qs.length;
  };
  const agreement = { easy: agree(easy.slice(0, 10)), hard: agree(hard.slice(0, 10)) };

  say('search: relevance on the labelled spec queries');
  const rel = await relevance(async (t) => (await embedder.embed(t)).vectors, embedder.model);
  const weaviate = await measureWeaviate(docs, easy, qvs, embedder, say);
  const startup = process.env.BENCH_SEARCH_STARTUP === '0' ? null : await measureSearchStartup(say, form);
  return {
    chunks: CHUNKS,
    buildMs,
    embedMs,
    heapMb: mb(heap1.heapUsed + heap1.arrayBuffers - heap0.heapUsed - heap0.arrayBuffers),
    rssMb: mb(heap1.rss - heap0.rss),
    hybrid,
    hybridHard,
    lexical: { p50: pct(legMs.lexical, 0.5), p95: pct(legMs.lexical, 0.95) },
    vector: { p50: pct(legMs.vector, 0.5), p95: pct(legMs.vector, 0.95) },
    recall10: recall / recallQueries,
    agreement,
    weaviate,
    startup,
    relevance: rel,
  };
}

/** Brute-force top 10 of the chunks by inner product (vectors are unit length). */
function bruteTop10(docs: IndexEntry[], q: Float32Array): string[] {
  return docs
    .map((d) => {
      let s = 0;
      for (let j = 0; j < q.length; j++) s += q[j] * d.vector![j];
      return { id: d.id, s };
    })
    .sort((a, b) => b.s - a.s)
    .slice(0, 10)
    .map((x) => x.id);
}

/**
 * The same chunks in a Weaviate that this bench starts (scripts/embedded.ts, fresh data folder):
 * ingest time, hybrid p50/p95 through the same ranking path (two engine legs fused by rank.ts) and
 * the vector leg's recall@10 against brute force (HNSW is approximate), and the server's RSS.
 */
async function measureWeaviate(
  docs: IndexEntry[],
  queries: string[],
  qvs: Float32Array[],
  embedder: { model: string; embed(t: string[]): Promise<{ vectors: Float32Array[] }> },
  say: (line: string) => void,
): Promise<SearchBenchResult['weaviate']> {
  if (process.env.BENCH_SEARCH_WEAVIATE === '0' || !existsSync(path.join(cacheDir(), 'bin', 'weaviate-server'))) {
    say('search: weaviate-server not provisioned (or BENCH_SEARCH_WEAVIATE=0): Weaviate skipped');
    return null;
  }
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-bench-wv-'));
  const services = await startEmbedded({
    dataDir,
    need: { mongo: false, redis: false, temporal: false, weaviate: true },
    temporalUi: false,
    log: (l) => say(`search: ${l}`),
  });
  try {
    const client = await connectWeaviate({ url: services.weaviateUrl!, grpc: services.weaviateGrpcAddress });
    const wv = await createWeaviateIndex({ client, database: 'bench', model: embedder.model, dimension: 100 });
    say(`search: writing ${docs.length} chunks into Weaviate`);
    const t0 = performance.now();
    const resources: IndexEntry[][] = [];
    for (let i = 0; i < docs.length; i += 4) resources.push(docs.slice(i, i + 4));
    const fill = wv.beginResync().target;
    for (let i = 0; i < resources.length; i += 1000) await fill.replaceResources(resources.slice(i, i + 1000));
    const ingestMs = performance.now() - t0;
    const filter: IndexFilter = {
      where: { types: ['artifacts'], brainId: 'b' },
      test: (e) => e.brainId === 'b' && e.type === 'artifacts',
      post: false,
    };
    const ms: number[] = [];
    for (const [i, q] of queries.entries()) {
      const s = performance.now();
      const [qv] = (await embedder.embed([q])).vectors;
      await rankEntries(wv.backend, {
        workspaceId: WS,
        terms: tokenize(q),
        query: { vector: qv, model: embedder.model },
        filter,
        depth: 50,
        lexical: true,
        k: K,
        weights: WEIGHTS,
      });
      if (i >= 20) ms.push(performance.now() - s); // the first 20 warm up
    }
    let recall = 0;
    let recall50 = 0;
    const recallQueries = 50;
    for (let i = 0; i < recallQueries; i++) {
      const truth = bruteTop10(docs, qvs[i]);
      const got = new Set((await wv.backend.vector(WS, qvs[i], embedder.model, ALL, 10)).map((h) => h.entry.id));
      recall += truth.filter((id) => got.has(id)).length / 10;
      const deep = (await wv.backend.vector(WS, qvs[i], embedder.model, filter, 50))
        .slice(0, 10)
        .map((h) => h.entry.id);
      recall50 += truth.filter((id) => deep.includes(id)).length / 10;
    }
    let rssMb: number | null = null;
    try {
      const pid = services.pids?.weaviate;
      const status = pid ? await readFile(`/proc/${pid}/status`, 'utf8') : '';
      const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
      rssMb = kb ? Math.round(Number(kb) / 1024) : null;
    } catch {
      rssMb = null;
    }
    const browse = process.env.BENCH_SEARCH_BROWSE === '0' ? null : await measureBrowse(client, say);
    client.close().catch(() => {});
    return {
      browse,
      ingestMs,
      hybrid: { p50: pct(ms, 0.5), p95: pct(ms, 0.95) },
      recall10: recall / recallQueries,
      recall10Depth50: recall50 / recallQueries,
      rssMb,
    };
  } finally {
    await services.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const f2 = (n: number) => n.toFixed(2);
export function searchSummary(s: SearchBenchResult): string[] {
  const lines = [
    `  (e) Search: embedded index (RRF weights lexical ${WEIGHTS.lexical}, vector ${WEIGHTS.vector}), ${s.chunks} chunks in one workspace (offline 100-dim vectors), ${QUERIES} queries of 2–3 words`,
    `      hybrid (embed query + BM25 top 50 + exact vectors top 50 + RRF k=${K})  p50 ${f2(s.hybrid.p50)} ms  p95 ${f2(s.hybrid.p95)} ms   (goal p50 < 10 ms: ${s.hybrid.p50 < 10 ? 'met' : 'NOT met'})`,
    `      hybrid, queries with one very frequent word            p50 ${f2(s.hybridHard.p50)} ms  p95 ${f2(s.hybridHard.p95)} ms`,
    `      legs alone: BM25 p50 ${f2(s.lexical.p50)} / p95 ${f2(s.lexical.p95)} ms | vectors p50 ${f2(s.vector.p50)} / p95 ${f2(s.vector.p95)} ms`,
    `      vector recall@10 against brute force ${f2(s.recall10)} (goal ≥ 0.99) | BM25 top-10 agreement with the reference: easy ${f2(s.agreement.easy)}, hard ${f2(s.agreement.hard)}`,
    `      build ${Math.round(s.buildMs)} ms (embedding the chunks beforehand ${Math.round(s.embedMs)} ms) | memory: heap + buffers +${s.heapMb} MB, rss +${s.rssMb} MB`,
    s.weaviate
      ? `      Weaviate, same chunks and queries: hybrid (embed + bm25 leg + nearVector leg + RRF in rank.ts) p50 ${f2(s.weaviate.hybrid.p50)} ms  p95 ${f2(s.weaviate.hybrid.p95)} ms | vector recall@10 ${f2(s.weaviate.recall10)} (limit 10), ${f2(s.weaviate.recall10Depth50)} (top 10 of the depth-50 leg, brain filter) | ingest ${Math.round(s.weaviate.ingestMs)} ms (${Math.round(s.chunks / (s.weaviate.ingestMs / 1000))} entries/s) | server RSS ${s.weaviate.rssMb ?? '?'} MB`
      : '      Weaviate: skipped (weaviate-server not provisioned, or BENCH_SEARCH_WEAVIATE=0)',
    ...(s.weaviate ? browseSummary(s.weaviate.browse) : []),
    ...(s.startup ? startupSummary(s.startup) : ['      API start-up: skipped (BENCH_SEARCH_STARTUP=0)']),
  ];
  if (s.relevance) {
    const r = s.relevance;
    lines.push(
      `      relevance, ${r.queries} labelled queries over ${r.docs} spec sections, nDCG@10: lexical ${f2(r.lexical)} | vector ${f2(r.vector)} | hybrid ${f2(r.hybrid)}`,
    );
    lines.push(
      `        hybrid nDCG@10 by vector weight (lexical 1): ${Object.entries(r.sweep)
        .map(([w, v]) => `${w} → ${f2(v)}`)
        .join(' | ')}`,
    );
    for (const [kind, k] of Object.entries(r.byKind))
      lines.push(
        `        ${kind.padEnd(10)} (${String(k.n).padStart(2)} queries): lexical ${f2(k.lexical)} | vector ${f2(k.vector)} | hybrid ${f2(k.hybrid)}`,
      );
  } else {
    lines.push('      relevance: scripts/bench/measures/search-relevance.json not found');
  }
  return lines;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  // Alone (`npm run bench:search`): the start-up measure's API runs compiled, as in bench.ts (dist/ built first).
  const say = (l: string) => console.log(`[bench] ${l}`);
  (process.env.BENCH_SEARCH_STARTUP === '0' ? Promise.resolve() : build((l) => say(`build: ${l}`)))
    .then(() => measureSearch(say, 'compiled'))
    .then(
      (s) => {
        console.log(searchSummary(s).join('\n'));
        process.exit(0);
      },
      (e: unknown) => {
        console.error(e);
        process.exit(1);
      },
    );
}
