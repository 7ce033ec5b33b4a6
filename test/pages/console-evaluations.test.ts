import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { buildWorkspace } from '../support/app.js';
import { useConsoleBrowser } from '../support/console-page.js';
import { lastUserText, type ScriptedRequestBody } from '../support/scripted-openai.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The console's evaluation pages (docs/evaluations.md, "The console pages") in Debian's Chromium
 * against the real platform (API, worker, Temporal, FerretDB, Redis, the provider simulator): a
 * dataset created from its empty state, an item added by hand and two pasted as JSONL (one version
 * each), an experiment started from the dataset's page against a neuron and followed to completion
 * (its aggregates and item table equal to the API's), a second one on the neuron's next version,
 * the two compared item by item (what changed, the score deltas), a finished run added to the
 * dataset from its page; as a member's key (evaluations take no role, so a member has every
 * control): a bad JSONL line refused with its line named, a running experiment cancelled, an item
 * removed (older versions keep it), the dataset deleted. Every page:
 * no console error, no request to another origin; screenshots in test-output/console/.
 */

/** A neuron whose system prompt says MODE=right answers `echo: X` with X; MODE=wrong answers `nope`. */
function answer(body: ScriptedRequestBody): string | null {
  const user = lastUserText(body);
  const system = body.messages.find((m) => m.role === 'system')?.content;
  const sys = typeof system === 'string' ? system : '';
  const m = /^echo: (.*)$/s.exec(user);
  if (sys.includes('MODE=right') && m) return m[1];
  if (sys.includes('MODE=wrong')) return 'nope';
  return null;
}

const { app, sim } = useSimPlatform({ firstTokenMs: 20, interTokenMs: 2, tokens: [3, 6], text: answer });
const { tab, shots } = useConsoleBrowser('console-evaluations', () => app.url, { timezoneId: 'UTC' });
const MODEL = 'openai/gpt-4o-mini';

type Body = Record<string, unknown>;
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function signIn(page: Page, key: string, to: string) {
  await page.goto(`${app.url}/console${to}`);
  await page.getByLabel('API key or JWT').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

const poll = <T>(fn: () => Promise<T> | T, timeout = 30_000) => expect.poll(fn, { timeout });

async function neuron(ws: Ws, name: string, system: string): Promise<string> {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: MODEL, system_prompt: system },
  });
  expect(r.status, r.text).toBe(201);
  return String(r.body.id);
}

const experiment = async (ws: Ws, id: string) => (await app.get<Body>(`/v1/experiments/${id}`, ws.key)).body;

/** Starts an experiment from the dataset page's form: the neuron (by its slug) at a version, `exact` and `contains`. */
async function startFromForm(page: Page, neuronName: string, version: number, name: string): Promise<string> {
  await page.getByRole('button', { name: 'Run experiment' }).click();
  const form = page.getByRole('form', { name: 'New experiment' });
  await form.getByLabel('Experiment name').fill(name);
  await form.getByLabel('Target', { exact: true }).selectOption({ label: `neuron ${neuronName}` });
  await form.getByLabel('Target version').fill(String(version));
  await form.getByLabel('Concurrency').fill('2');
  // The first evaluator is `exact`; a second one, `contains` (the expected value), case-sensitive.
  await form.getByRole('button', { name: 'Add evaluator' }).click();
  const second = form.getByRole('group', { name: 'Evaluator 2' });
  await second.getByLabel('Type').selectOption('contains');
  await second.getByLabel('Case sensitive').check();
  await form.getByRole('button', { name: 'Start experiment' }).click();
  await page.waitForURL(/\/console\/experiments\/[0-9a-f-]{36}$/);
  return page.url().split('/').pop()!;
}

