import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Pathway } from '../../src/pathways/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { useConsoleBrowser } from '../support/console-page.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The console's building pages in Debian's Chromium (playwright-core) against the real platform
 * (API, worker, Temporal, FerretDB, an OpenAI-compatible simulator): a pathway built node by node in
 * the editor, saved, executed to completion, edited into version 2 and compared in the diff view;
 * what a pathway viewer's key sees (no edit controls) and that the API refuses its forced save; the
 * knowledge page (an upload in the folder tree, a search hit with its explain line); the usage page
 * (a chart after a billed run, a budget with its spend). Every page: no console error, no request
 * to another origin. Screenshots at desktop and phone width go to test-output/console/.
 */
const { app } = useSimPlatform({ tokens: [12, 20], interTokenMs: 3 });
const { tab, shots } = useConsoleBrowser('console-build', () => app.url);

async function signIn(page: Page, key: string, to: string) {
  await page.goto(`${app.url}/console${to}`);
  await page.getByLabel('API key or JWT').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

const chip = (page: Page, id: string) =>
  page.getByRole('navigation', { name: 'Nodes' }).getByRole('button', { name: new RegExp(`^${id} `) });
const nodeBox = (page: Page, id: string) => page.locator(`.react-flow__node[data-id="${id}"]`);
const transformOf = (page: Page, id: string) => nodeBox(page, id).evaluate((el) => (el as HTMLElement).style.transform);

describe('the pathway pages', () => {
  it('builds start → transform → output in the editor, runs it to completion, saves version 2 and shows it in the diff', async () => {
    const ws = await buildWorkspace(app);
    const { page, clean } = await tab();
    await signIn(page, ws.key, '/pathways');
    await expect.poll(() => page.locator('h1').textContent()).toBe('Pathways');
    await page.getByRole('link', { name: 'New pathway' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Doubler');

    // The start node declares the run's input (its data is free-form JSON).
    await chip(page, 'start').click();
    await page
      .getByLabel('data (JSON)')
      .fill(
        JSON.stringify({ input_schema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } }),
      );
    // A transform after it, first with a broken expression: the API's validation marks that node.
    await page.getByLabel('Node type').selectOption('transform');
    await page.getByRole('button', { name: 'Add after start' }).click();
    await page.getByLabel('expression', { exact: true }).fill('input.n *');
    await expect.poll(() => nodeBox(page, 'transform').locator('.ed-node').getAttribute('data-problems')).not.toBe('0');
    expect(await page.getByRole('list', { name: 'Problems of this node' }).textContent()).toContain('node "transform"');
    await page.getByLabel('expression', { exact: true }).fill('{ "double": input.n * 2 }');
    await expect.poll(() => nodeBox(page, 'transform').locator('.ed-node').getAttribute('data-problems')).toBe('0');
    // An output node on its own, then connected from the transform with the panel's form.
    await page.getByRole('button', { name: 'Clear selection' }).click();
    await page.getByLabel('Node type').selectOption('output');
    await page.getByRole('button', { name: 'Add node' }).click();
    await chip(page, 'transform').click();
    await page.getByLabel('Connect to').selectOption('output');
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await page.locator('[data-valid="true"]').waitFor();
    await shots(page, 'pathway-editor');
    await page.getByRole('button', { name: 'Create pathway' }).click();
    await page.waitForURL(/\/console\/pathways\/[0-9a-f-]{36}$/);
    const pathwayId = page.url().split('/').pop()!;

    // Execute with the form generated from the input schema; the run page shows it complete.
    await page.getByRole('spinbutton', { name: 'n', exact: true }).fill('21');
    await shots(page, 'pathway');
    await page.getByRole('button', { name: 'Execute' }).click();
    await page.waitForURL(/\/console\/runs\/[0-9a-f-]{36}$/);
    const jobId = page.url().split('/').pop()!;
    await expect.poll(() => page.locator('h1 .badge').textContent(), { timeout: 30_000 }).toBe('completed');
    const job = await app.get(`/v1/jobs/${jobId}`, ws.key);
    expect(job.body.pathway_id).toBe(pathwayId);
    expect(JSON.stringify(job.body.result)).toContain('"double":42');

    // Edit: move the output node, change the expression, save as version 2.
    await page.goto(`${app.url}/console/pathways/${pathwayId}`);
    await page.getByRole('link', { name: 'Edit' }).click();
    await nodeBox(page, 'output').waitFor();
    const box = (await nodeBox(page, 'output').boundingBox())!;
    const before = await transformOf(page, 'output');
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2 + 120, box.y + box.height / 2 + 30, { steps: 8 });
    await page.mouse.up();
    const moved = await transformOf(page, 'output');
    expect(moved).not.toBe(before);
    await chip(page, 'transform').click();
    await page.getByLabel('expression', { exact: true }).fill('{ "double": input.n * 2, "n": input.n }');
    await page.locator('[data-valid="true"]').waitFor();
    await page.getByRole('button', { name: 'Save new version' }).click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Saved' }).textContent()).toContain('version 2');
    // Positions are kept in pathway_data and survive a reload.
    const head = Pathway.parse((await app.get(`/v1/pathways/${pathwayId}`, ws.key)).body);
    expect(head.latest_version).toBe(2);
    const saved = (head.pathway_data as { nodes: { id: string; position: { x: number; y: number } }[] }).nodes;
    const out = saved.find((n) => n.id === 'output')!.position;
    const [mx, my] = moved.match(/-?[\d.]+/g)!.map(Number);
    expect(Math.abs(out.x - mx)).toBeLessThanOrEqual(0.5); // saved to the pixel
    expect(Math.abs(out.y - my)).toBeLessThanOrEqual(0.5);
    await page.reload();
    await nodeBox(page, 'output').waitFor();
    expect(await transformOf(page, 'output')).toBe(`translate(${out.x}px, ${out.y}px)`);

    // The diff of v1 and v2 names the changed node and field.
    await page.goto(`${app.url}/console/pathways/${pathwayId}`);
    await page.getByRole('link', { name: 'Compare versions' }).click();
    await page.waitForURL(/\/diff\?from=1&to=2$/);
    const changed = page.locator('li[data-node="transform"][data-change="changed"]');
    await changed.waitFor();
    expect(await changed.textContent()).toContain('data.expression');
    expect(
      await page.locator('.diff-graph[data-side="to"] [data-node-id="transform"]').getAttribute('data-change'),
    ).toBe('changed');
    await shots(page, 'pathway-diff');
    await page.goto(`${app.url}/console/pathways`);
    await page.locator(`tr[data-pathway-id="${pathwayId}"]`).waitFor();
    await shots(page, 'pathways');
    clean();
  }, 180_000);

  it("shows a pathway viewer's key the pathway without edit controls; the API refuses its forced save (403)", async () => {
    const ws = await buildWorkspace(app);
    const graph = {
      nodes: [
        { id: 'start', type: 'start', data: {} },
        { id: 'out', type: 'output', data: {} },
      ],
      edges: [{ id: 'e1', source: 'start', target: 'out' }],
    };
    const created = await app.post(
      '/v1/pathways',
      ws.key,
      { name: 'Read only', pathway_graph: graph },
      ws.brainHeaders,
    );
    expect(created.status).toBe(201);
    const pathwayId = String(created.body.id);
    const userId = randomUUID();
    const key = await app.post('/v1/api-keys', await ws.jwt([], userId), { name: 'viewer key' });
    expect(key.status).toBe(201);
    const viewerKey = String(key.body.key);
    expect(
      (await app.post(`/v1/pathways/${pathwayId}/participants`, ws.key, { user_id: userId, role: 'viewer' })).status,
    ).toBe(201);

    const { page, clean } = await tab();
    await signIn(page, viewerKey, `/pathways/${pathwayId}`);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Read only');
    await page.locator('tr[data-version="1"]').waitFor();
    await page.getByRole('button', { name: 'Execute' }).waitFor();
    expect(await page.getByRole('link', { name: 'Edit' }).count()).toBe(0);
    await page.goto(`${app.url}/console/pathways/${pathwayId}/edit`);
    await expect.poll(() => page.getByRole('status').textContent()).toContain('needs the pathway role editor');
    expect(await page.getByRole('button', { name: /Save/ }).count()).toBe(0);
    clean();

    const forced = await app.put(`/v1/pathways/${pathwayId}`, viewerKey, { name: 'Renamed by a viewer' });
    expect(forced.status).toBe(403);
    expect(forced.body.code).toBe('FORBIDDEN');
  }, 90_000);
});

describe('the knowledge page', () => {
  it('shows an uploaded asset in its folder with its versions, and a search hit with explain', async () => {
    const ws = await buildWorkspace(app);
    const { page, clean } = await tab();
    await signIn(page, ws.key, '/knowledge');
    await page.getByLabel('File').setInputFiles({
      name: 'field-notes.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from(
        'Field notes from the glacier survey: ice thickness, meltwater channels and crevasse maps.\n',
      ),
    });
    await page.getByLabel('Folder', { exact: true }).fill('surveys/2026');
    await page.getByRole('button', { name: 'Upload' }).click();
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'Uploaded' }).textContent())
      .toContain('field-notes.txt');
    const tree = page.getByRole('list', { name: 'Assets and artifacts by folder' });
    await tree.getByRole('button', { name: /^surveys/ }).click();
    await tree.getByRole('button', { name: /^2026/ }).click();
    const item = tree.locator('li.kn-item', { hasText: 'field-notes.txt' });
    await item.waitFor();
    expect(await item.getAttribute('data-kind')).toBe('asset');
    await item.getByRole('button').click();
    await page.locator('table.kn-versions tr[data-version="1"]').waitFor();

    // An artifact in the same folder, changed once: the tree shows it, its panel both versions.
    const art = await app.post(
      '/v1/artifacts',
      ws.key,
      { title: 'Survey plan', content: 'Day 1: base camp.', path: 'surveys/2026' },
      ws.brainHeaders,
    );
    expect(art.status).toBe(201);
    const artId = String((art.body.artifact as { id: string }).id);
    expect(
      (await app.put(`/v1/artifacts/${artId}`, ws.key, { content: 'Day 1: base camp. Day 2: icefall.' })).status,
    ).toBe(200);
    await page.reload();
    await tree.getByRole('button', { name: /^surveys/ }).click();
    await tree.getByRole('button', { name: /^2026/ }).click();
    const artifact = tree.locator(`li.kn-item[data-id="${artId}"]`);
    expect(await artifact.getAttribute('data-kind')).toBe('artifact');
    await artifact.getByRole('button').click();
    await page.locator('table.kn-versions tr[data-version="2"]').waitFor();
    expect(await page.locator('table.kn-versions tbody tr').count()).toBe(2);

    await page.getByLabel(/^Search assets/).fill('glacier');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const hit = page.locator('.kn-hits li[data-type="assets"]').first();
    await hit.waitFor({ timeout: 20_000 });
    expect(await hit.textContent()).toContain('field-notes.txt');
    expect(await hit.locator('dd[data-leg="lexical"]').textContent()).toMatch(/^#\d+ \(BM25 \d/);
    expect(await hit.locator('dd[data-leg="fused"]').textContent()).toMatch(/^0\.\d{4}/);
    await shots(page, 'knowledge');
    clean();
  }, 90_000);
});

