/**
 * (m) History (scripts/bench/measures/history.ts): a workspace filled with a realistic history (100,000 ledger
 *     rows, 100,000 jobs, 100,000 engrams over 10,000 traces, 20,000 interventions, 50,000 chunks;
 *     BENCH_HISTORY_SCALE scales it, e.g. 0.1) in one store and one with 1,000 of each in another,
 *     each beside two small tenants, each served by its own in-process API; every list, aggregate,
 *     search and the per-turn budget check timed on both over HTTP: p50 small, p50 big and the
 *     ratio (aim ≤ 1.5). Its timing phase is bounded by BENCH_HISTORY_MINUTES (30), each request by 30 s;
 *     BENCH_HISTORY_ROUTES=usage,jobs times only the routes whose label contains one of those words.
 * Runs last: it fills the store with months of history.
 */
import { randomUUID } from 'node:crypto';
import { metrics } from '../../../src/kernel/metrics.js';
import { buildWorkspace, startTestApp, type TestApp } from '../../../test/support/app.js';
import type { ScriptedOpenAI } from '../../../test/support/scripted-openai.js';
import { dataOf, readSse } from '../../../test/support/sse.js';
import {
  fillHistory,
  historySummary,
  measureHistory,
  REQUEST_TIMEOUT_MS,
  scaledHistory,
  SMALL_HISTORY,
  type HistoryMeasure,
} from '../measures/history.js';
import type { BenchSection } from '../section.js';
import { createNeuron, dropRedisKeys, fmt, say, TTFT_REPLY } from '../support.js';

/** (m) Size of the big workspace's history (1: the figures) and the bound on its timing phase. */
const HISTORY_SCALE = Number(process.env.BENCH_HISTORY_SCALE ?? 1);
const HISTORY_BOUND_MIN = Number(process.env.BENCH_HISTORY_MINUTES ?? 30);

/**
 * Two APIs in the bench process, each over a database of its own on the same FerretDB: the
 * small store holds a workspace with 1,000 of each kind of row and two other tenants like it;
 * the big store a workspace with the realistic history (scaled by BENCH_HISTORY_SCALE) and two
 * small tenants. Each timed workspace gets a neuron on the scripted provider covered by three
 * monthly budgets (POST /v1/budgets); then scripts/bench/measures/history.ts times the routes on both.
 * No worker serves these APIs: the per-turn check is timed to the first token, which the API's
 * first turn streams (FIRST_TURN_IN_API) after the run's budget check.
 */
async function measureHistorySection(
  llm: ScriptedOpenAI,
  onCleanup: (fn: () => Promise<unknown>) => void,
): Promise<HistoryMeasure> {
  const tag = randomUUID().slice(0, 8);
  const start = async (name: string) => {
    const a = await startTestApp({
      OPENAI_BASE_URL: llm.baseURL,
      OPENAI_API_KEY: 'bench',
      MONGODB_DB: `cortex_bench_${tag}_${name}`,
      RATE_LIMIT_POINTS: 1_000_000,
    });
    onCleanup(() => a.close());
    onCleanup(() => dropRedisKeys(a));
    onCleanup(() => a.deps.db.dropDatabase());
    return a;
  };
  const [smallApp, bigApp] = [await start('small'), await start('big')];
  const size = scaledHistory(HISTORY_SCALE);
  say(
    `(m) history: the big store gets a workspace with ${size.jobs} jobs, ${size.ledger} ledger rows, ${size.engrams} engrams over ${size.traces} traces, ${size.interventions} interventions, ${size.chunks} chunks (scale ${HISTORY_SCALE}); every other workspace ${SMALL_HISTORY.jobs} of each`,
  );
  const fillStore = async (app: TestApp, first: typeof SMALL_HISTORY) => {
    const wss = await Promise.all(Array.from({ length: 3 }, () => buildWorkspace(app)));
    const fill = await fillHistory(
      app.deps.db,
      app.services,
      wss.map((ws, k) => ({ ws, size: k === 0 ? first : SMALL_HISTORY })),
      (l) => say(`(m) ${l}`),
    );
    say(`(m) ${first === SMALL_HISTORY ? 'small' : 'big'} store filled in ${fmt(fill.totalMs / 1000)} s`);
    return { ws: wss[0], fill };
  };
  const small = await fillStore(smallApp, SMALL_HISTORY);
  const big = await fillStore(bigApp, size);
  llm.setDefault(() => TTFT_REPLY);
  const sides = [
    { app: smallApp, ws: small.ws },
    { app: bigApp, ws: big.ws },
  ];
  const neurons = (await Promise.all(sides.map(({ app, ws }) => createNeuron(app, ws, 'bench-history-m')))) as [
    string,
    string,
  ];
  for (const [k, { app, ws }] of sides.entries()) {
    for (const body of [
      { scope: 'workspace', measure: 'tokens', period: 'month', limit: 1e12 },
      { scope: 'workspace', measure: 'usd', period: 'month', limit: 1e9 },
      { scope: 'neuron', target_id: neurons[k], measure: 'tokens', period: 'month', limit: 1e12 },
    ]) {
      const r = await app.post('/v1/budgets', ws.key, body);
      if (r.status !== 201) throw new Error(`POST /v1/budgets answered ${r.status}: ${r.text}`);
    }
  }
  const appOf = new Map<string, TestApp>(sides.map((s) => [s.ws.workspaceId, s.app]));
  return measureHistory(
    { client: smallApp, fill: small.fill, filled: small.fill.filled[0] },
    { client: bigApp, fill: big.fill, filled: big.fill.filled[0] },
    {
      neurons,
      boundMs: HISTORY_BOUND_MIN * 60_000,
      log: say,
      only: (process.env.BENCH_HISTORY_ROUTES ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
      // Requests both in-process APIs have finished (their request metric), to wait for ones the bench gave up on.
      completedRequests: async () =>
        (await metrics.httpRequests.get()).values
          .filter((v) => v.metricName?.endsWith('_count'))
          .reduce((n, v) => n + v.value, 0),
      firstToken: async (w, neuronId) => {
        const app = appOf.get(w.workspaceId)!;
        const t0 = performance.now();
        const res = await app.post(`/v1/neurons/${neuronId}/invoke`, w.key, { message: 'history', stream: true });
        if (res.status !== 202) throw new Error(`invoke answered ${res.status}: ${res.text}`);
        let first: number | undefined;
        const sse = await readSse(`${app.url}/v1/jobs/${String(res.body.job_id)}/stream`, {
          headers: { authorization: `Bearer ${w.key}` },
          timeoutMs: REQUEST_TIMEOUT_MS,
          until: (events) => {
            if (first === undefined && events.some((e) => dataOf(e).type === 'token')) first = performance.now();
            return first !== undefined || events.some((e) => ['complete', 'error'].includes(String(dataOf(e).type)));
          },
        });
        if (first === undefined)
          throw new Error(
            performance.now() - t0 >= REQUEST_TIMEOUT_MS
              ? `> ${REQUEST_TIMEOUT_MS / 1000} s`
              : `job ${String(res.body.job_id)} streamed no token (status ${sse.status})`,
          );
        return first - t0;
      },
    },
  );
}

export const history: BenchSection = {
  letter: 'm',
  title: 'History: every list, aggregate and per-turn check on a realistic history versus a small one',
  // Its APIs run in the bench process and no run goes past its first token: no build, no platform worker.
  noWorker: true,
  run: async ({ llm, onCleanup }) => historySummary(await measureHistorySection(llm, onCleanup)),
};
