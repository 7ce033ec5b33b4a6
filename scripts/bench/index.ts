/**
 * `npm run bench` (scripts/bench.ts runs this file): what the platform adds on top of the model provider and of Temporal itself.
 *
 * One run, one set of services, one scripted OpenAI-compatible provider (test/support/scripted-openai.ts),
 * the real Koa app on port 0 (startTestApp) and a real worker process (spawnWorkerProcess):
 *
 * (a) Time to first token: a neuron invoke through the API (invoke + job stream), and the same neuron
 *     through the OpenAI-compatible endpoint (`POST /v1/openai/chat/completions`, `stream: true`),
 *     versus the same scripted reply streamed straight from the provider by the real openai adapter.
 *     Shows the latency the platform adds on each route.
 * (b) Throughput: trivial neuron runs completed per second versus a bare one-activity workflow on the
 *     same Temporal server (scripts/bench/bare-workflows.ts, its own worker and task queue).
 * (c) Pathway per-node overhead: a 20-node linear pathway's median run time divided by 20, versus
 *     one bare one-activity workflow run.
 * (r) Console (scripts/bench/measures/console.ts): bytes transferred (gzip) on the first load of /console and for
 *     a run page's graph; the time from a stream entry written to its node's colour changing in the page
 *     (Chromium; median over 50 entries).
 * (q) Pathway parallelism (scripts/bench/measures/pathways.ts): a 20-way fan-out of 1 s delays into a join ÷ one
 *     1 s delay (aim ≤ 1.3); a map of 100 items at concurrency 10 over a 200 ms provider ÷ (10 × one item) (aim ≤ 1.5).
 * (d) A realistic provider (the simulator: slow, different on every call, failing mid-stream).
 * (e) Search (scripts/bench/measures/search.ts): the embedded index and Weaviate at 100k chunks, recall, BM25 agreement,
 *     build time and memory, nDCG@10 on the labelled set over the spec documents, browse, tree and grep on
 *     Weaviate at 2,000 and 20,000 memories (scripts/bench/measures/search-browse.ts), and API start-up
 *     (health, first search, RSS) with 100k and 1M chunks in the store on both homes.
 * (f) Stakeholder maps (scripts/bench/measures/stakeholder-maps.ts): patch, live read, diff and briefing.
 * (g) Budget check: time to first token of runs covered by three budgets (docs/usage.md) versus
 *     runs covered by none, interleaved run by run so both see the same machine.
 * (h) Streaming at scale: STREAM_RUNS concurrent streaming neuron runs, each read by its own SSE reader
 *     on GET /v1/jobs/:id/stream, against the scripted provider streaming STREAM_TOKENS tokens, one every
 *     STREAM_TOKEN_MS ms. Tokens per second delivered to the readers ÷ tokens per second emitted by the
 *     provider, and the delay of each token from the provider's socket write to the reader's parse.
 * (i) Memory: resident memory (RSS) of the API and of the worker process, in the first second after a run,
 *     idle (IDLE_SETTLE_MS after the last run, once V8 has shrunk the heap) and at peak during (h).
 *     Both run compiled, as in production (`npm run build`: `node dist/api/server.js`, and
 *     `node dist/worker/index.js` with the prebuilt workflow bundle), each in a process of its own,
 *     so the figures are theirs alone (VmRSS); the provider and the readers live in the bench process.
 *
 * (j) Round trips per run: MongoDB commands the API and the worker send for one trivial run on a fresh
 *     trace (cortex_mongo_commands_total, read from both processes' metrics), split into reads and
 *     writes, and the Redis commands served meanwhile (INFO commandstats, every client).
 * (k) Soak: BENCH_SOAK_MINUTES (10) of streaming runs at a fixed rate (BENCH_SOAK_RATE per second, 1), readers dropping and resuming, against
 *     a compiled API and worker started for it; their RSS over time and the slope fitted after SOAK_WARMUP_MS (MB/min).
 * (o) Usage at scale (scripts/bench/measures/usage.ts): GET /v1/usage and the budget check with 1,000 and with
 *     100,000 ledger rows (BENCH_USAGE_SMALL, BENCH_USAGE_LARGE); the ratio says whether they grow with the ledger (aim ≤ 1.5).
 * (l) Stored history: a continuing conversation (RUNS_L runs on one trace, each run reading its history
 *     and appending its reply) and GET /v1/traces/:id/messages, timed before and after BENCH_HISTORY
 *     (20,000) engrams of other traces are written into the store; the ratio after ÷ before says
 *     whether a run slows down as the platform's data grows (aim ≤ 1.2).
 * (s) Stream writer (scripts/bench/measures/streams.ts): entries per second appended through src/kernel/streams.ts by 50
 *     concurrent writers (job streams' fenced script, and the resource feed's append), on one Redis and on
 *     a local 3-master Redis Cluster (REDIS_CLUSTER_NODES, or started for it), side by side.
 * (t) Noisy neighbour (scripts/bench/measures/noisy.ts): workspace B starts BENCH_NOISY_RUNS (500) streaming runs at once
 *     against the provider simulator, retrying starts refused past its share of runs after Retry-After;
 *     meanwhile workspace A's invoke time to first token, a pathway run's time to completion and a search
 *     answer, idle vs under the flood (median and max), each with whether it stays within 2× of idle.
 *     Against a compiled API with the default per-workspace shares (BENCH_NOISY_SHARE sets the runs share).
 * (p) Lists (scripts/bench/measures/lists.ts, alone: `npm run bench:lists`): pages of jobs, traces and
 *     interventions, the summary and a public token at 1,000 and at 100,000 rows (aim: ratio ≤ 1.5).
 * (m) History (scripts/bench/measures/history.ts): a workspace filled with a realistic history (100,000 ledger
 *     rows, 100,000 jobs, 100,000 engrams over 10,000 traces, 20,000 interventions, 50,000 chunks;
 *     BENCH_HISTORY_SCALE scales it, e.g. 0.1) in one store and one with 1,000 of each in another,
 *     each beside two small tenants, each served by its own in-process API; every list, aggregate,
 *     search and the per-turn budget check timed on both over HTTP: p50 small, p50 big and the
 *     ratio (aim ≤ 1.5). Its timing phase is bounded by BENCH_HISTORY_MINUTES (30), each request by 30 s;
 *     BENCH_HISTORY_ROUTES=usage,jobs times only the routes whose label contains one of those words.
 *
 * Sections (a)–(g) and (j) use an API inside the bench process (startTestApp: its registry, store
 * clients and Temporal client are read directly); (h), (i) and (k) use the compiled API process.
 * Every section's worker is the compiled one. The bench builds dist/ first (about a minute).
 *
 * BENCH_ONLY=h,i (comma-separated letters) runs only those sections; (i) is measured during (h), so
 * selecting either runs both. Unset: every section. `BENCH_ONLY=h,i npm run bench` takes about two
 * minutes with the build; the full bench takes the soak's ten minutes more than its other sections.
 * The summary states the machine the bench ran on (CPUs, model, memory, Node version).
 *
 * Services: a service whose URL variable (MONGODB_URI, REDIS_URL, TEMPORAL_ADDRESS) is set is used as
 * is; missing ones are started by scripts/embedded.ts on free loopback ports with data in a temp folder
 * that is removed at the end. The bench writes into its own database (`cortex_bench_<tag>`, dropped at
 * the end) and Redis prefix (its keys deleted at the end), so it can run against the dev services.
 *
 * Exit code: 0 when every measure ran (whether or not the aims are met), 1 on a real error.
 *
 * Layout: this file sets up what every section stands on and prints the summary; registry.ts lists
 * the sections in their run order and their summary order; sections/<letter>-<name>.ts is one section
 * (section.ts: what a section is and the context it gets); support.ts, stats.ts, probes.ts, bare.ts,
 * services.ts and summary.ts are what they share. `npm run bench` runs scripts/bench.ts, which imports this.
 */