describe('the usage page', () => {
  it('charts the tokens of a run over time and by model, and shows a budget with its spend', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'usage helper',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status).toBe(201);
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'Count to three' });
    expect(inv.status).toBe(202);
    expect((await settleJob(app, ws.key, String(inv.body.job_id))).status).toBe('completed');
    const budget = await app.post('/v1/budgets', ws.key, {
      scope: 'workspace',
      measure: 'tokens',
      period: 'month',
      limit: 100_000,
      name: 'Monthly tokens',
    });
    expect(budget.status).toBe(201);

    const { page, clean } = await tab();
    await signIn(page, ws.key, '/usage');
    const bar = page.locator('rect.chart-bar:not([data-value="0"])');
    await bar.first().waitFor({ timeout: 20_000 });
    expect(await bar.count()).toBe(1); // today, in the 7-day view
    expect(Number(await bar.first().getAttribute('data-value'))).toBeGreaterThan(0);
    expect(Number((await page.locator('[data-total="tokens"]').textContent())!.replace(/\D/g, ''))).toBe(
      Number(await bar.first().getAttribute('data-value')),
    );
    await page.locator('.bar-list[aria-label="By model"] li[data-key="gpt-4o-mini"]').waitFor();
    await page.locator('.bar-list[aria-label="By neuron"] li', { hasText: /usage.helper/ }).waitFor();
    const row = page.locator(`tr[data-budget-id="${String(budget.body.id)}"]`);
    await row.waitFor();
    expect(Number(await row.locator('meter').getAttribute('value'))).toBeGreaterThan(0);
    await shots(page, 'usage');
    // The cost measure and the hourly window redraw from the same routes.
    await page.getByRole('combobox', { name: /^Measure/ }).selectOption('cost');
    await page.getByRole('combobox', { name: /^Window/ }).selectOption('24h');
    await expect.poll(() => page.locator('rect.chart-bar').count(), { timeout: 20_000 }).toBe(24);
    await page.locator('rect.chart-bar:not([data-value="0"])').first().waitFor();
    clean();
  }, 90_000);
});
