/**
 * Search start-up, part of bench (e) (docs/search.md, "Figures, embedded against Weaviate"): an API
 * process started while BENCH_SEARCH_STARTUP_CHUNKS (100,000, then 1,000,000) chunks are in the store,
 * on the embedded index and with the index in Weaviate. For each: the time from the process's spawn
 * to its first `/v1/health` 200, the time until a search answers 200 (the embedded index answers 503
 * until its rebuild from the store is in; Weaviate's stored position lets a search answer at once),
 * and the API's RSS then (VmRSS) and its peak (VmHWM). Weaviate is filled first by `npm run
 * search:sync` (the operator's step, timed: the sync's throughput). Each step is bounded by
 * BENCH_SEARCH_STARTUP_BUDGET_S (900): one that does not finish is reported as "did not fit in N s /
 * N MB", never left out. The chunks are memories of ten chunks each (text of 40–80 words, unit
 * 100-dim vectors of the offline model's id) written straight into the store.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Binary, type OptionalUnlessRequiredId } from 'mongodb';
import { encodeBlob } from '../../../src/kernel/store/codec.js';
import type { ChunkDoc, MemoryDoc } from '../../../src/knowledge/index.js';
import { buildWorkspace, startTestApp, type TestApp } from '../../../test/support/app.js';
import { spawnApiProcess, type ServiceForm } from '../../../test/support/worker.js';
import { cacheDir, freePorts, startEmbedded, type EmbeddedServices } from '../../embedded.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SIZES = (process.env.BENCH_SEARCH_STARTUP_CHUNKS ?? '100000,1000000')
  .split(',')
  .map((x) => Number(x.trim()))
  .filter((x) => x > 0);
const BUDGET_MS = Number(process.env.BENCH_SEARCH_STARTUP_BUDGET_S ?? 900) * 1000;
const PER_MEMORY = 10;
const MODEL = 'local/wink-sg-100d';
const TERM = 'zebrafinch';
const mb = (kb: number | null) => (kb === null ? null : Math.round(kb / 1024));

export interface StartupRun {
  home: 'embedded' | 'weaviate';
  chunks: number;
  /** Index entries (heads and chunks). */
  entries: number;
  /** Weaviate: `npm run search:sync` filling the index from the store (null on the embedded index). */
  syncMs: number | null;
  healthMs: number | null;
  searchMs: number | null;
  rssMb: number | null;
  peakRssMb: number | null;
  /** Set when a step did not finish within the budget or the process died. */
  didNotFit: string | null;
}
export interface SearchStartupResult {
  form: ServiceForm;
  /** Writing the chunks into the store (memories, chunks), per size. */
  fills: { chunks: number; ms: number }[];
  runs: StartupRun[];
}

function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}

/** VmRSS and VmHWM of a process, in kB (null once it is gone). */
async function memoryOf(pid: number | undefined): Promise<{ rss: number | null; peak: number | null }> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return { rss: null, peak: null };
  }
}

/** Memories `from`..`to` (`perMemory` chunks each) written straight into the store. */
export async function fill(
  app: TestApp,
  ws: { workspaceId: string; brainId: string; apiKeyId: string },
  from: number,
  to: number,
  perMemory = PER_MEMORY,
) {
  const r = rng(from + 7);
  const words =
    'alpha beta gamma delta river stone cloud market window garden signal paper orbit copper harbor lantern meadow puzzle velvet walnut'.split(
      ' ',
    );
  const sentence = (n: number) => Array.from({ length: n }, () => words[Math.floor(r() * words.length)]).join(' ');
  const vector = () => {
    const v = new Float32Array(100);
    let norm = 0;
    for (let i = 0; i < 100; i++) norm += (v[i] = r() * 2 - 1) ** 2;
    norm = Math.sqrt(norm);
    for (let i = 0; i < 100; i++) v[i] /= norm;
    return new Binary(Buffer.from(v.buffer));
  };
  const at = new Date();
  const memories = app.deps.db.collection<MemoryDoc>('memories');
  const chunks = app.deps.db.collection<ChunkDoc>('chunks');
  for (let m0 = from; m0 < to; m0 += 200) {
    const ms: MemoryDoc[] = [];
    const cs: ChunkDoc[] = [];
    for (let m = m0; m < Math.min(to, m0 + 200); m++) {
      const id = randomUUID();
      ms.push({
        _id: id,
        workspaceId: ws.workspaceId,
        brainId: ws.brainId,
        name: `memory ${m} ${m === 0 ? TERM : sentence(3)}`,
        description: sentence(12),
        sourceType: 'text',
        ownerType: null,
        ownerId: null,
        tags: [],
        metadata: encodeBlob({}),
        contentType: 'text/plain',
        size: 4000,
        blobKey: null,
        fileName: null,
        skipEmbedding: false,
        titleSource: 'caller',
        titleModel: null,
        ingest: {
          status: 'ready',
          jobId: randomUUID(),
          version: 1,
          chunkCount: PER_MEMORY,
          embeddedCount: PER_MEMORY,
          embeddingModel: MODEL,
          error: null,
        },
        createdBy: ws.apiKeyId,
        createdAt: at,
        updatedAt: at,
      });
      for (let index = 0; index < perMemory; index++)
        cs.push({
          _id: `${id}:1:${index}`,
          workspaceId: ws.workspaceId,
          brainId: ws.brainId,
          resourceKind: 'memory',
          resourceId: id,
          version: 1,
          index,
          source: 'body',
          text: sentence(40 + Math.floor(r() * 40)),
          tokens: 80,
          path: '',
          embedding: { model: MODEL, dimension: 100, vector: vector() },
          createdAt: at,
        });
    }
    await memories.insertMany(ms as OptionalUnlessRequiredId<MemoryDoc>[], { ordered: false });
    if (cs.length) await chunks.insertMany(cs as OptionalUnlessRequiredId<ChunkDoc>[], { ordered: false });
  }
}