describe('the evaluation pages', () => {
  it('creates a dataset, adds and imports items, runs two experiments, compares them and adds a run', async () => {
    const ws = await buildWorkspace(app);
    const n = await neuron(ws, 'echo bot', 'MODE=right');
    const { page, clean } = await tab();
    await signIn(page, ws.key, '/datasets');

    // The empty state says what to do first.
    const empty = page.locator('[data-empty="datasets"]');
    await empty.waitFor();
    expect(await empty.textContent()).toMatch(/Create one, then add items/);
    await shots(page, 'datasets-empty');
    await page.getByRole('button', { name: 'Create the first dataset' }).click();
    await page.getByLabel('Dataset name').fill('capitals');
    await page.getByLabel('Description').fill('echo checks');
    await page.getByRole('button', { name: 'Create dataset' }).click();
    await page.waitForURL(/\/console\/datasets\/[0-9a-f-]{36}$/);
    const ds = page.url().split('/').pop()!;
    await poll(() => page.locator('[data-field="dataset-version"]').textContent()).toBe('v0');

    // One item by hand: the next version.
    await page.getByRole('button', { name: 'Add item' }).click();
    const add = page.getByRole('form', { name: 'Add item' });
    await add.getByLabel('Input').fill('echo: Paris');
    await add.getByLabel('Expected').fill('Paris');
    await add.getByLabel('Metadata').fill('{"continent": "europe"}');
    await add.getByRole('button', { name: 'Add', exact: true }).click();
    await poll(() => page.locator('[data-field="dataset-version"]').textContent()).toBe('v1');
    await add.getByRole('button', { name: 'Close' }).click();

    // Two more pasted as JSONL: one version for the import.
    await page.getByRole('button', { name: 'Import JSONL or CSV' }).click();
    const imp = page.getByRole('form', { name: 'Import items' });
    await imp.getByLabel('Format').selectOption('jsonl');
    await imp
      .getByLabel('Items')
      .fill('{"input":"echo: Rome","expected":"Rome"}\n{"input":"echo: Madrid","expected":"Madrid"}\n');
    await imp.getByRole('button', { name: 'Import' }).click();
    await imp.getByRole('status').waitFor();
    expect(await imp.getByRole('status').textContent()).toContain('Imported 2 items');
    await poll(() => page.locator('[data-field="dataset-version"]').textContent()).toBe('v2');
    await poll(() => page.locator('table.dataset-items tbody tr[data-item-id]').count()).toBe(3);
    const stored = await app.get<{ items: Body[]; version: number }>(`/v1/datasets/${ds}/items`, ws.key);
    expect(stored.body.version).toBe(2);
    expect(stored.body.items.map((i) => [i.input, i.expected])).toEqual([
      ['echo: Paris', 'Paris'],
      ['echo: Rome', 'Rome'],
      ['echo: Madrid', 'Madrid'],
    ]);
    expect(stored.body.items[0].metadata).toEqual({ continent: 'europe' });
    // Version 1 still has one item.
    await page.getByLabel('Dataset version').selectOption('1');
    await poll(() => page.locator('table.dataset-items tbody tr[data-item-id]').count()).toBe(1);
    expect(new URL(page.url()).searchParams.get('version')).toBe('1');
    await page.getByLabel('Dataset version').selectOption('2');
    await poll(() => page.locator('table.dataset-items tbody tr[data-item-id]').count()).toBe(3);
    await shots(page, 'dataset');

    // An experiment on version 1 of the neuron (right answers), followed live to completion.
    const e1 = await startFromForm(page, 'echo-bot', 1, 'right');
    await poll(() => page.locator('[data-field="experiment-status"]').textContent(), 90_000).toBe('completed');
    const done1 = await experiment(ws, e1);
    expect(done1).toMatchObject({ status: 'completed', items_done: 3, dataset_version: 2 });
    expect(done1.target).toMatchObject({ kind: 'neuron', id: n, version: 1 });
    const a1 = done1.aggregates as Body;
    expect(a1.mean_scores).toEqual({ exact: 1, contains: 1 });
    expect(a1.pass_rate).toBe(1);
    expect((done1.evaluators as Body[]).map((e) => [e.type, e.case_sensitive])).toEqual([
      ['exact', true],
      ['contains', true],
    ]);
    // The aggregates shown are the API's.
    const fig = (name: string) => page.locator(`[data-figure="${name}"] dd`).textContent();
    await poll(() => fig('mean:exact')).toBe('1.00');
    expect(await fig('mean:contains')).toBe('1.00');
    expect(await fig('pass-rate')).toBe('100%');
    expect(await fig('p50')).toMatch(/^\d+ ms$|^\d+\.\d\d s$/);
    expect(await fig('p95')).toMatch(/^\d+ ms$|^\d+\.\d\d s$/);
    expect(await fig('total-cost')).toBe(`$${Number(a1.total_cost_usd).toFixed(6)}`);
    expect(Number(a1.total_cost_usd)).toBeGreaterThan(0);
    expect(await page.locator('[data-field="items-done"]').textContent()).toBe('3 of 3');
    // The item table: each output and score with its reason, its latency, tokens and cost.
    const rows = page.locator('table.experiment-items tbody tr[data-item-id]');
    await poll(() => rows.count()).toBe(3);
    const apiItems = (await app.get<{ items: Body[] }>(`/v1/experiments/${e1}/items`, ws.key)).body.items;
    for (const it of apiItems) {
      const row = page.locator(`table.experiment-items tr[data-item-id="${String(it.item_id)}"]`);
      expect(await row.locator('[data-field="output"]').textContent()).toBe(String(it.output));
      expect(await row.getAttribute('data-status')).toBe('scored');
      for (const s of it.scores as Body[]) {
        const cell = row.locator(`[data-evaluator="${String(s.evaluator)}"]`);
        expect(await cell.textContent()).toContain(String(s.reason));
        expect(await cell.textContent()).toContain('1.00 ✓');
      }
      expect(await row.locator('td[data-label="Tokens"]').textContent()).toBe(String(it.total_tokens));
      expect(Number(it.total_tokens)).toBeGreaterThan(0);
    }
    expect(apiItems.map((i) => i.output)).toEqual(['Paris', 'Rome', 'Madrid']);
    // Ended: no cancel (the API answers 409).
    expect(await page.getByRole('button', { name: 'Cancel experiment' }).count()).toBe(0);
    expect((await app.post(`/v1/experiments/${e1}/cancel`, ws.key, {})).status).toBe(409);
    await shots(page, 'experiment');

    // Version 2 of the neuron answers wrong; the second experiment from the same form.
    const v2 = await app.put(`/v1/neurons/${n}`, ws.key, {
      neuron_config: { model: MODEL, system_prompt: 'MODE=wrong' },
    });
    expect(v2.status, v2.text).toBe(200);
    await page.getByRole('link', { name: 'capitals', exact: true }).click();
    await page.waitForURL(new RegExp(`/console/datasets/${ds}$`));
    const e2 = await startFromForm(page, 'echo-bot', 2, 'wrong');
    await poll(() => page.locator('[data-field="experiment-status"]').textContent(), 90_000).toBe('completed');
    await poll(() => fig('pass-rate')).toBe('0%');

    // Compare from the experiment page: the first experiment is the baseline.
    await page.goto(`${app.url}/console/datasets/${ds}`);
    await page.locator(`tr[data-experiment-id="${e2}"]`).waitFor();
    await page.getByLabel('Compare right').check();
    await page.getByLabel('Compare wrong').check();
    await page.getByRole('button', { name: /^Compare/ }).click();
    await page.waitForURL(/\/console\/experiments\/compare\?ids=/);
    expect(new URL(page.url()).searchParams.get('ids')).toBe(`${e1},${e2}`);
    const cmp = (await app.get<{ items: Body[] }>(`/v1/experiments/compare?ids=${e1},${e2}`, ws.key)).body;
    await poll(() => page.locator('[data-field="changed-count"]').textContent()).toBe('3 of 3 changed');
    for (const it of cmp.items) {
      const row = page.locator(`table.compare-items tr[data-item-id="${String(it.item_id)}"]`);
      expect(await row.getAttribute('data-changed')).toBe('yes');
      const later = row.locator('td[data-run="1"]');
      expect(await later.locator('[data-output-changed]').getAttribute('data-output-changed')).toBe('yes');
      expect(await later.locator('.eval-cell').textContent()).toBe('nope');
      const deltas = (it.changed as { score_deltas: Record<string, number>[] }).score_deltas[0];
      expect(deltas.exact).toBe(-1);
      expect(await later.locator('[data-evaluator="exact"] [data-delta]').textContent()).toContain('−1.00');
      expect(await row.locator('td[data-run="0"] .eval-cell').textContent()).not.toBe('nope');
    }
    const pass = page.locator('table.compare-head td[data-figure="pass-rate"]');
    expect(await pass.allTextContents()).toEqual(['100%', '0%']);
    await shots(page, 'experiments-compare');

    // A finished run of the neuron (a conversation turn) into the dataset from its page. (An
    // experiment's own runs are refused by the API: their message is not recorded as a human turn.)
    const inv = await app.post(`/v1/neurons/${n}/invoke`, ws.key, { message: 'echo: Lisbon' }, ws.brainHeaders);
    expect(inv.status, inv.text).toBe(202);
    const job = String(inv.body.job_id);
    await poll(async () => (await app.get<Body>(`/v1/jobs/${job}/status`, ws.key)).body.status, 60_000).toBe(
      'completed',
    );
    await page.goto(`${app.url}/console/runs/${job}`);
    await page.getByRole('button', { name: 'Add to dataset' }).click();
    const form = page.getByRole('form', { name: 'Add to dataset' });
    await form.getByLabel('Dataset').selectOption({ label: 'capitals (v2)' });
    await form.getByRole('button', { name: 'Add', exact: true }).click();
    await form.getByRole('status').waitFor();
    expect(await form.getByRole('status').textContent()).toContain('as v3');
    const after = await app.get<{ items: Body[]; version: number }>(`/v1/datasets/${ds}/items`, ws.key);
    expect(after.body.version).toBe(3);
    // Version 2 of the neuron answers `nope`: the run's reply is the expected value.
    expect(after.body.items.at(-1)).toMatchObject({ source_job_id: job, input: 'echo: Lisbon', expected: 'nope' });
    await shots(page, 'run-add-to-dataset');

    // The experiments list, filtered by dataset in the URL.
    await page.goto(`${app.url}/console/experiments?dataset_id=${ds}`);
    await poll(() => page.locator('table.experiments tbody tr[data-experiment-id]').count()).toBe(2);
    await shots(page, 'experiments');
    clean();
  }, 240_000);

  it('cancels a running experiment; a member sees and uses the same controls the API allows them', async () => {
    const ws = await buildWorkspace(app);
    await neuron(ws, 'slow bot', 'MODE=right');
    // A member's key: no workspace role. Evaluations take no role (docs/evaluations.md), so the
    // member has every control, and the API accepts what it does.
    const key = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'member key' });
    expect(key.status, key.text).toBe(201);
    const memberKey = String(key.body.key);
    const created = await app.post(
      '/v1/datasets',
      memberKey,
      { name: 'slow', items: Array.from({ length: 6 }, (_, i) => ({ input: `echo: ${i}`, expected: String(i) })) },
      ws.brainHeaders,
    );
    expect(created.status, created.text).toBe(201);
    const ds = String(created.body.id);

    // The one expected failed load: the import of a bad line answers 400 (shown in the form).
    const { page, clean } = await tab({
      expectedError: (m) => m.text().includes('400') && m.location().url.endsWith(`/v1/datasets/${ds}/import`),
    });
    await signIn(page, memberKey, `/datasets/${ds}`);
    for (const name of ['Add item', 'Import JSONL or CSV', 'Run experiment', 'Delete dataset'])
      await page.getByRole('button', { name, exact: true }).waitFor();
    // A JSONL line that is not JSON: the API's message names the line, and no version is made.
    await page.getByRole('button', { name: 'Import JSONL or CSV' }).click();
    const imp = page.getByRole('form', { name: 'Import items' });
    await imp.getByLabel('Items').fill('{"input":"fine"}\n{not json\n');
    await imp.getByRole('button', { name: 'Import' }).click();
    await poll(() => imp.getByRole('alert').textContent()).toMatch(/line 2/);
    expect((await app.get<Body>(`/v1/datasets/${ds}`, memberKey)).body.version).toBe(1);
    await imp.getByRole('button', { name: 'Close' }).click();
    // Every model call now takes 4 s: the experiment (concurrency 1) is still running when cancelled.
    sim.configure({ firstTokenMs: 4000 });
    try {
      await page.getByRole('button', { name: 'Run experiment' }).click();
      const form = page.getByRole('form', { name: 'New experiment' });
      await form.getByLabel('Target', { exact: true }).selectOption({ label: 'neuron slow-bot' });
      await form.getByLabel('Concurrency').fill('1');
      await form.getByRole('button', { name: 'Start experiment' }).click();
      await page.waitForURL(/\/console\/experiments\/[0-9a-f-]{36}$/);
      const id = page.url().split('/').pop()!;
      await poll(() => page.locator('[data-field="experiment-status"]').textContent()).toBe('running');
      await page.locator('table.experiment-items tr[data-status="running"]').first().waitFor();
      await shots(page, 'experiment-running');
      await page.getByRole('button', { name: 'Cancel experiment' }).click();
      await poll(() => page.locator('[data-field="experiment-status"]').textContent()).toBe('cancelled');
      expect(await page.getByRole('button', { name: 'Cancel experiment' }).count()).toBe(0);
      const e = await experiment(ws, id);
      expect(e.status).toBe('cancelled');
      expect(Number(e.items_done)).toBeLessThan(6);
      // Ended, the member deletes it: back on the dataset's experiments, and the API has it no more.
      await page.getByRole('button', { name: 'Delete experiment' }).click();
      await page.waitForURL(/\/console\/experiments\?dataset_id=/);
      expect((await app.get(`/v1/experiments/${id}`, memberKey)).status).toBe(404);
    } finally {
      sim.configure({ firstTokenMs: 20 });
    }

    // The member removes an item (the next version no longer has it), then deletes the dataset.
    await page.goto(`${app.url}/console/datasets/${ds}`);
    await poll(() => page.locator('[data-field="dataset-version"]').textContent()).toBe('v1');
    const first = page.locator('table.dataset-items tbody tr[data-item-id]').first();
    const removed = (await first.getAttribute('data-item-id'))!;
    await first.getByRole('button', { name: 'Remove' }).click();
    await poll(() => page.locator('[data-field="dataset-version"]').textContent()).toBe('v2');
    await poll(() => page.locator('table.dataset-items tbody tr[data-item-id]').count()).toBe(5);
    const v2items = (await app.get<{ items: Body[] }>(`/v1/datasets/${ds}/items`, memberKey)).body.items;
    expect(v2items.map((i) => i.id)).not.toContain(removed);
    // Version 1 still has it, and shows no remove button (an item is removed from the current version).
    await page.getByLabel('Dataset version').selectOption('1');
    await poll(() => page.locator('table.dataset-items tbody tr[data-item-id]').count()).toBe(6);
    expect(await page.locator('table.dataset-items').getByRole('button', { name: 'Remove' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Delete dataset' }).click();
    await page.waitForURL(/\/console\/datasets$/);
    expect((await app.get(`/v1/datasets/${ds}`, memberKey)).status).toBe(404);
    clean();
  }, 120_000);
});