import { fileURLToPath } from 'node:url';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { buildWorkspace } from '../../test/support/app.js';
import { startScriptedOpenAI } from '../../test/support/scripted-openai.js';
import { build } from '../build.js';
import { freePorts } from '../embedded.js';
import { bundleAndStartBare } from './bare.js';
import { probeServices } from './probes.js';
import { SECTIONS, SUMMARY_ORDER } from './registry.js';
import type { BenchContext, BenchSection } from './section.js';
import { processStarters, startBenchApp, useOrStartServices } from './services.js';
import { summary } from './summary.js';
import { fmt, say } from './support.js';

// The registry's own check: one section per letter, and each in the summary's order.
for (const [i, s] of SECTIONS.entries()) {
  if (SECTIONS.findIndex((x) => x.letter === s.letter) !== i) throw new Error(`two bench sections are (${s.letter})`);
  if (!SUMMARY_ORDER.includes(s.letter)) throw new Error(`bench section (${s.letter}) is missing from SUMMARY_ORDER`);
}

/** BENCH_ONLY=h,i: the sections to run (all when unset). */
const ONLY = new Set(
  (process.env.BENCH_ONLY ?? '')
    .split(',')
    .map((x) => x.trim().toLowerCase())
    .filter(Boolean),
);
const runs = (letter: string): boolean => ONLY.size === 0 || ONLY.has(letter);
const lettersOf = (s: BenchSection): string[] => [s.letter, ...(s.alsoBy ?? [])];
const selected = (s: BenchSection): boolean => lettersOf(s).some(runs);