/** The env of a process on the bench app's store and Redis (test/support/worker.ts does the same for the API). */
function envOf(app: TestApp, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    MONGODB_URI: app.config.MONGODB_URI,
    MONGODB_DB: app.config.MONGODB_DB,
    REDIS_URL: app.config.REDIS_URL,
    REDIS_PREFIX: app.config.REDIS_PREFIX,
    TEMPORAL_ADDRESS: app.config.TEMPORAL_ADDRESS,
    TEMPORAL_TASK_QUEUE: app.config.TEMPORAL_TASK_QUEUE,
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** `npm run search:sync` as an operator runs it; resolves with its time, or rejects past the budget. */
async function runSync(app: TestApp, env: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/search-sync.ts'], {
    cwd: root,
    env: envOf(app, env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (b: Buffer) => (output = (output + b.toString()).slice(-2000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const timer = setTimeout(() => child.kill('SIGKILL'), BUDGET_MS);
  const code = await new Promise<number | null>((res) => child.once('exit', res));
  clearTimeout(timer);
  if (code !== 0)
    throw new Error(`search:sync exited ${code} after ${Math.round(performance.now() - t0)} ms: ${output}`);
  return performance.now() - t0;
}

/** Starts an API process, times its first health 200 and its first search 200, and reads its memory. */
async function startApi(
  app: TestApp,
  ws: { key: string; brainId: string },
  home: StartupRun['home'],
  chunks: number,
  env: Record<string, string>,
  form: ServiceForm,
  syncMs: number | null,
): Promise<StartupRun> {
  const run: StartupRun = {
    home,
    chunks,
    entries: chunks + chunks / PER_MEMORY,
    syncMs,
    healthMs: null,
    searchMs: null,
    rssMb: null,
    peakRssMb: null,
    didNotFit: null,
  };
  const [port] = await freePorts(1);
  const t0 = performance.now();
  let child: ChildProcess | null = null;
  try {
    child = await spawnApiProcess(app, port, { ...env, SEARCH_BUILD_WAIT_MS: '0' }, form);
    run.healthMs = performance.now() - t0;
    let exited = false;
    child.once('exit', () => (exited = true));
    let peak: number | null = null;
    while (performance.now() - t0 < BUDGET_MS && !exited) {
      const res = await fetch(`http://127.0.0.1:${port}/v1/search`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.key}`, 'content-type': 'application/json', 'x-brain-id': ws.brainId },
        body: JSON.stringify({ query: `memories/${TERM}`, limit: 5 }),
      }).catch(() => null);
      const m = await memoryOf(child.pid);
      peak = m.peak ?? peak;
      if (res?.status === 200) {
        const body = (await res.json()) as { results: { title: string }[] };
        if (!body.results.some((h) => h.title.includes(TERM)))
          throw new Error(`search answered without the memory: ${JSON.stringify(body).slice(0, 300)}`);
        run.searchMs = performance.now() - t0;
        run.rssMb = mb(m.rss);
        run.peakRssMb = mb(m.peak);
        break;
      }
      await res?.body?.cancel();
      await new Promise((r) => setTimeout(r, 250));
    }
    if (run.searchMs === null)
      run.didNotFit = `${exited ? 'the API exited' : 'no search answer'} after ${Math.round((performance.now() - t0) / 1000)} s, peak RSS ${mb(peak) ?? '?'} MB`;
  } catch (err) {
    run.didNotFit = `${(err as Error).message.slice(0, 200)} (after ${Math.round((performance.now() - t0) / 1000)} s)`;
  } finally {
    child?.kill('SIGTERM');
    if (child) await new Promise((r) => (child!.exitCode !== null ? r(null) : child!.once('exit', r)));
  }
  return run;
}

export async function measureSearchStartup(
  say: (line: string) => void,
  form: ServiceForm = 'compiled',
): Promise<SearchStartupResult> {
  const weaviateBin =
    existsSync(path.join(cacheDir(), 'bin', 'weaviate-server')) && process.env.BENCH_SEARCH_WEAVIATE !== '0';
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-bench-startup-'));
  const need = {
    mongo: !process.env.MONGODB_URI,
    redis: !process.env.REDIS_URL,
    temporal: !process.env.TEMPORAL_ADDRESS,
    weaviate: weaviateBin,
  };
  const services: EmbeddedServices = await startEmbedded({
    dataDir,
    need,
    temporalUi: false,
    log: (l) => say(`startup: ${l}`),
  });
  const saved = { ...process.env };
  Object.assign(process.env, {
    ...(services.mongoUri ? { MONGODB_URI: services.mongoUri } : {}),
    ...(services.redisUrl ? { REDIS_URL: services.redisUrl } : {}),
    ...(services.temporalAddress ? { TEMPORAL_ADDRESS: services.temporalAddress } : {}),
  });
  const result: SearchStartupResult = { form, fills: [], runs: [] };
  const app = await startTestApp({ LOG_LEVEL: 'warn' });
  try {
    const ws = await buildWorkspace(app);
    const wvEnv = weaviateBin
      ? {
          CORTEX_SEARCH: 'weaviate',
          WEAVIATE_URL: services.weaviateUrl!,
          WEAVIATE_GRPC_ADDRESS: services.weaviateGrpcAddress!,
        }
      : null;
    let have = 0;
    for (const chunks of SIZES) {
      say(`startup: writing ${chunks - have} more chunks into the store (${chunks} in all)`);
      const t0 = performance.now();
      await fill(app, ws, have / PER_MEMORY, chunks / PER_MEMORY);
      have = chunks;
      result.fills.push({ chunks, ms: performance.now() - t0 });
      say(`startup: embedded index, API start with ${chunks} chunks in the store`);
      result.runs.push(await startApi(app, ws, 'embedded', chunks, {}, form, null));
      if (wvEnv) {
        say(`startup: npm run search:sync into Weaviate (${chunks} chunks)`);
        let syncMs: number | null = null;
        try {
          syncMs = await runSync(app, wvEnv);
        } catch (err) {
          result.runs.push({
            home: 'weaviate',
            chunks,
            entries: chunks + chunks / PER_MEMORY,
            syncMs: null,
            healthMs: null,
            searchMs: null,
            rssMb: null,
            peakRssMb: null,
            didNotFit: `search:sync did not finish in ${BUDGET_MS / 1000} s: ${(err as Error).message.slice(0, 160)}`,
          });
          continue;
        }
        say(`startup: Weaviate, API start with ${chunks} chunks indexed`);
        result.runs.push(await startApi(app, ws, 'weaviate', chunks, wvEnv, form, syncMs));
      }
      for (const r of result.runs.filter((x) => x.chunks === chunks)) say(`startup: ${JSON.stringify(r)}`);
    }
  } finally {
    await app.deps.db.dropDatabase().catch(() => {});
    await app.close();
    process.env = saved;
    await services.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  return result;
}

const s1 = (ms: number | null) => (ms === null ? '–' : `${(ms / 1000).toFixed(1)} s`);
export function startupSummary(s: SearchStartupResult): string[] {
  const lines = [
    `      API start-up with the chunks in the store (${s.form} API process; a memory per 10 chunks; budget ${BUDGET_MS / 1000} s per step):`,
  ];
  for (const f of s.fills) lines.push(`        store filled with ${f.chunks} chunks in ${s1(f.ms)}`);
  for (const r of s.runs)
    lines.push(
      `        ${r.home.padEnd(8)} ${String(r.chunks).padStart(8)} chunks (${r.entries} entries): ` +
        (r.didNotFit
          ? `did not fit: ${r.didNotFit}`
          : `${r.syncMs !== null ? `search:sync ${s1(r.syncMs)} (${Math.round(r.entries / (r.syncMs / 1000))} entries/s) | ` : ''}first /health 200 ${s1(r.healthMs)} | first search 200 ${s1(r.searchMs)} | API RSS ${r.rssMb} MB (peak ${r.peakRssMb} MB)`),
    );
  return lines;
}
