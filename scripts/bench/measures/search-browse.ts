/**
 * Browse, the resource tree and grep on Weaviate at two workspace sizes (part of section e of
 * `npm run bench`, in the Weaviate that measures/search.ts starts; alone: `npx tsx
 * scripts/bench/measures/search-browse.ts`, which starts its own). docs/search.md, "Weaviate", says what each
 * call reads; this bench shows whether that grows with the workspace.
 *
 * Each size is one workspace (a tenant) of N memory heads (a chunk for every fourth, 30 words
 * each from a vocabulary of 2,000) and N/10 artifacts in 70 folders two levels deep, without
 * vectors. Timed, each the median of 5 calls after one more: a browse page of 200 at offset 0, N / 2
 * and N − 200 (`page`) and its count alone, the tree's root, its `artifacts` level (folders) and one folder's level,
 * and grep for a word in about 1 % of the memories and for one in none. `BENCH_SEARCH_BROWSE`: the
 * sizes (default `2000,20000`; `0` skips). `BENCH_SEARCH_BROWSE_SCAN=1` adds what the same tree
 * and grep calls cost as a scan of every visible entry (the code before engine-side tree and grep),
 * one call each.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WeaviateClient } from 'weaviate-client';
import { whereTest, type EntryWhere, type IndexFilter, type SearchBackend } from '../../../src/search/backend.js';
import type { IndexEntry, SearchType } from '../../../src/search/memory-index.js';
import { LISTABLE_TYPES } from '../../../src/search/query.js';
import { connectWeaviate, createWeaviateIndex } from '../../../src/search/weaviate-index.js';
import { grepRows } from '../../../src/search/grep.js';
import { childrenFrom, engineSource, headsSource } from '../../../src/search/tree.js';
import { startEmbedded } from '../../embedded.js';

const BRAIN = 'brain-1';
const REPEAT = 5;

export interface BrowseBenchSize {
  memories: number;
  /** Objects written (heads, chunks, artifacts) and how long that took. */
  objects: number;
  fillMs: number;
  /** Medians, ms. */
  pageFirst: number;
  pageDeep: number;
  /** At offset N / 2: the most a page reads (from either end). */
  pageMiddle: number;
  /** The page's count alone (`aggregate.overAll` with the filter: `page` with limit 0). */
  pageCount: number;
  treeRoot: number;
  treeFolders: number;
  treeFolder: number;
  grepRare: number;
  grepNone: number;
  /** With BENCH_SEARCH_BROWSE_SCAN=1: the same through a scan of every visible entry, one call each (ms). */
  scan: { treeRoot: number; treeFolders: number; grepRare: number } | null;
}

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** N memories (a chunk for every fourth) and N/10 artifacts in folders, one workspace. */
function entries(workspaceId: string, n: number): IndexEntry[][] {
  const rand = rng(n);
  const words = Array.from({ length: 2000 }, (_, i) => `w${i.toString(36)}x`);
  const text = () => Array.from({ length: 30 }, () => words[Math.floor(rand() * words.length)]).join(' ');
  const t0 = Date.UTC(2026, 0, 1);
  const out: IndexEntry[][] = [];
  const head = (type: SearchType, i: number, path: string): IndexEntry => {
    const resourceId = `${type}-${n}-${i}`;
    return {
      id: resourceId,
      workspaceId,
      brainId: BRAIN,
      type,
      resourceId,
      title: `${type} ${i}`,
      description: `${type} number ${i}`,
      // One memory in a hundred holds the rare word (grep's first pattern).
      text: `${text()}${i % 100 === 7 ? ' platypus' : ''}`,
      path,
      url: `/v1/${type}/${resourceId}`,
      displayPath: `${type}/${resourceId}`,
      // Pairs share an updatedAt: browse's tie-break is exercised as in use.
      updatedAt: t0 + Math.floor(i / 2) * 1000,
    };
  };
  for (let i = 0; i < n; i++) {
    const h = head('memories', i, '');
    out.push(i % 4 ? [h] : [h, { ...h, id: `${h.id}-c0`, text: text(), chunkIndex: 0 }]);
  }
  for (let i = 0; i < n / 10; i++) out.push([head('artifacts', i, i % 11 ? `dept${i % 10}/team${i % 7}` : '')]);
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function time(run: () => Promise<unknown>, times = REPEAT): Promise<number> {
  await run();
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const t = performance.now();
    await run();
    ms.push(performance.now() - t);
  }
  return median(ms);
}

const visible = (types: SearchType[], w: Partial<EntryWhere>, headsOnly: boolean): IndexFilter => {
  const where: EntryWhere = { types, brainId: BRAIN, headsOnly, ...w };
  return { where, test: whereTest(where), post: false };
};