async function main(): Promise<void> {
  // Before any worker exists: keep the Temporal core's INFO lines out of the bench output.
  Runtime.install({ logger: new DefaultLogger('WARN') });

  const cleanups: (() => Promise<unknown>)[] = [];
  const onCleanup = (fn: () => Promise<unknown>): void => void cleanups.push(fn);
  const cleanup = async (): Promise<void> => {
    for (const fn of cleanups.reverse())
      await fn().catch((err: unknown) => say(`cleanup: ${err instanceof Error ? err.message : String(err)}`));
  };
  try {
    await useOrStartServices(onCleanup);

    // The worker (every section) and the API of (h), (i) and (k) run compiled, as in production.
    // (m) alone needs neither: its APIs run in the bench process and no run goes past its first token;
    // (s) needs Redis alone. A letter no section answers to counts as needing the worker.
    const needWorker =
      ONLY.size === 0 || [...ONLY].some((x) => !SECTIONS.some((s) => s.noWorker && lettersOf(s).includes(x)));
    if (needWorker) {
      say('building dist/ (npm run build) for the compiled worker and API');
      await build((l) => say(`build: ${l}`));
    }
    const bundlePath = fileURLToPath(new URL('../../dist/workflow-bundle.js', import.meta.url));

    const llm = await startScriptedOpenAI({ models: ['gpt-4o-mini'] });
    onCleanup(() => llm.close());
    say(`scripted OpenAI-compatible provider at ${llm.baseURL}`);
    const app = await startBenchApp(llm, onCleanup);

    // The bare worker serves (b) and (c) only.
    const needBare = SECTIONS.some((s) => s.needsBare && selected(s));
    say(`starting the platform worker${needBare ? ' and bundling workflows for the bare worker' : ''}`);
    const bundleStarted = performance.now();
    const [workerMetricsPort] = await freePorts(1);
    const { startWorker, startApi } = processStarters(app, llm, bundlePath, workerMetricsPort, onCleanup);
    const [firstWorker, bare] = await Promise.all([
      needWorker ? startWorker() : { pid: undefined, stop: async () => undefined },
      needBare ? bundleAndStartBare(app) : undefined,
    ]);
    let worker = firstWorker;
    onCleanup(() => worker.stop());
    if (bare) onCleanup(() => bare.stop());
    say(`workers running (${fmt(performance.now() - bundleStarted)} ms)`);

    const ws = await buildWorkspace(app);
    const probes = await probeServices(app);
    const ctx: BenchContext = {
      app,
      ws,
      llm,
      bare,
      get worker() {
        return worker;
      },
      workerMetricsUrl: `http://127.0.0.1:${workerMetricsPort}/metrics`,
      restartWorker: async () => {
        await worker.stop();
        worker = await startWorker();
      },
      startApi,
      onCleanup,
      runs,
    };
    const blocks = new Map<string, string[]>();
    for (const section of SECTIONS) if (selected(section)) blocks.set(section.letter, await section.run(ctx));
    console.log(summary(probes, blocks));
  } finally {
    say('stopping');
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
