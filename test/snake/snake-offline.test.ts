import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCortexClient } from '../../clients/typescript/src/index.js';
import { DECISION_PATHWAY_NAME, ensureDecisionPathway } from '../../snake/provision.js';
import { Health, TickResult } from '../../snake/schemas.js';
import { isSafe, reset, type SnakeState } from '../../snake/state.js';
import { buildWorkspace, startTestApp } from '../support/app.js';
import { openBrowser } from '../support/browser.js';
import { startTestWorker } from '../support/worker.js';
import { startSnake, type SnakeTestApp } from './support/snake-app.js';

/*
 * The snake on a fresh machine: no model key anywhere (no provider configured on the platform, the
 * default model local/echo). `ensureDecisionPathway` (what `npm run up` runs) creates the decision
 * pathway with the offline rules; every tick runs it through the platform API as a pathwayRun, and
 * the browser sees the snake reach the fruit.
 */
let api: Awaited<ReturnType<typeof startTestApp>>;
let worker: Awaited<ReturnType<typeof startTestWorker>>;
let ws: Awaited<ReturnType<typeof buildWorkspace>>;
let snake: SnakeTestApp;

beforeAll(async () => {
  api = await startTestApp({
    OPENAI_BASE_URL: undefined,
    OPENAI_API_KEY: undefined,
    ANTHROPIC_API_KEY: undefined,
    DEFAULT_MODEL: 'local/echo',
  });
  worker = await startTestWorker(api);
  ws = await buildWorkspace(api);
  const made = await ensureDecisionPathway({
    apiUrl: api.url,
    apiKey: ws.key,
    brainId: ws.brainId,
    model: 'local/echo',
  });
  expect(made).toMatchObject({ name: DECISION_PATHWAY_NAME, uses: 'rules', created: true });
  // As `npm run up` configures it: the pathway by name.
  snake = await startSnake({
    CORTEX_API_URL: api.url,
    CORTEX_API_KEY: ws.key,
    CORTEX_BRAIN_ID: ws.brainId,
    SNAKE_PATHWAY: DECISION_PATHWAY_NAME,
    SNAKE_AGENT_TIMEOUT_MS: '8000',
    SNAKE_POLL_MS: '20',
  });
});
afterAll(async () => {
  await snake?.close();
  await worker?.stop();
  await api?.close();
});

const tick = async (state: SnakeState) => TickResult.parse((await snake.post('/api/tick', { state })).body);

describe('the offline decision pathway', () => {
  it('health says a pathway decides by rules', async () => {
    const res = await snake.get('/api/health');
    expect(Health.parse(res.body)).toEqual({
      ok: true,
      agent_configured: true,
      decider: { target: 'pathway', id: expect.any(String), name: DECISION_PATHWAY_NAME, uses: 'rules' },
    });
  });

  it('every tick is a pathway run on the platform that picks a safe heading toward the fruit', async () => {
    const client = createCortexClient({ baseUrl: api.url, apiKey: ws.key, brainId: ws.brainId });
    const boards: SnakeState[] = [
      { ...reset(), fruit: { x: 12, y: 8 } }, // straight ahead
      { ...reset(), fruit: { x: 8, y: 2 } }, // up
      { ...reset(), fruit: { x: 3, y: 13 } }, // behind and below: turn down, never reverse
      {
        ...reset({ width: 8, height: 8 }),
        snake: [
          { x: 7, y: 4 },
          { x: 6, y: 4 },
          { x: 5, y: 4 },
        ],
        heading: 'right',
        fruit: { x: 0, y: 0 },
      }, // the wall ahead
      {
        ...reset({ width: 8, height: 8 }),
        snake: [
          { x: 7, y: 0 },
          { x: 6, y: 0 },
          { x: 5, y: 0 },
        ],
        heading: 'right',
        fruit: null,
      }, // a corner, no fruit
    ];
    for (const state of boards) {
      const r = await tick(state);
      if (r.outcome !== 'moved') throw new Error(`expected a move, got ${JSON.stringify(r)}`);
      expect(r.decision.source, JSON.stringify(r.decision)).toBe('agent');
      expect(isSafe(state, r.decision.heading)).toBe(true);
      if (state.fruit) {
        const d = (s: SnakeState) => Math.abs(s.snake[0].x - state.fruit!.x) + Math.abs(s.snake[0].y - state.fruit!.y);
        expect(d(r.state), `${JSON.stringify(state.snake[0])} → ${r.decision.heading}`).toBeLessThan(d(state));
      }
      // The decision is a pathway job of this workspace, completed, with the heading as its output.
      const job = await client.jobs.status(r.decision.job_id!);
      expect(job).toMatchObject({
        kind: expect.stringMatching(/pathway/),
        status: 'completed',
        pathway_id: expect.any(String),
      });
      expect((job.result as { output: { heading: string } }).output.heading).toBe(r.decision.heading);
    }
  });

  it('re-provisioning is idempotent, and a configured model swaps in a neuron node (and back)', async () => {
    const o = { apiUrl: api.url, apiKey: ws.key, brainId: ws.brainId };
    expect(await ensureDecisionPathway({ ...o, model: 'local/echo' })).toMatchObject({
      created: false,
      updated: false,
      uses: 'rules',
    });
    const withModel = await ensureDecisionPathway({ ...o, model: 'openai/gpt-4o-mini' });
    expect(withModel).toMatchObject({ created: false, updated: true, uses: 'model' });
    const client = createCortexClient({ baseUrl: api.url, apiKey: ws.key, brainId: ws.brainId });
    const graph = (await client.api.GET('/v1/pathways/{id}', { params: { path: { id: withModel.id } } })).data!
      .pathway_graph as { nodes: { type: string }[] };
    expect(graph.nodes.map((n) => n.type)).toEqual(['start', 'neuron', 'output']);
    expect(await ensureDecisionPathway({ ...o, model: 'local/echo' })).toMatchObject({ updated: true, uses: 'rules' });
  });

  it('in the browser, with no model key, the page says the rules decide and the snake reaches the fruit', async () => {
    const browser = await openBrowser('snake-offline-', { viewport: { width: 1000, height: 640 } });
    try {
      const page = await browser.context.newPage();
      await page.goto(snake.url);
      await expect.poll(() => page.locator('#decider').innerText()).toMatch(/pathway snake-decider, offline rules/);
      await expect.poll(() => page.locator('#status').innerText()).toBe('stopped');
      // A fruit off the snake's line: reaching it takes turns, not just going straight.
      const box = (await page.locator('#board').boundingBox())!;
      const size = await page.locator('#board').evaluate((c: HTMLCanvasElement) => [c.width, c.height]);
      await page.mouse.click(
        box.x + ((4 + 0.5) * 28 * box.width) / size[0],
        box.y + ((3 + 0.5) * 28 * box.height) / size[1],
      );
      await expect.poll(() => page.locator('#fruit').innerText()).toBe('(4, 3)');
      await page.locator('#start').click();
      await expect.poll(() => page.locator('#score').innerText(), { timeout: 60_000 }).toBe('1');
      expect(await page.locator('#decision').innerText()).toMatch(/^agent → (up|down|left|right)$/);
      await page.screenshot({ path: path.resolve(import.meta.dirname, '../../test-output/snake-offline.png') });
      await page.locator('#start').click();
    } finally {
      await browser.close();
    }
  }, 120_000);
});
