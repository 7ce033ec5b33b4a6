/**
 * (g) Budget check: time to first token of runs covered by three budgets (docs/usage.md) versus
 * runs covered by none, interleaved run by run so both see the same machine.
 */
import { buildWorkspace, type TestApp } from '../../../test/support/app.js';
import type { ScriptedOpenAI } from '../../../test/support/scripted-openai.js';
import type { BenchSection } from '../section.js';
import { median, spread, type Spread } from '../stats.js';
import { createNeuron, fmt, runThroughApi, say, TTFT_REPLY, TTFT_RUNS, WARMUP, type Workspace } from '../support.js';

interface BudgetResult {
  without: Spread;
  with: Spread;
  addedAtMedian: number;
}

/**
 * Budgets are checked before every model turn (sums over the usage ledger). Two workspaces, one
 * with a workspace token budget, a workspace USD budget and a neuron budget (limits far above what
 * the bench spends), one with none; invokes alternate between them, so load and caches are shared.
 */
async function measureBudgets(app: TestApp, llm: ScriptedOpenAI): Promise<BudgetResult> {
  llm.setDefault(() => TTFT_REPLY);
  const plain = await buildWorkspace(app);
  const capped = await buildWorkspace(app);
  const plainNeuron = await createNeuron(app, plain, 'bench-budget');
  const cappedNeuron = await createNeuron(app, capped, 'bench-budget');
  for (const body of [
    { scope: 'workspace', measure: 'tokens', period: 'day', limit: 1e9 },
    { scope: 'workspace', measure: 'usd', period: 'month', limit: 1e6 },
    { scope: 'neuron', target_id: cappedNeuron, measure: 'tokens', period: 'month', limit: 1e9, policy: 'fail' },
  ]) {
    const r = await app.post('/v1/budgets', capped.key, body);
    if (r.status !== 201) throw new Error(`POST /v1/budgets answered ${r.status}: ${r.text}`);
  }
  const once = async (ws: Workspace, neuronId: string, i: number): Promise<number> => {
    const run = await runThroughApi(app, ws, `/v1/neurons/${neuronId}/invoke`, {
      message: `budget ${i}`,
      stream: true,
    });
    if (run.firstToken === undefined) throw new Error(`job ${run.jobId} completed without a token event`);
    return run.firstToken - run.t0;
  };
  say(
    `(g) budgets: warm-up ${WARMUP} + ${TTFT_RUNS} invokes each, alternating a workspace with three budgets and one without`,
  );
  for (let i = 0; i < WARMUP; i++) {
    await once(plain, plainNeuron, i);
    await once(capped, cappedNeuron, i);
  }
  const without: number[] = [];
  const withBudgets: number[] = [];
  for (let i = 0; i < TTFT_RUNS; i++) {
    without.push(await once(plain, plainNeuron, i));
    withBudgets.push(await once(capped, cappedNeuron, i));
  }
  const result = {
    without: spread(without),
    with: spread(withBudgets),
    addedAtMedian: median(withBudgets) - median(without),
  };
  say(
    `(g) without budgets median ${fmt(result.without.median)} ms; with three budgets median ${fmt(result.with.median)} ms (added ${fmt(result.addedAtMedian)} ms)`,
  );
  return result;
}

function summary(g: BudgetResult): string[] {
  return [
    `  (g) Budget check before each model turn, ${TTFT_RUNS} runs each, interleaved`,
    `      no budget                             median ${fmt(g.without.median).padStart(7)} ms   p90 ${fmt(g.without.p90).padStart(7)} ms`,
    `      three budgets covering the run        median ${fmt(g.with.median).padStart(7)} ms   p90 ${fmt(g.with.p90).padStart(7)} ms`,
    `      added by the check at the median      ${fmt(g.addedAtMedian)} ms`,
  ];
}

export const budgets: BenchSection = {
  letter: 'g',
  title: 'Budget check: time to first token with three budgets versus none',
  run: async ({ app, llm }) => summary(await measureBudgets(app, llm)),
};
