import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Neuron } from '../../src/neurons/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { useConsoleBrowser } from '../support/console-page.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The console's agent and workspace pages (docs/console.md) in Debian's Chromium (playwright-core)
 * against the real platform (API, worker, Temporal, FerretDB, Redis, the provider simulator): an
 * agent created from the form, talked to in its playground (the reply streaming token by token
 * and equal to the stored reply, its tokens and cost, a retry, a stop that cancels the run), edited
 * into version 2, compared with version 1, version 1 promoted, deactivated and deleted; what a
 * member sees (no control on a workspace agent, and the API refuses the forced change); the
 * settings: an API key shown once that works and stops working once revoked, a budget with its
 * spend, a webhook endpoint with its delivery log and a replay. Every page: no console error, no
 * request to another origin. Screenshots at desktop and phone width go to test-output/console/.
 */
const { app, sim } = useSimPlatform(
  { firstTokenMs: 60, interTokenMs: 25, tokens: 24 },
  { OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'], WEBHOOK_RETRY_INITIAL_MS: 100 },
);
const { tab, shots } = useConsoleBrowser('console-agents', () => app.url);
const MODEL = 'openai/gpt-4o-mini';
let receiver: Server;
let hookBase = '';
const received: { path: string; body: string }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => receiver?.close(r));
});

