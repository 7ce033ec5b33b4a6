import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { Engram } from '../../src/traces/schemas.js';
import { Intervention } from '../../src/interventions/schemas.js';
import { Job } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { openBrowser, type OpenBrowser } from '../support/browser.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The console (docs/console.md) in Debian's Chromium (playwright-core) against the real services and
 * the provider simulator: sign in; a pathway run with parallel branches, a map and a human node whose
 * nodes change state on the graph until the human node waits; the answer from the approvals inbox and
 * the run completing; a neuron run's reply streaming on its run page and in its trace; a member's
 * inbox without the answer buttons the API would refuse. Every page: no console error, no request
 * to another origin, and a screenshot at desktop and phone width in test-output/console/.
 */
const { app, sim } = useSimPlatform(
  { firstTokenMs: 80, interTokenMs: 40, tokens: 24 },
  { TEMPORAL_UI_URL: 'http://127.0.0.1:8233' },
);
const OUT = path.resolve(import.meta.dirname, '../../test-output/console');
const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };
type Ws = Awaited<ReturnType<typeof buildWorkspace>>;
/** expect.poll with room for the pages' own polling (a job every 1.5 s, the inbox every 3 s). */
const poll = <T>(fn: () => Promise<T> | T, timeout = 10_000) => expect.poll(fn, { timeout });

let context: BrowserContext;
let browser: OpenBrowser | undefined;
/** Every console error, page error and request to another origin, from any page of the context. */
const problems: string[] = [];

beforeAll(async () => {
  if (!existsSync(path.resolve(import.meta.dirname, '../../console/dist/index.html')))
    throw new Error('console/dist is missing: run scripts/provision.sh (or npm run console:build)');
  await mkdir(OUT, { recursive: true });
  browser = await openBrowser('console-chromium-', { viewport: SIZES.desktop });
  context = browser.context;
  const origin = new URL(app.url).origin;
  context.on('request', (req) => {
    const url = req.url();
    if (!url.startsWith('data:') && new URL(url).origin !== origin) problems.push(`external request: ${url}`);
  });
  context.on('page', (page) => {
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  });
});
afterAll(async () => {
  await browser?.close();
});
afterEach(() => {
  const seen = problems.splice(0);
  expect(seen).toEqual([]);
});

async function shots(page: Page, name: string) {
  for (const [label, size] of Object.entries(SIZES)) {
    await page.setViewportSize(size);
    await page.waitForTimeout(150); // React Flow fits the graph to its new size
    await page.screenshot({ path: path.join(OUT, `${name}-${label}.png`), fullPage: true });
  }
  await page.setViewportSize(SIZES.desktop);
}

