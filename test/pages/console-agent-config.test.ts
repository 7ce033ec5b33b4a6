import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { Neuron } from '../../src/neurons/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { useConsoleBrowser } from '../support/console-page.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The agent editor's neuron_config fields beyond the basics (docs/console.md, "Agents"): the ordered
 * fallback models (docs/neurons.md, "Model fallbacks") and the tool calls that wait for a person
 * (docs/tools.md, `tool_approval`), in Chromium against the real platform: set on create, read back
 * into the form, changed into a new version and cleared; a named-tools approval with no tool named is
 * refused by the API and the form shows the API's message naming the field. The playground runs an
 * earlier version on the same conversation (invoke's `version`), each reply naming the version and the
 * model that answered, to compare two models' answers. No console error (beyond
 * that expected 400), no request to another origin; screenshots at desktop and phone width.
 */
const { app } = useSimPlatform({ firstTokenMs: 20, interTokenMs: 5, tokens: 4 });
const { tab, shots } = useConsoleBrowser('console-agent-config', () => app.url);

async function signIn(page: Page, key: string, to: string) {
  await page.goto(`${app.url}/console${to}`);
  await page.getByLabel('API key or JWT').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

describe('the agent editor: fallback models and tool approval', () => {
  it('creates an agent with ordered fallbacks and a tool approval, edits them into version 2 and clears them', async () => {
    const ws = await buildWorkspace(app);
    const models = (await app.get<{ models: { model: string }[] }>('/v1/config/models', ws.key)).body.models.map(
      (m) => m.model,
    );
    expect(models.length, 'the platform offers at least three models').toBeGreaterThanOrEqual(3);
    const [main, fb1, fb2] = models as [string, string, string];
    const { page, clean } = await tab({
      // The refused save below is a 400 the page answers with the API's message.
      expectedError: (m) => m.text().includes('400'),
    });
    await signIn(page, ws.key, '/agents/new');
    await page.getByLabel('Name', { exact: true }).fill('Fallback pilot');
    await page.getByRole('combobox', { name: /^Model/ }).selectOption(main);
    await page.getByRole('button', { name: 'Add fallback model' }).click();
    await page.getByLabel('Fallback model 1', { exact: true }).selectOption(fb1);
    await page.getByRole('button', { name: 'Add fallback model' }).click();
    await page.getByLabel('Fallback model 2', { exact: true }).selectOption(fb2);
    // Reordered: the second becomes the first one tried.
    await page.getByRole('button', { name: 'Move fallback model 2 up' }).click();
    await expect.poll(() => page.getByLabel('Fallback model 1', { exact: true }).inputValue()).toBe(fb2);

    // Named tools with none named: the API refuses it and the form says which field.
    await page.getByRole('radio', { name: 'calls of these tools' }).check();
    await page.getByRole('button', { name: 'Create agent' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/tool_approval\.tools/);
    expect(page.url()).toMatch(/\/agents\/new$/);

    await page.getByLabel(/^Tools that wait/).fill('book_flight\nsend_email');
    await page.getByLabel(/^Answer within/).fill('600');
    await shots(page, 'agent-config-new');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.waitForURL(/\/console\/agents\/[0-9a-f-]{36}$/);
    const id = page.url().split('/').pop()!;
    const v1 = Neuron.parse((await app.get(`/v1/neurons/${id}`, ws.key, ws.brainHeaders)).body);
    expect(v1.neuron_config).toMatchObject({
      model: main,
      fallback_models: [fb2, fb1],
      tool_approval: { tools: ['book_flight', 'send_email'], timeout_s: 600 },
    });

    // Edited: the form reads the stored fields back; every call waits, no limit; one fallback removed.
    await page.goto(`${app.url}/console/agents/${id}/edit`);
    await expect.poll(() => page.getByLabel('Fallback model 2', { exact: true }).inputValue()).toBe(fb1);
    expect(await page.getByLabel(/^Tools that wait/).inputValue()).toBe('book_flight\nsend_email');
    expect(await page.getByLabel(/^Answer within/).inputValue()).toBe('600');
    await page.getByRole('button', { name: 'Remove fallback model 1' }).click();
    await page.getByRole('radio', { name: 'every tool call' }).check();
    await page.getByLabel(/^Answer within/).fill('');
    await page.getByRole('button', { name: 'Save new version' }).click();
    await page.waitForURL(/\/console\/agents\/[0-9a-f-]{36}$/);
    const v2 = Neuron.parse((await app.get(`/v1/neurons/${id}`, ws.key, ws.brainHeaders)).body);
    expect(v2.latest_version).toBe(2);
    expect(v2.neuron_config.fallback_models).toEqual([fb1]);
    expect(v2.neuron_config.tool_approval).toEqual({ tools: 'all' });

    // Cleared: no fallback, no approval: the fields are gone from the config.
    await page.goto(`${app.url}/console/agents/${id}/edit`);
    await page.getByRole('button', { name: 'Remove fallback model 1' }).click();
    await page.getByRole('radio', { name: 'none' }).check();
    await page.getByRole('button', { name: 'Save new version' }).click();
    await page.waitForURL(/\/console\/agents\/[0-9a-f-]{36}$/);
    const v3 = Neuron.parse((await app.get(`/v1/neurons/${id}`, ws.key, ws.brainHeaders)).body);
    expect(v3.latest_version).toBe(3);
    expect(v3.neuron_config.fallback_models).toBeUndefined();
    expect(v3.neuron_config.tool_approval).toBeUndefined();
    expect(v3.neuron_config.model).toBe(main);
    clean();
  });

  it('the playground compares two versions (two models) answer by answer on one conversation', async () => {
    const ws = await buildWorkspace(app);
    const models = (await app.get<{ models: { model: string }[] }>('/v1/config/models', ws.key)).body.models.map(
      (m) => m.model,
    );
    const [first, second] = models.filter((m) => m.startsWith('openai/')) as [string, string];
    const created = await app.post<{ id: string }>('/v1/neurons', ws.key, {
      name: 'compare',
      brain_id: ws.brainId,
      neuron_config: { model: first },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect((await app.put(`/v1/neurons/${id}`, ws.key, { neuron_config: { model: second } })).status).toBe(200);

    const { page, clean } = await tab();
    await signIn(page, ws.key, `/agents/${id}`);
    const turn = (n: number) => page.locator('.playground li.msg.neuron[data-status]').nth(n);
    const version = (n: number) => turn(n).locator('.turn-version');
    await page.getByLabel('Message').fill('Which model answers?');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => version(0).getAttribute('data-model'), { timeout: 30_000 }).toBe(second);
    expect(await version(0).getAttribute('data-version')).toBe('head');
    await page.waitForURL(/\?trace=[0-9a-f-]{36}$/);
    const traceId = new URL(page.url()).searchParams.get('trace')!;

    await page.getByLabel('Version', { exact: true }).selectOption('1');
    await page.getByLabel('Message').fill('Which model answers?');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => version(1).getAttribute('data-model'), { timeout: 30_000 }).toBe(first);
    expect(await version(1).getAttribute('data-version')).toBe('1');
    expect(new URL(page.url()).searchParams.get('trace')).toBe(traceId);
    await shots(page, 'agent-playground-versions');

    // The runs behind the two turns: the pinned one ran version 1's model, on the same trace.
    const jobs = await Promise.all(
      [0, 1].map(async (n) => {
        const jobId = (await turn(n).getAttribute('data-job-id'))!;
        return (await app.get<{ result: { model?: string }; trace_id: string | null }>(`/v1/jobs/${jobId}`, ws.key))
          .body;
      }),
    );
    expect(jobs.map((j) => j.result.model)).toEqual([second, first]);
    clean();
  });
});