/** A new tab (signed out) that records console errors and requests to another origin. */
async function signIn(page: Page, key: string, to: string) {
  await page.goto(`${app.url}/console${to}`);
  await page.getByLabel('API key or JWT').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

const poll = <T>(fn: () => Promise<T> | T, timeout = 20_000) => expect.poll(fn, { timeout });

/** The nth agent turn of the playground (0-based). */
const agentTurn = (page: Page, n: number) => page.locator('.playground li.msg.neuron[data-status]').nth(n);

describe('the agent pages', () => {
  it('creates an agent, streams a chat with tokens and cost, retries, stops, edits, diffs, promotes, deactivates and deletes it', async () => {
    const ws = await buildWorkspace(app);
    const { page, clean } = await tab();
    await signIn(page, ws.key, '/agents');
    await page.getByText('No agents in this brain yet').waitFor();
    await page.getByRole('link', { name: 'New agent' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Glacier guide');
    await page.getByLabel('Description').fill('Answers questions about the survey');
    await page.getByLabel('Model').selectOption(MODEL);
    await page.getByLabel('Instructions (charter)').fill('Purpose: answer briefly.');
    await page.getByLabel('Temperature').fill('0.3');
    await page.getByLabel('Max tokens').fill('256');
    await shots(page, 'agent-new');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.waitForURL(/\/console\/agents\/[0-9a-f-]{36}$/);
    const neuronId = page.url().split('/').pop()!;
    const created = Neuron.parse((await app.get(`/v1/neurons/${neuronId}`, ws.key, ws.brainHeaders)).body);
    expect(created.name).toBe('glacier-guide');
    expect(created.neuron_config).toMatchObject({
      model: MODEL,
      system_prompt: 'Purpose: answer briefly.',
      temperature: 0.3,
      max_tokens: 256,
    });

    // A chat on a new trace: the reply grows token by token, then equals the stored reply.
    await page.getByLabel('Message').fill('How thick is the ice?');
    await page.getByRole('button', { name: 'Send' }).click();
    const first = agentTurn(page, 0);
    const lengths: number[] = [];
    await poll(async () => {
      const status = await first.getAttribute('data-status');
      if (status === 'streaming') lengths.push(((await first.locator('p.reply').textContent()) ?? '').length);
      return status;
    }).toBe('completed');
    expect(new Set(lengths.filter((l) => l > 0)).size, 'the reply grew while it streamed').toBeGreaterThan(1);
    await page.waitForURL(/\?trace=[0-9a-f-]{36}$/);
    const traceId = new URL(page.url()).searchParams.get('trace')!;
    const messages = async () =>
      (
        await app.get<{ engrams: { source_type: string; content: { content: string } }[] }>(
          `/v1/traces/${traceId}/messages`,
          ws.key,
        )
      ).body.engrams;
    const stored = (await messages()).filter((e) => e.source_type === 'neuron');
    expect(stored).toHaveLength(1);
    expect(await first.locator('p.reply').textContent()).toBe(stored[0].content.content);
    const usage = first.locator('.turn-usage');
    await poll(() => usage.getAttribute('data-cost')).toMatch(/^\d/);
    expect(Number(await usage.getAttribute('data-tokens'))).toBeGreaterThan(0);
    await shots(page, 'agent-playground');

    // Retry: the last message again, as a new turn on the same trace.
    await page.getByRole('button', { name: 'Retry last message' }).click();
    await poll(() => agentTurn(page, 1).getAttribute('data-status')).toBe('completed');
    const afterRetry = await messages();
    expect(afterRetry.map((e) => e.source_type)).toEqual(['user', 'neuron', 'user', 'neuron']);
    expect(afterRetry[2].content.content).toBe('How thick is the ice?');

    // Stop: a long reply cancelled half way; the run ends cancelled.
    sim.configure({ tokens: 200, interTokenMs: 60 });
    try {
      await page.getByLabel('Message').fill('Tell me everything');
      await page.getByRole('button', { name: 'Send' }).click();
      const third = agentTurn(page, 2);
      await poll(async () => ((await third.locator('p.reply').textContent()) ?? '').length).toBeGreaterThan(0);
      await page.getByRole('button', { name: 'Stop' }).click();
      await poll(() => third.getAttribute('data-status')).toBe('cancelled');
      const jobId = (await third.getAttribute('data-job-id'))!;
      const job = await app.get<{ status: string }>(`/v1/jobs/${jobId}`, ws.key);
      expect(job.body.status).toBe('failed');
    } finally {
      sim.configure({ tokens: 24, interTokenMs: 25 });
    }

    // Reopened on the trace: the earlier turns are shown from the stored conversation.
    await page.reload();
    await poll(() => page.locator('.playground li.msg[data-engram-id]').count()).toBeGreaterThanOrEqual(4);

    // Edit into version 2, then the diff of v1 and v2 names the changed fields.
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByLabel('Temperature').fill('0.9');
    await page.getByLabel('Instructions (charter)').fill('Purpose: answer in detail.');
    await page.getByRole('button', { name: 'Save new version' }).click();
    await page.waitForURL(new RegExp(`/console/agents/${neuronId}$`));
    await page.locator('tr[data-version="2"]').waitFor();
    expect(await page.locator('[data-field="temperature"]').textContent()).toBe('0.9');
    const diff = page.getByLabel('Version diff');
    await diff.locator('tr[data-field="neuron_config.temperature"]').waitFor();
    expect(await diff.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-field')))).toEqual(
      ['neuron_config.system_prompt', 'neuron_config.temperature'],
    );
    expect(await diff.locator('tr[data-field="neuron_config.temperature"] .diff-from').textContent()).toBe('0.3');
    await shots(page, 'agent-versions');

    // Promote v1: a new head (v3) with v1's settings.
    await page.locator('tr[data-version="1"]').getByRole('button', { name: 'Promote' }).click();
    await page.locator('tr[data-version="3"]').waitFor();
    const promoted = Neuron.parse((await app.get(`/v1/neurons/${neuronId}`, ws.key)).body);
    expect(promoted.latest_version).toBe(3);
    expect(promoted.neuron_config.temperature).toBe(0.3);
    await poll(() => page.locator('[data-field="temperature"]').textContent()).toBe('0.3');

    // Deactivate: the API shows it inactive and the playground cannot send.
    await page.getByRole('button', { name: 'Deactivate', exact: true }).click();
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor();
    expect(Neuron.parse((await app.get(`/v1/neurons/${neuronId}`, ws.key)).body).is_active).toBe(false);
    expect(await page.getByLabel('Message').isDisabled()).toBe(true);

    // The list shows it; then delete it from its page.
    await page.goto(`${app.url}/console/agents`);
    await page.locator(`tr[data-neuron-id="${neuronId}"]`).waitFor();
    await shots(page, 'agents');
    await page.locator(`tr[data-neuron-id="${neuronId}"] a`).click();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(/\/console\/agents$/);
    expect((await app.get(`/v1/neurons/${neuronId}`, ws.key)).status).toBe(404);
    clean();
  }, 180_000);

  it('gives an agent knowledge, a tool and a sub-agent from the form, and folds its tool call and delegation in the chat', async () => {
    const ws = await buildWorkspace(app);
    const child = await app.post('/v1/neurons', ws.key, {
      name: 'researcher',
      brain_id: ws.brainId,
      neuron_config: { model: MODEL },
    });
    expect(child.status).toBe(201);
    const asset = await app.post('/v1/assets', ws.key, { name: 'ice-notes.txt', path: 'survey' }, ws.brainHeaders);
    expect(asset.status, asset.text).toBe(201);
    const assetId = String((asset.body as { id?: string; asset?: { id: string } }).asset?.id ?? asset.body.id);

    const { page, clean } = await tab();
    await signIn(page, ws.key, '/agents/new');
    await page.getByLabel('Name', { exact: true }).fill('lead');
    await page.getByLabel('Model').selectOption(MODEL);
    await page.getByRole('list', { name: 'Knowledge' }).getByLabel('survey/ice-notes.txt').check();
    await page.getByRole('list', { name: 'Sub-agents' }).getByLabel('researcher').check();
    await page.getByLabel('Built-in tools (one per line)').fill('calculator');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.waitForURL(/\/console\/agents\/[0-9a-f-]{36}$/);
    const lead = Neuron.parse((await app.get(`/v1/neurons/${page.url().split('/').pop()!}`, ws.key)).body);
    expect(lead.neuron_config).toMatchObject({
      resource_ids: [assetId],
      sub_neuron_ids: [String(child.body.id)],
      tools: ['calculator'],
    });

    // The model asks for the calculator, then delegates to the researcher, then answers.
    sim.configure({
      toolCalls: (body) => {
        const system = String(body.messages.find((m) => m.role === 'system')?.content ?? '');
        if (system.includes('You are researcher')) return null;
        const tools = body.messages.filter((m) => m.role === 'tool').length;
        if (tools === 0) return [{ name: 'calculator', arguments: { expression: '6 * 7' } }];
        if (tools === 1) return [{ name: 'delegate_researcher', arguments: { message: 'ice thickness' } }];
        return null;
      },
    });
    try {
      await page.getByLabel('Message').fill('Compute and research');
      await page.getByRole('button', { name: 'Send' }).click();
      const turn = agentTurn(page, 0);
      await poll(() => turn.getAttribute('data-status'), 60_000).toBe('completed');
      const tool = turn.locator('details[data-step="tool"]').first();
      expect(await tool.locator('summary').textContent()).toBe('Tool call: calculator');
      await tool.locator('summary').click();
      expect(await tool.locator('.json').textContent()).toContain('6 * 7');
      const delegated = turn.locator('details[data-step="delegate"]');
      expect(await delegated.locator('summary').textContent()).toBe('Delegated to researcher');
      await delegated.locator('summary').click();
      const childRun = delegated.getByRole('link', { name: /^its run / });
      expect(await childRun.getAttribute('href')).toMatch(/^\/console\/runs\/[0-9a-f-]{36}$/);
      await shots(page, 'agent-tools');
    } finally {
      sim.configure({ toolCalls: undefined });
    }
    clean();
  }, 120_000);

  it("shows a member no control on a workspace agent, and the API refuses the member's forced change", async () => {
    const ws = await buildWorkspace(app);
    const shared = await app.post('/v1/neurons', ws.key, {
      name: 'Shared desk',
      brain_id: ws.brainId,
      scope: 'workspace',
      neuron_config: { model: MODEL },
    });
    expect(shared.status, shared.text).toBe(201);
    const sharedId = String(shared.body.id);
    const own = await app.post('/v1/neurons', ws.key, {
      name: 'Own desk',
      brain_id: ws.brainId,
      neuron_config: { model: MODEL },
    });
    expect(own.status).toBe(201);
    const key = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'member key' });
    expect(key.status).toBe(201);
    const memberKey = String(key.body.key);

    const { page, clean } = await tab();
    await signIn(page, memberKey, `/agents/${sharedId}`);
    await page.locator('tr[data-version="1"]').waitFor();
    await page.getByRole('button', { name: 'Send' }).waitFor();
    for (const name of ['Edit', 'Delete', 'Deactivate'])
      expect(await page.getByRole(name === 'Edit' ? 'link' : 'button', { name }).count(), name).toBe(0);
    // A brain agent is theirs to change.
    await page.goto(`${app.url}/console/agents/${String(own.body.id)}`);
    await page.getByRole('link', { name: 'Edit' }).waitFor();
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('button', { name: 'Save new version' }).waitFor();
    expect(await page.getByLabel('Scope').locator('option').allTextContents()).toEqual(['brain']);
    // The settings page: an API key credential manages no keys, a member no budgets or webhooks.
    await page.goto(`${app.url}/console/settings`);
    await page.locator('[data-note="api-keys"]').waitFor();
    await page.locator('[data-note="admin"]').waitFor();
    expect(await page.getByRole('heading', { name: /API keys|Budgets|Webhooks/ }).count()).toBe(0);
    clean();

    const forced = await app.put(`/v1/neurons/${sharedId}`, memberKey, { is_active: false });
    expect(forced.status).toBe(403);
    expect((await app.get('/v1/budgets', memberKey)).status).toBe(403);
  }, 90_000);
});

describe('the settings page', () => {
  it('creates an API key shown once that works until revoked, sets a budget, and adds a webhook with its delivery log and replay', async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'hooked',
      brain_id: ws.brainId,
      neuron_config: { model: MODEL },
    });
    expect(n.status).toBe(201);
    const { page, clean } = await tab();
    await signIn(page, admin, '/settings');

    // API key: shown once, works, listed by prefix, then revoked and refused.
    await page.getByLabel('Key name').fill('ci runner');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.locator('[data-secret]').textContent())!;
    expect(secret.length).toBeGreaterThan(20);
    expect((await app.get('/v1/session/context', secret)).status).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.locator('[data-secret]').count()).toBe(0);
    const row = page.locator('table.api-keys tr', { hasText: 'ci runner' });
    await row.waitFor();
    expect(await page.locator('table.api-keys').textContent()).not.toContain(secret);

    // Budget: a workspace token budget with its spend after a billed run.
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'hello' });
    expect(inv.status).toBe(202);
    await page.getByLabel('Budget name').fill('Monthly tokens');
    await page.getByLabel('Limit').fill('100000');
    await page.getByRole('button', { name: 'Set budget' }).click();
    const budgetRow = page.locator('table.budgets tr', { hasText: 'Monthly tokens' });
    await budgetRow.waitFor();
    const budgets = await app.get<{ budgets: { id: string; name: string; limit: number; measure: string }[] }>(
      '/v1/budgets',
      ws.key,
    );
    expect(budgets.body.budgets).toMatchObject([{ name: 'Monthly tokens', limit: 100000, measure: 'tokens' }]);
    expect((await settleJob(app, ws.key, String(inv.body.job_id))).status).toBe('completed');

    // Webhook: an endpoint on a local receiver, a run's delivery in its log, a replay.
    await page.getByLabel('Endpoint URL').fill(`${hookBase}/hooks`);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const firstSecret = (await page.locator('[data-secret]').textContent())!;
    expect(firstSecret).toMatch(/^whsec_/);
    const endpoint = page.locator('table.webhooks tr[data-endpoint-id]');
    await endpoint.waitFor();
    const inv2 = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'ping' });
    expect((await settleJob(app, ws.key, String(inv2.body.job_id))).status).toBe('completed');
    await endpoint.getByRole('button', { name: 'Deliveries' }).click();
    const delivered = page.locator('.deliveries li[data-status="delivered"]');
    await delivered.first().waitFor({ timeout: 20_000 });
    expect(await delivered.first().textContent()).toContain('job.completed');
    const before = received.length;
    await delivered.first().getByRole('button', { name: 'Replay' }).click();
    await poll(() => page.locator('.deliveries li[data-status="delivered"]').count()).toBe(2);
    expect(received.length).toBeGreaterThan(before);
    await shots(page, 'settings');

    // Its events changed in place; its secret rotated (the new one shown once, the old one still signing a while).
    await endpoint.getByRole('button', { name: 'Change' }).click();
    await endpoint.getByLabel('job.failed').uncheck();
    await endpoint.getByRole('button', { name: 'Save events' }).click();
    await poll(() => endpoint.locator('td').nth(1).textContent()).toBe('job.completed Change');
    const endpointId = (await endpoint.getAttribute('data-endpoint-id'))!;
    const read = async () =>
      (
        await app.get<{ events: string[]; previous_secret_expires_at: string | null }>(
          `/v1/webhook-endpoints/${endpointId}`,
          admin,
        )
      ).body;
    expect((await read()).events).toEqual(['job.completed']);
    await endpoint.getByRole('button', { name: 'Rotate secret' }).click();
    await poll(() => page.locator('[data-secret]').textContent()).not.toBe(firstSecret);
    expect(await page.locator('[data-secret]').textContent()).toMatch(/^whsec_/);
    expect((await read()).previous_secret_expires_at).not.toBeNull();

    // Revoke the key: the API refuses it from then on.
    await row.getByRole('button', { name: 'Revoke' }).click();
    await poll(() => page.locator('table.api-keys tr', { hasText: 'ci runner' }).count()).toBe(0);
    expect((await app.get('/v1/session/context', secret)).status).toBe(401);
    clean();
  }, 120_000);
});