/** A new page signed in with `token` (the sign-in form, as a person does it). */
async function signedIn(token: string, at = '/console'): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${app.url}${at}`);
  await page.getByLabel('API key or JWT').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
  return page;
}

async function makeNeuron(ws: Ws, name: string): Promise<string> {
  const n = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/sim' },
  });
  expect(n.status, n.text).toBe(201);
  return String(n.body.id);
}

/** Node id → data-state of the node chips on the run page. */
const nodeStates = (page: Page) =>
  page
    .locator('button.node-chip')
    .evaluateAll((els) =>
      Object.fromEntries(els.map((e) => [e.getAttribute('data-node-id')!, e.getAttribute('data-state')!])),
    );

describe('the console', () => {
  it('signs in with an API key (a wrong one is refused with the API message), keeps it out of the URL, and signs out', async () => {
    const ws = await buildWorkspace(app);
    const page = await context.newPage();
    await page.goto(`${app.url}/console/runs`);
    await shots(page, 'signin');
    await page.getByLabel('API key or JWT').fill('ck_not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await poll(() => page.getByRole('alert').textContent()).toMatch(/UNAUTHORIZED|AUTH/);
    problems.length = 0; // the refused sign-in's 401 is logged by the browser: that one is expected
    await page.getByLabel('API key or JWT').fill(ws.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    expect(page.url()).toBe(`${app.url}/console/runs`);
    expect(page.url()).not.toContain(ws.key);
    const stored = await page.evaluate(() => ({
      session: JSON.stringify(sessionStorage),
      local: JSON.stringify(localStorage),
    }));
    expect(stored.session).toContain(ws.key);
    expect(stored.local).not.toContain(ws.key);
    // Keyboard: Tab reaches the nav and Enter follows a link; the focused element shows a ring.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => ({
      text: document.activeElement?.textContent,
      outline: getComputedStyle(document.activeElement!).outlineStyle,
    }));
    expect(focused.text).toBe('Agents');
    expect(focused.outline).not.toBe('none');
    await page.keyboard.press('Tab'); // Runs
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    expect(page.url()).toBe(`${app.url}/console/approvals`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key or JWT').waitFor();
    expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(ws.key);
    await page.close();
  });

  it('draws a pathway run on its graph: parallel branches run together, the map shows its items, the human node waits; approved from the inbox, the run completes', async () => {
    const ws = await buildWorkspace(app);
    sim.configure({ firstTokenMs: 80, interTokenMs: 40, tokens: 24 });
    const neuronId = await makeNeuron(ws, 'summariser');
    const graph = {
      nodes: [
        { id: 'start', type: 'start' },
        { id: 'slow', type: 'delay', data: { seconds: 3, label: 'Slow branch' } },
        { id: 'fast', type: 'delay', data: { seconds: 3, label: 'Fast branch' } },
        { id: 'both', type: 'join', data: { mode: 'all' } },
        {
          id: 'items',
          type: 'map',
          data: { items: 'input.tickets', neuron_id: neuronId, message: 'Ticket {{ item }}', concurrency: 1 },
        },
        {
          id: 'ask',
          type: 'human',
          data: { title: 'Ship {{ $count(input.tickets) }} summaries?', prompt: 'Read them first.' },
        },
        { id: 'done', type: 'output', data: { value: '"shipped"' } },
        { id: 'dropped', type: 'output', data: { value: '"dropped"' } },
      ],
      edges: [
        { source: 'start', target: 'slow' },
        { source: 'start', target: 'fast' },
        { source: 'slow', target: 'both' },
        { source: 'fast', target: 'both' },
        { source: 'both', target: 'items' },
        { source: 'items', target: 'ask' },
        { source: 'ask', target: 'done', handle: 'approve' },
        { source: 'ask', target: 'dropped', handle: 'reject' },
      ],
    };
    const p = await app.post('/v1/pathways', ws.key, { name: 'triage', pathway_graph: graph }, ws.brainHeaders);
    expect(p.status, p.text).toBe(201);
    const page = await signedIn(ws.key);
    const run = await app.post(
      `/v1/pathways/${String(p.body.id)}/execute`,
      ws.key,
      { input: { tickets: ['printer', 'vpn', 'mail'] } },
      ws.brainHeaders,
    );
    expect(run.status, run.text).toBe(202);
    const jobId = String(run.body.job_id);

    await page.goto(`${app.url}/console/runs/${jobId}`);
    await page.locator('.pw-node[data-node-id="ask"]').waitFor();
    // Watch the states change, as the page shows them, until the human node waits.
    const seen: Record<string, string>[] = [];
    const itemsSeen = new Set<string>();
    const until = Date.now() + 45_000;
    for (;;) {
      const s = await nodeStates(page);
      if (JSON.stringify(s) !== JSON.stringify(seen.at(-1))) seen.push(s);
      const items = await page.locator('.pw-node[data-node-id="items"] .pw-items span').allTextContents();
      items.forEach((t) => itemsSeen.add(t.trim()));
      if (s.ask === 'waiting') break;
      if (Date.now() > until) throw new Error(`the human node never waited: ${JSON.stringify(seen)}`);
      await page.waitForTimeout(40);
    }
    // Parallel branches: both delays were running at the same moment, then both done.
    expect(
      seen.some((s) => s.slow === 'running' && s.fast === 'running'),
      JSON.stringify(seen),
    ).toBe(true);
    // Every node that ran went through running before done; nothing after the human node ran.
    for (const id of ['slow', 'fast', 'items']) {
      const first = seen.findIndex((s) => s[id] === 'running');
      expect(first, id).toBeGreaterThanOrEqual(0);
      expect(
        seen.findIndex((s) => s[id] === 'done'),
        id,
      ).toBeGreaterThan(first);
    }
    expect(seen[0].ask).toBe('pending');
    expect(seen.at(-1)).toMatchObject({
      start: 'done',
      both: 'done',
      items: 'done',
      done: 'pending',
      dropped: 'pending',
    });
    // The map node showed its items as they went (node_progress), and its child runs are listed.
    expect([...itemsSeen].some((t) => /^[0-3]\/3 items$/.test(t))).toBe(true);
    await expect.poll(() => page.locator('.children li').count(), { timeout: 10_000 }).toBe(3);
    // A node's entries and settings on click; the waiting run offers the answer here too.
    await page.locator('button.node-chip[data-node-id="items"]').click();
    await poll(() => page.getByLabel('Node entries').textContent()).toContain('node_progress');
    await expect.poll(() => page.locator('.badge').first().textContent(), { timeout: 10_000 }).toBe('waiting');
    await poll(() => page.getByRole('heading', { name: 'Waiting: Ship 3 summaries?' }).count()).toBe(1);
    await shots(page, 'run-waiting');

    // The inbox: pending first, with the summary counts and the run's context.
    await page.getByRole('link', { name: 'Approvals' }).click();
    const item = page.getByRole('list', { name: 'Pending interventions' }).locator('li.intervention');
    await item.waitFor();
    await poll(() => page.getByRole('list', { name: 'Counts' }).textContent()).toContain('1 pending');
    expect(await item.locator('h3').textContent()).toBe('Ship 3 summaries?');
    expect(await item.getByRole('link', { name: jobId.slice(0, 8) }).count()).toBe(1);
    await shots(page, 'approvals');
    await item.getByLabel('Comment (optional)').fill('All three read');
    await item.getByRole('button', { name: 'approve' }).click();
    await expect
      .poll(() => page.locator('li.intervention[data-status="approved"]').count(), { timeout: 10_000 })
      .toBe(1);
    const answered = Intervention.parse(
      (await app.get<{ interventions: unknown[] }>(`/v1/interventions?job_id=${jobId}&brain_scope=all`, ws.key)).body
        .interventions[0],
    );
    expect(answered).toMatchObject({ status: 'approved', action: 'approve', comment: 'All three read' });

    // Back on the run: the graph moves on to the end; the branch not taken is skipped.
    await page
      .locator('li.intervention[data-status="approved"]')
      .getByRole('link', { name: jobId.slice(0, 8) })
      .click();
    await page.locator('[data-terminal="complete"]').waitFor({ timeout: 20_000 });
    await expect
      .poll(() => nodeStates(page))
      .toEqual({
        start: 'done',
        slow: 'done',
        fast: 'done',
        both: 'done',
        items: 'done',
        ask: 'done',
        done: 'done',
        dropped: 'skipped',
      });
    const job = Job.parse((await app.get(`/v1/jobs/${jobId}`, ws.key)).body);
    expect(job).toMatchObject({
      status: 'completed',
      pathway_version: 1,
      input: { tickets: ['printer', 'vpn', 'mail'] },
    });
    // Cost, input and result as the API reports them; a node's output from the result.
    const usage = (job.result as { usage: { costUsd: number } }).usage;
    await poll(() => page.locator('.facts').textContent()).toContain(`$${usage.costUsd.toFixed(6)}`);
    expect(await page.getByLabel('Input', { exact: true }).textContent()).toContain('"printer"');
    await page.locator('button.node-chip[data-node-id="items"]').click();
    const outputs = (job.result as { nodes: Record<string, unknown> }).nodes.items as string[];
    await poll(() => page.getByLabel('Node output').textContent()).toContain(outputs[0].slice(0, 20));
    // Keyboard: a graph node takes focus and Enter opens it.
    await page.locator('.react-flow__node[data-id="ask"]').focus();
    await page.keyboard.press('Enter');
    await poll(() => page.getByLabel('Node ask').locator('h3').textContent()).toBe('ask (human)');
    await shots(page, 'run-completed');
    await page.close();
  });

  it("streams a neuron run's reply on its run page and in its trace, as it is written", async () => {
    const ws = await buildWorkspace(app);
    sim.configure({ firstTokenMs: 200, interTokenMs: 80, tokens: 60 });
    const neuronId = await makeNeuron(ws, 'storyteller');
    // The first call breaks half way: the turn is retried, and its reset shows as a retried turn.
    sim.configure({ faults: ['disconnect'] });
    const page = await signedIn(ws.key);
    const inv = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'Tell me a long story' });
    expect(inv.status, inv.text).toBe(202);
    const jobId = String(inv.body.job_id);
    const traceId = String(inv.body.trace_id);
    await page.goto(`${app.url}/console/runs/${jobId}`);
    const reply = page.locator('.stream .reply');
    await expect.poll(async () => ((await reply.textContent()) ?? '').length, { timeout: 15_000 }).toBeGreaterThan(5);
    await expect
      .poll(() => page.locator('.stream .retried').textContent(), { timeout: 20_000 })
      .toMatch(/^Turn 1 was retried \(attempt \d+\): the earlier text was dropped\.$/);
    const early = ((await reply.textContent()) ?? '').length;
    await shots(page, 'run-neuron-streaming');
    // The trace: the human turn, then the neuron's reply growing while it streams.
    await page.getByRole('link', { name: 'Trace', exact: true }).click();
    await page.locator('li.msg.human').waitFor();
    const streaming = page.locator('li.msg.streaming .reply');
    const lengths: number[] = [];
    await expect
      .poll(
        async () => {
          lengths.push(((await streaming.textContent().catch(() => '')) ?? '').length);
          return lengths.filter((n, i) => i > 0 && n > lengths[i - 1] && lengths[i - 1] > 0).length;
        },
        { timeout: 15_000, interval: 150 },
      )
      .toBeGreaterThan(1);
    await shots(page, 'trace-streaming');
    // When the run ends the stored reply replaces the streamed one: the same text.
    await settleJob(app, ws.key, jobId);
    const engrams = (await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key)).body.engrams.map(
      (e) => Engram.parse(e),
    );
    const stored = engrams.find((e) => e.source_type === 'neuron')!;
    expect(stored.content.content.length).toBeGreaterThan(early);
    // The run page showed the reply the reset rule gives: the stored one, without the dropped attempt.
    await page.goBack();
    await poll(() => page.locator('[data-terminal]').getAttribute('data-terminal')).toBe('complete');
    expect(await reply.textContent()).toBe(stored.content.content);
    await page.goForward();
    await expect
      .poll(() => page.locator(`li.msg.neuron[data-engram-id="${stored.id}"] .reply`).textContent(), {
        timeout: 15_000,
      })
      .toBe(stored.content.content);
    expect(await page.locator('li.msg.streaming').count()).toBe(0);
    expect(await page.locator('li.msg.human .reply').textContent()).toBe('Tell me a long story');
    await shots(page, 'trace');
    await page.getByRole('link', { name: 'Traces' }).click();
    await page.locator(`tr[data-trace-id="${traceId}"]`).waitFor();
    // The API's filters: by neuron, and a search in the title.
    await page.getByLabel('Neuron').selectOption({ label: 'storyteller' });
    await poll(() => page.url()).toContain(`neuron_id=${neuronId}`);
    await page.getByLabel('Search').fill('long story');
    await page.getByRole('button', { name: 'Search' }).click();
    await poll(() => page.url()).toContain('search=long+story');
    await page.locator(`tr[data-trace-id="${traceId}"]`).waitFor();
    await page.getByLabel('Search').fill('no such title');
    await page.getByRole('button', { name: 'Search' }).click();
    await poll(() => page.locator('tr[data-trace-id]').count()).toBe(0);
    await page.getByLabel('Search').fill('');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator(`tr[data-trace-id="${traceId}"]`).waitFor();
    await shots(page, 'traces');
    await page.getByRole('link', { name: 'Runs' }).click();
    await page.locator(`tr[data-job-id="${jobId}"]`).waitFor();
    await page.getByLabel('Status').selectOption('completed');
    await poll(() => page.url()).toContain('status=completed');
    await page.locator(`tr[data-job-id="${jobId}"]`).waitFor();
    await shots(page, 'runs');
    await page.close();
  });

  it('resumes a paused run and cancels a running one from its page, which links its workflow in the Temporal UI', async () => {
    const ws = await buildWorkspace(app);
    const p = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: 'slow',
        pathway_graph: {
          nodes: [
            { id: 'start', type: 'start' },
            { id: 'hold', type: 'human', data: { pause: true, title: 'Hold' } },
            { id: 'wait', type: 'delay', data: { seconds: 60 } },
            { id: 'out', type: 'output' },
          ],
          edges: [
            { source: 'start', target: 'hold' },
            { source: 'hold', target: 'wait' },
            { source: 'wait', target: 'out' },
          ],
        },
      },
      ws.brainHeaders,
    );
    // The runs list is live: a run started after it opened appears, paused, without a reload.
    const page = await signedIn(ws.key, '/console/runs');
    const jobId = String(
      (await app.post(`/v1/pathways/${String(p.body.id)}/execute`, ws.key, {}, ws.brainHeaders)).body.job_id,
    );
    await poll(() => page.locator(`tr[data-job-id="${jobId}"] .badge`).textContent(), 15_000).toBe('paused');
    expect(await page.locator(`tr[data-job-id="${jobId}"] td[data-label="Target"]`).textContent()).toBe('slow v1');
    await page.locator(`tr[data-job-id="${jobId}"] a`).click();
    expect(await page.getByRole('link', { name: 'Temporal UI ↗' }).getAttribute('href')).toBe(
      `http://127.0.0.1:8233/namespaces/${app.config.TEMPORAL_NAMESPACE}/workflows/${jobId}`,
    );
    await expect.poll(() => nodeStates(page), { timeout: 15_000 }).toMatchObject({ hold: 'waiting' });
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await expect.poll(() => nodeStates(page), { timeout: 15_000 }).toMatchObject({ hold: 'done', wait: 'running' });
    await page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.locator('[data-terminal]').textContent(), { timeout: 15_000 }).toMatch(/^Cancelled/);
    expect(await nodeStates(page)).toMatchObject({ hold: 'done', wait: 'failed', out: 'skipped' });
    await poll(() => page.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
    expect(Job.parse((await app.get(`/v1/jobs/${jobId}`, ws.key)).body).status).toBe('failed');
    await shots(page, 'run-cancelled');
    await page.close();
  });

  it('shows a member no answer to a budget pause (the API refuses it), while an admin answers it', async () => {
    const ws = await buildWorkspace(app);
    sim.configure({ firstTokenMs: 20, interTokenMs: 5, tokens: 8 });
    const neuronId = await makeNeuron(ws, 'spender');
    const budget = await app.post('/v1/budgets', ws.key, {
      scope: 'neuron',
      target_id: neuronId,
      measure: 'tokens',
      period: 'day',
      limit: 1,
      policy: 'pause',
    });
    expect(budget.status, budget.text).toBe(201);
    const first = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'one' });
    await settleJob(app, ws.key, String(first.body.job_id));
    const second = String((await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, { message: 'two' })).body.job_id);
    let interventionId = '';
    await expect
      .poll(
        async () => {
          const j = Job.parse((await app.get(`/v1/jobs/${second}`, ws.key)).body);
          interventionId = String(j.waitingFor?.interventionId ?? '');
          return j.status;
        },
        { timeout: 20_000 },
      )
      .toBe('waiting');

    const member = await ws.jwt([]);
    const page = await signedIn(member, '/console/approvals');
    await page.getByRole('link', { name: 'Approvals' }).click();
    const item = page
      .getByRole('list', { name: 'Pending interventions' })
      .locator(`li.intervention[data-intervention-id="${interventionId}"]`);
    await item.waitFor();
    expect(await item.textContent()).toContain('A workspace admin answers a budget pause.');
    expect(await item.getByRole('button').count()).toBe(0);
    await shots(page, 'approvals-member');
    // Forced, the API refuses it: the console hid only what the API would refuse.
    const forced = await app.post(`/v1/interventions/${interventionId}/respond`, member, { action: 'approve' });
    expect(forced.status).toBe(403);
    await page.close();

    const admin = await signedIn(ws.key, '/console/approvals');
    await admin.getByRole('link', { name: 'Approvals' }).click();
    const adminItem = admin
      .getByRole('list', { name: 'Pending interventions' })
      .locator(`li.intervention[data-intervention-id="${interventionId}"]`);
    await adminItem.getByRole('button', { name: 'reject' }).click();
    await expect
      .poll(() =>
        admin
          .getByRole('list', { name: 'All interventions' })
          .locator(`li.intervention[data-intervention-id="${interventionId}"]`)
          .getAttribute('data-status'),
      )
      .toBe('rejected');
    await admin.close();
  });
});
