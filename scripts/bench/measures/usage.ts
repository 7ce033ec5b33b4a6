import { randomUUID } from 'node:crypto';
import type { CommandStartedEvent } from 'mongodb';
import type { UsageRowDoc } from '../../../src/usage/index.js';
import type { BilledCall } from '../../../src/usage/index.js';
import { systemScope } from '../../../src/kernel/scope.js';
import { buildWorkspace, type TestApp } from '../../../test/support/app.js';

/**
 * (o) Usage at scale (docs/usage.md, "Counters and rollups"): `GET /v1/usage/:workspace_id` and the
 * budget check before a model turn, timed in a workspace whose ledger holds USAGE_SMALL rows and in
 * one whose ledger holds USAGE_LARGE rows (aim: large ÷ small ≤ 1.5).
 *
 * The rows are the platform's own (`usage.rowOf`, the builder `usage.record` writes): chat calls of
 * jobs of three turns, by four users, for two neurons, on three models, spread over the last
 * USAGE_DAYS days, each job's first row marked as its neuron's invocation. They are inserted in
 * batches straight into the ledger (recording 100,000 calls one by one would take the bench many
 * minutes), then the reconciler rebuilds the counters and rollups from the ledger (`since` the
 * first row): the same counters and rollups `record` and the scheduled reconciler keep.
 */
const USAGE_SMALL = Number(process.env.BENCH_USAGE_SMALL ?? 1_000);
const USAGE_LARGE = Number(process.env.BENCH_USAGE_LARGE ?? 100_000);
const USAGE_DAYS = 14;
const REPS = 15;

interface Spread {
  median: number;
  p90: number;
}
const spreadOf = (xs: number[]): Spread => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], p90: s[Math.min(s.length - 1, Math.floor(s.length * 0.9))] };
};

export interface UsageScaleSize {
  rows: number;
  insertMs: number;
  rebuildMs: number;
  route: Spread;
  check: Spread;
  /** Store reads (budgets, ledger, rollups) per budget check: 0 once the counters are built. */
  checkReads: number;
  ledgerRoute?: Spread;
}
export interface UsageScaleFigures {
  small: UsageScaleSize;
  large: UsageScaleSize;
  routeRatio: number;
  checkRatio: number;
}

/** A workspace with `n` ledger rows over USAGE_DAYS days and three budgets, its counters rebuilt from the ledger. */
async function fill(app: TestApp, n: number, say: (l: string) => void, withLedger: boolean) {
  const ws = await buildWorkspace(app);
  const neuron = await app.post('/v1/neurons', ws.key, {
    name: 'bench-usage',
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/gpt-4o-mini' },
  });
  const neuronId = String(neuron.body.id);
  for (const body of [
    { scope: 'workspace', measure: 'tokens', period: 'month', limit: 1e12 },
    { scope: 'workspace', measure: 'usd', period: 'day', limit: 1e6 },
    { scope: 'neuron', target_id: neuronId, measure: 'tokens', period: 'total', limit: 1e12, policy: 'fail' },
  ]) {
    const r = await app.post('/v1/budgets', ws.key, body);
    if (r.status !== 201) throw new Error(`POST /v1/budgets answered ${r.status}: ${r.text}`);
  }
  const now = Date.now();
  const span = USAGE_DAYS * 86_400_000;
  const users = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const neurons = [neuronId, randomUUID()];
  const models = ['openai/gpt-4o-mini', 'openai/gpt-4.1', 'anthropic/claude-3-5-haiku'];
  const rows: UsageRowDoc[] = [];
  for (let i = 0; rows.length < n; i++) {
    const jobId = randomUUID();
    const at = now - 60_000 - Math.floor((((i * 7919) % 10_007) / 10_007) * span);
    for (let t = 0; t < 3 && rows.length < n; t++) {
      const call: BilledCall = {
        key: `${jobId}:chat:${t}:1`,
        workspaceId: ws.workspaceId,
        kind: 'chat',
        modelId: models[(i + t) % 3],
        placed: false,
        at: new Date(at + t * 1000),
        usage: {
          inputTokens: 200 + ((i * 13 + t) % 800),
          outputTokens: 20 + (i % 200),
          totalTokens: 0,
          cachedInputTokens: t ? 64 : 0,
        },
        attribution: {
          brainId: ws.brainId,
          userId: users[i % 4],
          apiKeyId: null,
          jobId,
          runId: jobId,
          traceId: null,
          receptorId: null,
          neuronId: neurons[i % 2],
          pathwayId: null,
        },
      };
      const row = app.services.usage.rowOf(call);
      if (t === 0) row.firstOf = ['neuron'];
      rows.push(row);
    }
  }
  const t0 = performance.now();
  for (let i = 0; i < rows.length; i += 2_000)
    await app.deps.db.collection<UsageRowDoc>('usage_ledger').insertMany(rows.slice(i, i + 2_000), { ordered: false });
  const insertMs = performance.now() - t0;
  say(
    `(o) ${n} rows inserted in ${(insertMs / 1000).toFixed(1)} s; rebuilding the counters and rollups from the ledger`,
  );
  const t1 = performance.now();
  const report = await app.services.usageReconciler.workspace(ws.workspaceId, new Date(), {
    since: new Date(now - span - 3_600_000),
  });
  const rebuildMs = performance.now() - t1;
  say(
    `(o) ${n} rows: counters and rollups rebuilt in ${(rebuildMs / 1000).toFixed(1)} s (${report.hoursStored} hours stored)`,
  );

  return { ws, neuronId, n, insertMs, rebuildMs, withLedger };
}

/** A workspace filled and rebuilt (`fill`), and its figures gathered so far. */
type Filled = Awaited<ReturnType<typeof fill>> & { route: number[]; check: number[]; reads: number; calls: number };