/** The figures of each size, in a Weaviate the caller connected to (a collection of its own, deleted after). */
export async function measureBrowse(
  client: WeaviateClient,
  say: (line: string) => void,
  sizes = (process.env.BENCH_SEARCH_BROWSE ?? '2000,20000')
    .split(',')
    .map(Number)
    .filter((n) => n > 0),
): Promise<BrowseBenchSize[]> {
  const database = `browsebench${Date.now().toString(36)}`;
  const wv = await createWeaviateIndex({ client, database, model: 'local/none', dimension: 4 });
  const b: SearchBackend = wv.backend;
  const out: BrowseBenchSize[] = [];
  try {
    for (const n of sizes) {
      const ws = `ws-${n}`;
      const resources = entries(ws, n);
      const objects = resources.reduce((k, r) => k + r.length, 0);
      say(`search browse: writing ${objects} objects (${n} memories) into Weaviate`);
      let t = performance.now();
      const fill = wv.beginResync().target;
      for (let i = 0; i < resources.length; i += 1000) await fill.replaceResources(resources.slice(i, i + 1000));
      const fillMs = performance.now() - t;
      const memories = visible(['memories'], {}, true);
      const tree = engineSource(b, ws, (type, where) => visible([type], where, true));
      const grep = (pattern: string, index: SearchBackend = b) =>
        grepRows(index, ws, 'memories', pattern, (w, headsOnly) => visible(['memories'], w, headsOnly));
      const size: BrowseBenchSize = {
        memories: n,
        objects,
        fillMs,
        pageFirst: await time(() => b.page!(ws, memories, { offset: 0, limit: 200 })),
        pageDeep: await time(() => b.page!(ws, memories, { offset: n - 200, limit: 200 })),
        pageMiddle: await time(() => b.page!(ws, memories, { offset: n / 2, limit: 200 })),
        pageCount: await time(() => b.page!(ws, memories, { offset: 0, limit: 0 })),
        treeRoot: await time(() => childrenFrom(tree, null)),
        treeFolders: await time(() => childrenFrom(tree, 'artifacts')),
        treeFolder: await time(() => childrenFrom(tree, 'artifacts/dept3/team2')),
        grepRare: await time(() => grep('platypus')),
        grepNone: await time(() => grep('kangaroo')),
        scan: null,
      };
      if (process.env.BENCH_SEARCH_BROWSE_SCAN === '1') {
        // The code before: one scan of every visible head for the tree, every visible entry (all fields) for grep.
        const heads = () => headsSource(() => b.scan(ws, visible([...LISTABLE_TYPES], {}, true)));
        const whole: SearchBackend = {
          ...b,
          scan: (w, f) => b.scan(w, { ...f, where: { ...f.where, contains: undefined } }),
        };
        t = performance.now();
        await childrenFrom(heads(), null);
        const treeRoot = performance.now() - t;
        t = performance.now();
        await childrenFrom(heads(), 'artifacts');
        const treeFolders = performance.now() - t;
        t = performance.now();
        await grep('platypus', whole);
        size.scan = { treeRoot, treeFolders, grepRare: performance.now() - t };
      }
      say(`search browse: ${browseLine(size)}`);
      out.push(size);
    }
  } finally {
    await client.collections.delete(wv.collection).catch(() => {});
  }
  return out;
}

const ms = (x: number) => (x < 100 ? x.toFixed(1) : Math.round(x).toString());
function browseLine(s: BrowseBenchSize): string {
  return (
    `${s.memories} memories (${s.objects} objects, written in ${(s.fillMs / 1000).toFixed(1)} s): browse page of 200 first ${ms(s.pageFirst)} ms, at ${s.memories / 2} ${ms(s.pageMiddle)} ms, at ${s.memories - 200} ${ms(s.pageDeep)} ms (its count alone ${ms(s.pageCount)} ms) | ` +
    `tree root ${ms(s.treeRoot)} ms, artifacts ${ms(s.treeFolders)} ms, one folder ${ms(s.treeFolder)} ms | grep 1 % ${ms(s.grepRare)} ms, none ${ms(s.grepNone)} ms` +
    (s.scan
      ? ` | by scan: tree root ${ms(s.scan.treeRoot)} ms, artifacts ${ms(s.scan.treeFolders)} ms, grep 1 % ${ms(s.scan.grepRare)} ms`
      : '')
  );
}

export function browseSummary(sizes: BrowseBenchSize[] | null): string[] {
  if (!sizes) return ['      Weaviate browse, tree and grep: skipped'];
  return [
    '      Weaviate browse, tree and grep (medians of 5; scripts/bench/measures/search-browse.ts):',
    ...sizes.map((s) => `        ${browseLine(s)}`),
  ];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const say = (l: string) => console.log(`[bench] ${l}`);
  void (async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-bench-browse-'));
    const services = await startEmbedded({
      dataDir,
      need: { mongo: false, redis: false, temporal: false, weaviate: true },
      temporalUi: false,
      log: (l) => say(`search browse: ${l}`),
    });
    try {
      const client = await connectWeaviate({ url: services.weaviateUrl!, grpc: services.weaviateGrpcAddress });
      const sizes = await measureBrowse(client, say);
      await client.close();
      console.log(browseSummary(sizes).join('\n'));
    } finally {
      await services.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
    process.exit(0);
  })().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
