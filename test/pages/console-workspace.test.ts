import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { useConsoleBrowser } from '../support/console-page.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The console's Workspace page and command palette (docs/console.md) in Debian's Chromium against
 * the real platform: the caller's roles and the people the keys act for; a secret set from the form
 * and never shown (not in the page, not in any answer the page read); a memory added; a meeting with
 * its transcript; the brain's stakeholder map drawn as a graph with its stances and relations; a
 * member sees no secrets and the API refuses them. The palette (Ctrl-K) jumps to an agent, a
 * pathway, a trace and a run by name or id. Every page: no console error, no request to another
 * origin; screenshots in test-output/console/.
 */
const { app } = useSimPlatform({ firstTokenMs: 20, interTokenMs: 5, tokens: 8 });
const { tab, shots } = useConsoleBrowser('console-workspace', () => app.url, { timezoneId: 'UTC' });

async function signIn(page: Page, key: string, to: string) {
  await page.goto(`${app.url}/console${to}`);
  await page.getByLabel('API key or JWT').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

const poll = <T>(fn: () => Promise<T> | T, timeout = 20_000) => expect.poll(fn, { timeout });

describe('the workspace page', () => {
  it('shows roles and people, sets a secret never shown, adds a memory, shows a meeting transcript and draws the stakeholder map', async () => {
    const ws = await buildWorkspace(app);
    const admin = randomUUID();
    const jwt = await ws.jwt(['workspace_admin'], admin);
    const made = await app.post('/v1/api-keys', jwt, { name: 'ada key', roles: ['workspace_admin'] });
    expect(made.status, made.text).toBe(201);
    const meeting = await app.post('/v1/meetings', ws.key, {
      title: 'Budget review',
      brain_id: ws.brainId,
      body: {
        agenda: ['Q3 numbers'],
        transcript_segments: [
          { speaker: 'Grace', text: 'The Q3 numbers are in.', start_ms: 0 },
          { speaker: 'Linus', text: 'I am against the new vendor.', start_ms: 65_000 },
        ],
      },
    });
    expect(meeting.status, meeting.text).toBe(201);
    const live = await app.get<{ resource_id: string }>('/v1/stakeholder-map', ws.key, ws.brainHeaders);
    expect(live.status, live.text).toBe(200);
    const patched = await app.post(
      `/v1/resources/stakeholder_map/${live.body.resource_id}/patch`,
      ws.key,
      {
        patch_mode: 'stakeholder_map_live',
        ops: [
          { op: 'upsert_stakeholder', name: 'Grace', role: 'CFO', influence: 'high', stance: 'supportive' },
          { op: 'upsert_stakeholder', name: 'Linus', role: 'CTO', influence: 'medium', stance: 'opposed' },
          { op: 'upsert_stakeholder', name: 'Ken', stance: 'neutral' },
          {
            op: 'set_edge',
            from: 'Grace',
            to: 'Linus',
            polarity: 'negative',
            strength: 0.8,
            relation: 'budget dispute',
          },
          { op: 'set_edge', from: 'Grace', to: 'Ken', polarity: 'positive' },
        ],
      },
      ws.brainHeaders,
    );
    expect(patched.status, patched.text).toBe(200);

    const { page, clean, bodies } = await tab({ keepBodies: true });
    await signIn(page, jwt, '/workspace');
    await poll(() => page.locator('[data-field="roles"]').textContent()).toContain('workspace_admin');
    expect(await page.locator('[data-field="user"]').textContent()).toBe(admin);
    const person = page.locator(`table.people tr[data-user="${admin}"]`);
    await person.waitFor();
    expect(await person.textContent()).toContain('workspace_admin');
    await shots(page, 'workspace-members');

    // A secret: set, listed by name, its value nowhere on the page or in any answer it read.
    const value = `sk-live-${Date.now()}-value`;
    await page.getByRole('link', { name: 'Secrets' }).click();
    const sf = page.getByRole('form', { name: 'Set a secret' });
    await sf.getByLabel('Secret name').fill('ACME_TOKEN');
    await sf.getByLabel('Value').fill(value);
    await sf.getByLabel('Only to hosts (optional)').fill('api.acme.example');
    await sf.getByRole('button', { name: 'Set secret' }).click();
    const row = page.locator('tr[data-secret-name="ACME_TOKEN"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('api.acme.example');
    expect(await sf.getByLabel('Value').inputValue()).toBe('');
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(value);
    expect(bodies.some((b) => b.includes(value))).toBe(false);
    const secrets = await app.get<{ secrets: { name: string }[] }>('/v1/secrets', ws.key);
    expect(secrets.body.secrets.map((s) => s.name)).toEqual(['ACME_TOKEN']);
    await shots(page, 'workspace-secrets');

    // A memory.
    await page.getByRole('link', { name: 'Memories' }).click();
    const mf = page.getByRole('form', { name: 'Add a memory' });
    await mf.getByLabel('Memory name').fill('vendor policy');
    await mf.getByLabel('Text').fill('We buy from two vendors at most.');
    await mf.getByRole('button', { name: 'Add memory' }).click();
    await page.locator('table.memories tr', { hasText: 'vendor policy' }).waitFor();
    const mems = await app.get<{ memories: { name: string }[] }>('/v1/memories', ws.key, ws.brainHeaders);
    expect(mems.body.memories.map((m) => m.name)).toContain('vendor policy');

    // The meeting and its transcript.
    await page.getByRole('link', { name: 'Meetings' }).click();
    await page.getByRole('link', { name: 'Budget review' }).click();
    const lines = page.getByRole('list', { name: 'Transcript' }).locator('li');
    await poll(() => lines.count()).toBe(2);
    expect(await lines.nth(1).textContent()).toBe('1:05 Linus: I am against the new vendor.');
    await shots(page, 'workspace-meeting');

    // The stakeholder map as a graph.
    await page.goto(`${app.url}/console/workspace?tab=stakeholders`);
    await page.locator('[data-stakeholder="Grace"]').waitFor();
    expect(await page.locator('[data-stakeholder]').count()).toBe(3);
    expect(await page.locator('[data-stakeholder="Linus"]').getAttribute('data-stance')).toBe('opposed');
    expect(await page.locator('line[data-polarity="negative"]').count()).toBe(1);
    expect(await page.locator('line[data-polarity="positive"]').count()).toBe(1);
    await page.locator('[data-stakeholder="Grace"]').click();
    await poll(() => page.locator('[data-card="Grace"]').textContent()).toContain('Linus: budget dispute (negative)');
    await shots(page, 'workspace-stakeholders');
    clean();
  }, 120_000);

  it('shows a member no secrets; the API refuses them', async () => {
    const ws = await buildWorkspace(app);
    const key = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'member key' });
    const memberKey = String(key.body.key);
    const { page, clean } = await tab({ keepBodies: true });
    await signIn(page, memberKey, '/workspace?tab=secrets');
    await poll(() => page.locator('[data-field="roles"]').textContent()).toBe('member');
    expect(await page.getByRole('link', { name: 'Secrets' }).count()).toBe(0);
    expect(await page.getByRole('form', { name: 'Set a secret' }).count()).toBe(0);
    clean();
    expect((await app.get('/v1/secrets', memberKey)).status).toBe(403);
    expect((await app.request('PUT', '/v1/secrets/X', { auth: memberKey, body: { value: 'v' } })).status).toBe(403);
  }, 60_000);
});

