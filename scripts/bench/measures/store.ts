/**
 * Store benchmark: how FerretDB answers the platform's query shapes as one workspace grows.
 *
 *   npx tsx scripts/bench/measures/store.ts
 *
 * For each backend (SQLite in a temporary folder; PostgreSQL in a throwaway database of the local
 * server at 127.0.0.1:5432 when one answers) it starts the FerretDB binary, fills a `jobs`-like
 * collection (the platform's indexes) with SIZES documents in one workspace plus a quarter as many
 * in three other workspaces, and times, median of up to REPS runs (each shape stops after 4 s):
 *
 *   id      findOne({ _id })
 *   eq      findOne({ workspaceId, token })                       index { workspaceId, token }
 *   page1   find({ workspaceId }).sort({ createdAt: -1, _id: -1 }).limit(20)   { workspaceId, createdAt: -1 }
 *   status  find({ workspaceId, status }).sort(same).limit(20)   { workspaceId, status, createdAt: -1 }
 *   deep    keyset page in the middle: { workspaceId, $or: [{ createdAt: { $lt: t } }, { createdAt: t, _id: { $lt: id } }] }
 *   range   { workspaceId, createdAt: { $lt: t } } sorted, limit 20 (the same page without the tie-break)
 *   count   countDocuments({ workspaceId, status })
 *
 * Every answer is checked against the expected documents (computed from how the data was made),
 * so a wrong pushdown fails the bench. With BENCH_EXPLAIN=1 it prints FerretDB's `explain` of
 * page1, deep and eq at the largest size (the SQL plan: SEARCH … USING INDEX, or a SCAN).
 *
 * Environment: BENCH_FERRETDB_BIN (default: the provisioned binary in the cache folder),
 * BENCH_STORES (sqlite,postgresql), BENCH_SIZES (1000,100000), BENCH_REPS (30),
 * BENCH_PG_URL (postgres://postgres@127.0.0.1:5432).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MongoClient, type Db, type Document } from 'mongodb';
import { SQLITE_PRAGMAS, cacheDir, freePorts } from '../../embedded.js';

const BIN = process.env.BENCH_FERRETDB_BIN ?? path.join(cacheDir(), 'bin', 'ferretdb');
const SIZES = (process.env.BENCH_SIZES ?? '1000,100000').split(',').map(Number);
const REPS = Number(process.env.BENCH_REPS ?? 30);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgresql').split(',');
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
const SHAPE_BUDGET_MS = 4_000;
const WS = 'ws_main';
const OTHERS = ['ws_a', 'ws_b', 'ws_c'];
const STATUSES = ['pending', 'running', 'succeeded', 'failed'];
const T0 = Date.UTC(2026, 0, 1);

interface JobLike {
  _id: string;
  workspaceId: string;
  status: string;
  token: string;
  createdAt: Date;
  brainId: string;
  input: string;
}

/** The i-th document of a workspace: createdAt one second apart, two at a time (ties for the _id tie-break). */
function makeDoc(ws: string, i: number): JobLike {
  return {
    _id: `${ws}_${String(i).padStart(7, '0')}`,
    workspaceId: ws,
    status: STATUSES[i % STATUSES.length]!,
    token: `tok_${ws}_${i}`,
    createdAt: new Date(T0 + Math.floor(i / 2) * 1000),
    brainId: `brain_${i % 5}`,
    input: 'x'.repeat(200),
  };
}

function psql(sql: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('psql', [`${PG_URL}/postgres`, '-tAc', sql], { timeout: 10_000 }, (err, out) =>
      err ? reject(err) : resolve(out.trim()),
    );
  });
}