/**
 * One sample of a filled workspace: GET /v1/usage, then the run engine's check before a model turn
 * (the workspace's budgets, remembered; those covering the call; their counters). `timed` false:
 * a warm-up (the first check reads the budgets once, then remembers them).
 */
async function sample(app: TestApp, f: Filled, timed: boolean): Promise<void> {
  let reads = 0;
  // Store reads of budgets and the ledger made by the check (none once the counters are built).
  const countRead = (e: CommandStartedEvent) => {
    const target = e.command.find ?? e.command.aggregate;
    if (typeof target === 'string' && (target === 'budgets' || target.startsWith('usage_'))) reads++;
  };
  const a = performance.now();
  const res = await app.get<{ calls: number }>(`/v1/usage/${f.ws.workspaceId}`, f.ws.key);
  const b = performance.now();
  if (res.status !== 200) throw new Error(`GET /v1/usage answered ${res.status}: ${res.text}`);
  f.calls = res.body.calls;
  app.deps.mongo.on('commandStarted', countRead);
  try {
    const all = await app.services.budgets.ofWorkspace(f.ws.workspaceId);
    await app.services.budgets.evaluate(app.services.budgets.covering(all, { neuronId: f.neuronId }), {
      tokens: 500,
      costNanos: 100_000,
    });
  } finally {
    app.deps.mongo.off('commandStarted', countRead);
  }
  const c = performance.now();
  if (!timed) return;
  f.route.push(b - a);
  f.check.push(c - b);
  f.reads += reads;
}

async function figuresOf(app: TestApp, f: Filled): Promise<UsageScaleSize> {
  if (f.calls !== f.n) throw new Error(`GET /v1/usage counted ${f.calls} calls, the ledger holds ${f.n}`);
  let ledgerRoute: Spread | undefined;
  if (f.withLedger) {
    const xs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const a = performance.now();
      await app.services.usage.statsFromLedger(systemScope(f.ws.workspaceId), {}, false);
      xs.push(performance.now() - a);
    }
    ledgerRoute = spreadOf(xs);
  }
  return {
    rows: f.n,
    insertMs: f.insertMs,
    rebuildMs: f.rebuildMs,
    route: spreadOf(f.route),
    check: spreadOf(f.check),
    checkReads: f.reads / f.route.length,
    ledgerRoute,
  };
}

export async function measureUsageScale(app: TestApp, say: (l: string) => void): Promise<UsageScaleFigures> {
  say(
    `(o) usage at scale: GET /v1/usage and the budget check with ${USAGE_SMALL} and ${USAGE_LARGE} ledger rows over ${USAGE_DAYS} days`,
  );
  const filled = [await fill(app, USAGE_SMALL, say, true), await fill(app, USAGE_LARGE, say, false)].map(
    (f): Filled => ({ ...f, route: [], check: [], reads: 0, calls: -1 }),
  );
  // Alternating samples, so that both sizes meet the same background (the machine, this process's loops).
  for (let i = 0; i < REPS + 2; i++) for (const f of filled) await sample(app, f, i >= 2);
  const [small, large] = [await figuresOf(app, filled[0]), await figuresOf(app, filled[1])];
  return {
    small,
    large,
    routeRatio: large.route.median / small.route.median,
    checkRatio: large.check.median / small.check.median,
  };
}

export function formatUsageScale(m: UsageScaleFigures): string[] {
  const f = (x: number) => x.toFixed(1);
  const line = (s: UsageScaleSize) =>
    `      ${String(s.rows).padStart(7)} rows: GET /v1/usage median ${f(s.route.median).padStart(7)} ms  p90 ${f(s.route.p90).padStart(7)} ms;  budget check median ${f(s.check.median).padStart(6)} ms  p90 ${f(s.check.p90).padStart(6)} ms, ${f(s.checkReads)} store reads`;
  return [
    `  (o) Usage at scale (counters and hour rollups, ${USAGE_DAYS} days of rows, three budgets)`,
    line(m.small),
    line(m.large),
    `      ratio large ÷ small: GET /v1/usage ${m.routeRatio.toFixed(2)}, budget check ${m.checkRatio.toFixed(2)} (aim ≤ 1.5)`,
    ...(m.small.ledgerRoute
      ? [
          `      the same figures summed over the ledger rows (the old path) at ${m.small.rows} rows: median ${f(m.small.ledgerRoute.median)} ms`,
        ]
      : []),
  ];
}

/**
 * Run alone (`npx tsx scripts/bench/measures/usage.ts`): section (o) without the rest of the bench (no build,
 * no worker): embedded FerretDB, Redis and Temporal on free ports, the app in this process.
 */
async function main(): Promise<void> {
  const [{ mkdtemp, rm }, os, path, { startEmbedded }, { startTestApp }] = await Promise.all([
    import('node:fs/promises'),
    import('node:os'),
    import('node:path'),
    import('../../embedded.js'),
    import('../../../test/support/app.js'),
  ]);
  const say = (l: string) => console.log(`[bench-usage] ${l}`);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cortex-bench-usage-'));
  const services = await startEmbedded({
    dataDir,
    need: { mongo: true, redis: true, temporal: true },
    temporalUi: false,
    log: say,
  });
  try {
    process.env.MONGODB_URI = services.mongoUri;
    process.env.REDIS_URL = services.redisUrl;
    process.env.TEMPORAL_ADDRESS = services.temporalAddress;
    const app = await startTestApp({ RATE_LIMIT_POINTS: 1_000_000 });
    try {
      console.log(formatUsageScale(await measureUsageScale(app, say)).join('\n'));
    } finally {
      await app.close();
    }
  } finally {
    await services.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === (await import('node:url')).pathToFileURL(process.argv[1]).href) {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