describe('the command palette', () => {
  it('jumps with Ctrl-K to an agent by name, a pathway by name, a trace by id, a run by id, a knowledge resource and a trigger by name', async () => {
    const ws = await buildWorkspace(app);
    const n = await app.post('/v1/neurons', ws.key, {
      name: 'palette scout',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(n.status).toBe(201);
    const graph = {
      nodes: [
        { id: 's', type: 'start' },
        { id: 'o', type: 'output', data: { value: '"done"' } },
      ],
      edges: [{ source: 's', target: 'o' }],
    };
    const p = await app.post('/v1/pathways', ws.key, { name: 'palette flow', pathway_graph: graph }, ws.brainHeaders);
    expect(p.status, p.text).toBe(201);
    const inv = await app.post(`/v1/neurons/${String(n.body.id)}/invoke`, ws.key, { message: 'hello there' });
    expect(inv.status, inv.text).toBeLessThan(300);
    const jobId = String(inv.body.job_id);
    const traceId = String(inv.body.trace_id);
    const asset = await app.post('/v1/assets', ws.key, { name: 'glacier-notes.txt', path: 'survey' }, ws.brainHeaders);
    expect(asset.status, asset.text).toBe(201);
    const assetId = String((asset.body as { id?: string; asset?: { id: string } }).asset?.id ?? asset.body.id);
    const watcher = await app.post('/v1/receptors/subscribe', ws.key, {
      template: 'stimulus',
      name: 'palette watcher',
      brain_id: ws.brainId,
      target: { kind: 'neuron', id: n.body.id },
      stimulus_keys: ['vault.asset.created'],
    });
    expect(watcher.status, watcher.text).toBe(201);

    const { page, clean } = await tab({
      keepBodies: true,
      // The trigger's page asks for its share link; a receptor without one is the API's 404 (the page
      // shows the create form), as in console-triggers.test.ts.
      expectedError: (m) => m.text().includes('404') && /\/v1\/receptors\/[^/]+\/[^/]+\/share$/.test(m.location().url),
    });
    await signIn(page, ws.key, '/runs');
    const find = async (text: string, kind: string) => {
      await page.keyboard.press('Control+k');
      const box = page.getByRole('dialog', { name: 'Go to' }).getByRole('combobox');
      await box.fill(text);
      const first = page.getByRole('dialog', { name: 'Go to' }).getByRole('option').first();
      await poll(() => first.getAttribute('data-kind')).toBe(kind);
      await box.press('Enter');
      await page.getByRole('dialog', { name: 'Go to' }).waitFor({ state: 'detached' });
    };
    await find('scout', 'agent');
    await page.waitForURL(new RegExp(`/console/agents/${String(n.body.id)}$`));
    await find('palette fl', 'pathway');
    await page.waitForURL(new RegExp(`/console/pathways/${String(p.body.id)}$`));
    await find(traceId, 'trace');
    await page.waitForURL(new RegExp(`/console/traces/${traceId}$`));
    await find(jobId, 'run');
    await page.waitForURL(new RegExp(`/console/runs/${jobId}$`));
    // A knowledge resource by its name: the Knowledge page opens with it shown.
    await find('glacier-no', 'asset');
    await page.waitForURL(new RegExp(`/console/knowledge\\?asset=${assetId}$`));
    await page.getByRole('heading', { name: 'glacier-notes.txt' }).waitFor();
    // A trigger (receptor) by its name.
    await find('watcher', 'trigger');
    await page.waitForURL(new RegExp(`/console/triggers/${String(watcher.body.id)}$`));
    // Escape closes it; the Find button opens it too.
    await page.getByRole('button', { name: 'Find…' }).click();
    await page.getByRole('dialog', { name: 'Go to' }).getByRole('combobox').fill('palette');
    await poll(() => page.getByRole('dialog', { name: 'Go to' }).getByRole('option').count()).toBeGreaterThanOrEqual(2);
    await shots(page, 'palette');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog', { name: 'Go to' }).waitFor({ state: 'detached' });
    clean();
  }, 90_000);
});