async function startFerret(store: string): Promise<{ uri: string; stop: () => Promise<void> }> {
  const [port] = await freePorts(1);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-store-'));
  const dbName = `cortex_bench_${process.pid}`;
  if (store === 'postgresql') await psql(`CREATE DATABASE ${dbName}`);
  const args = [
    ...(store === 'postgresql'
      ? ['--handler=postgresql', `--postgresql-url=${PG_URL}/${dbName}`]
      : ['--handler=sqlite', `--sqlite-url=file:${dir}/?${SQLITE_PRAGMAS}`]),
    `--listen-addr=127.0.0.1:${port}`,
    '--debug-addr=-',
    '--telemetry=disable',
    `--state-dir=${dir}`,
    '--log-level=warn',
  ];
  const child: ChildProcess = spawn(BIN, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  // Ctrl-C or a timeout: the server and its data go too.
  const onSignal = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    process.exit(130);
  };
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  const uri = `mongodb://127.0.0.1:${port}/`;
  for (let i = 0; ; i++) {
    const c = new MongoClient(uri, { serverSelectionTimeoutMS: 500 });
    try {
      await c.connect();
      await c.db('admin').command({ ping: 1 });
      await c.close();
      break;
    } catch {
      await c.close().catch(() => undefined);
      if (i > 100 || child.exitCode !== null) throw new Error(`ferretdb (${BIN}) did not start`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    uri,
    stop: async () => {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
      if (store === 'postgresql') await psql(`DROP DATABASE IF EXISTS ${dbName}`).catch(() => undefined);
    },
  };
}

/** Inserts documents from..to-1 of a workspace in batches of 1,000. */
async function fill(db: Db, ws: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += 1_000) {
    const batch: JobLike[] = [];
    for (let j = i; j < Math.min(to, i + 1_000); j++) batch.push(makeDoc(ws, j));
    await db.collection<JobLike>('jobs').insertMany(batch, { ordered: false });
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Runs `fn` up to REPS times within the shape budget; checks its answer every time. */
async function time(
  fn: () => Promise<unknown>,
  check: (r: unknown) => boolean,
  label: string,
): Promise<{ p50: number; n: number }> {
  const times: number[] = [];
  // One unmeasured run (the first touches cold pages); a shape slower than the budget is timed by it alone.
  const w = performance.now();
  const first = await fn();
  if (!check(first)) throw new Error(`${label}: wrong answer ${JSON.stringify(first).slice(0, 300)}`);
  if (performance.now() - w > SHAPE_BUDGET_MS) return { p50: performance.now() - w, n: 1 };
  const start = performance.now();
  for (let i = 0; i < REPS && (i < 3 || performance.now() - start < SHAPE_BUDGET_MS); i++) {
    const t = performance.now();
    const r = await fn();
    times.push(performance.now() - t);
    if (!check(r)) throw new Error(`${label}: wrong answer ${JSON.stringify(r).slice(0, 300)}`);
  }
  return { p50: median(times), n: times.length };
}

const ids = (docs: unknown): string => (docs as Document[]).map((d) => String(d._id)).join(',');

/** The expected first `limit` ids of the workspace's documents matching `pred`, newest first. */
function expected(n: number, pred: (d: JobLike) => boolean, limit = 20): string {
  const docs: JobLike[] = [];
  for (let i = n - 1; i >= 0 && docs.length < limit * 3; i--) {
    const d = makeDoc(WS, i);
    if (pred(d)) docs.push(d);
  }
  docs.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a._id < b._id ? 1 : -1));
  return docs
    .slice(0, limit)
    .map((d) => d._id)
    .join(',');
}

async function benchStore(store: string): Promise<Record<string, Record<number, { p50: number; n: number }>>> {
  const ferret = await startFerret(store);
  const client = new MongoClient(ferret.uri);
  await client.connect();
  const db = client.db('bench');
  const jobs = db.collection<JobLike>('jobs');
  const out: Record<string, Record<number, { p50: number; n: number }>> = {};
  try {
    await jobs.createIndex({ workspaceId: 1, createdAt: -1 }, { name: 'ws_created' });
    await jobs.createIndex({ workspaceId: 1, status: 1, createdAt: -1 }, { name: 'ws_status' });
    await jobs.createIndex({ workspaceId: 1, token: 1 }, { name: 'ws_token' });
    let have = 0;
    for (const n of SIZES) {
      const t = performance.now();
      await fill(db, WS, have, n);
      for (const o of OTHERS) await fill(db, o, Math.floor(have / 4), Math.floor(n / 4));
      have = n;
      console.log(
        `[bench-store] ${store}: ${n} documents in ${WS} (+ ${3 * Math.floor(n / 4)} in other workspaces) stored in ${((performance.now() - t) / 1000).toFixed(1)} s`,
      );

      const mid = Math.floor(n / 2);
      const midDoc = makeDoc(WS, mid);
      const sort = { createdAt: -1, _id: -1 } as const;
      const shapes: [string, () => Promise<unknown>, (r: unknown) => boolean][] = [
        ['id', () => jobs.findOne({ _id: makeDoc(WS, mid)._id }), (r) => (r as JobLike | null)?._id === midDoc._id],
        [
          'eq',
          () => jobs.findOne({ workspaceId: WS, token: midDoc.token }),
          (r) => (r as JobLike | null)?._id === midDoc._id,
        ],
        [
          'page1',
          () => jobs.find({ workspaceId: WS }).sort(sort).limit(20).toArray(),
          (r) => ids(r) === expected(n, () => true),
        ],
        [
          'status',
          () => jobs.find({ workspaceId: WS, status: 'running' }).sort(sort).limit(20).toArray(),
          (r) => ids(r) === expected(n, (d) => d.status === 'running'),
        ],
        [
          'deep',
          () =>
            jobs
              .find({
                workspaceId: WS,
                $or: [
                  { createdAt: { $lt: midDoc.createdAt } },
                  { createdAt: midDoc.createdAt, _id: { $lt: midDoc._id } },
                ],
              })
              .sort(sort)
              .limit(20)
              .toArray(),
          (r) => ids(r) === expected(mid + 1, (d) => d._id < midDoc._id || d.createdAt < midDoc.createdAt),
        ],
        [
          'range',
          () =>
            jobs
              .find({ workspaceId: WS, createdAt: { $lt: midDoc.createdAt } })
              .sort(sort)
              .limit(20)
              .toArray(),
          (r) => ids(r) === expected(mid, (d) => d.createdAt < midDoc.createdAt),
        ],
        [
          'count',
          () => jobs.countDocuments({ workspaceId: WS, status: 'running' }),
          (r) => r === Math.floor((n + 2) / 4),
        ],
      ];
      for (const [name, fn, check] of shapes) {
        const r = await time(fn, check, `${store} ${name} at ${n}`);
        (out[name] ??= {})[n] = r;
        console.log(`[bench-store] ${store} ${n} ${name}: p50 ${r.p50.toFixed(2)} ms (${r.n} runs)`);
      }
      if (process.env.BENCH_EXPLAIN === '1' && n === SIZES[SIZES.length - 1]) {
        const explain = async (label: string, find: Document) => {
          const e = await db.command({ explain: { find: 'jobs', ...find }, verbosity: 'queryPlanner' });
          console.log(
            `[bench-store] ${store} explain ${label}: filter/sort/limit pushdown ${e.filterPushdown}/${e.sortPushdown}/${e.limitPushdown}\n${JSON.stringify(e.queryPlanner, null, 1)}`,
          );
        };
        await explain('eq', { filter: { workspaceId: WS, token: midDoc.token }, limit: 1 });
        await explain('page1', { filter: { workspaceId: WS }, sort, limit: 20 });
        await explain('deep', {
          filter: {
            workspaceId: WS,
            $or: [{ createdAt: { $lt: midDoc.createdAt } }, { createdAt: midDoc.createdAt, _id: { $lt: midDoc._id } }],
          },
          sort,
          limit: 20,
        });
      }
    }
  } finally {
    await client.close();
    await ferret.stop();
  }
  return out;
}

async function pgAnswers(): Promise<boolean> {
  try {
    return (await psql('SELECT 1')) === '1';
  } catch {
    return false;
  }
}

const bin = await new Promise<string>((resolve) =>
  execFile(BIN, ['--version'], (_e, out) => resolve(String(out).split('\n')[0] ?? '?')),
);
console.log(`[bench-store] ${BIN} (${bin}), sizes ${SIZES.join(', ')}, up to ${REPS} runs per shape`);
const results: Record<string, Awaited<ReturnType<typeof benchStore>>> = {};
for (const store of STORES) {
  if (store === 'postgresql' && !(await pgAnswers())) {
    console.log('[bench-store] postgresql: no server answers at', PG_URL, '(skipped)');
    continue;
  }
  results[store] = await benchStore(store);
}
console.log(
  '\n| store | shape | ' + SIZES.map((n) => `p50 at ${n}`).join(' | ') + ` | ×${SIZES[SIZES.length - 1]}/${SIZES[0]} |`,
);
console.log('|---|---|' + SIZES.map(() => '---|').join('') + '---|');
for (const [store, shapes] of Object.entries(results)) {
  for (const [name, bySize] of Object.entries(shapes)) {
    const first = bySize[SIZES[0]!]!.p50;
    const last = bySize[SIZES[SIZES.length - 1]!]!.p50;
    console.log(
      `| ${store} | ${name} | ${SIZES.map((n) => `${bySize[n]!.p50.toFixed(2)} ms`).join(' | ')} | ${(last / first).toFixed(1)} |`,
    );
  }
}
