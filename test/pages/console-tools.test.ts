import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import Provider from 'oidc-provider';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { useConsoleBrowser } from '../support/console-page.js';
import { mcpHandler } from '../support/mcp-server.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * The console's Tools pages (docs/console.md) in Debian's Chromium against the real platform, a
 * real OpenID provider (oidc-provider, in this process) and MCP tool servers on loopback: an
 * integration added from the form (its secret never shown), a reflex on an MCP server that lists
 * its tools, the OAuth connect flow out to the provider's login and consent and back to the
 * reflex's page showing the connection, the reflex attached to an agent, an HTTP-tools reflex with
 * its tool; a member sees neither integrations nor controls the API refuses. Every page: no
 * console error; no request to another origin but the provider's pages during the connect.
 */
const { app } = useSimPlatform(
  { firstTokenMs: 20, interTokenMs: 5, tokens: 8 },
  { OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'] },
);
const { tab, shots } = useConsoleBrowser('console-tools', () => app.url, { timezoneId: 'UTC' });
const CLIENT_SECRET = `secret-${randomUUID()}`;
const servers: Server[] = [];
let issuer = '';
let mcpUrl = '';
/** The provider's port answers once the test has registered the reflex's callback. */
let handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, res) => res.writeHead(503).end();

const listen = async (h: (req: IncomingMessage, res: ServerResponse) => void) => {
  const server = createServer(h);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  issuer = await listen((req, res) => handler(req, res));
  // A tool server whose `whoami` answers with the account the provider vouches for.
  const tools = (server: McpServer, req: IncomingMessage) => {
    const auth = String(req.headers.authorization ?? '');
    server.registerTool('whoami', { description: 'Says which account the call is made for' }, async () => {
      const me = await fetch(`${issuer}/me`, { headers: { authorization: auth } });
      if (!me.ok) return { isError: true, content: [{ type: 'text', text: `token refused (${me.status})` }] };
      return { content: [{ type: 'text', text: `you are ${String(((await me.json()) as { sub: string }).sub)}` }] };
    });
    server.registerTool('ping', { description: 'Answers pong' }, async () => ({
      content: [{ type: 'text', text: 'pong' }],
    }));
  };
  mcpUrl = `${await listen(mcpHandler('account', tools))}/mcp`;
});
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
});

function startProvider(redirectUris: string[]) {
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'cortex-console',
        client_secret: CLIENT_SECRET,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    ttl: { AccessToken: 3600 },
    issueRefreshToken: async () => true,
    scopes: ['openid', 'api'],
  });
  handler = provider.callback();
}

async function signIn(page: Page, key: string, to: string) {
  await page.goto(`${app.url}/console${to}`);
  await page.getByLabel('API key or JWT').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

const poll = <T>(fn: () => Promise<T> | T, timeout = 20_000) => expect.poll(fn, { timeout });

describe('the tools pages', () => {
  it('adds an integration, makes an MCP reflex, lists its tools, connects an account through OAuth and attaches it to an agent', async () => {
    const ws = await buildWorkspace(app);
    const agent = await app.post('/v1/neurons', ws.key, {
      name: 'helper',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    expect(agent.status).toBe(201);
    // A person signs in with a JWT (a connection belongs to a user).
    const jwt = await ws.jwt(['workspace_admin'], randomUUID());
    const { page, clean } = await tab({ allowOrigins: [new URL(issuer).origin] });
    await signIn(page, jwt, '/tools');
    await page.getByText('No reflexes yet').waitFor();

    // The integration, from the admin's form.
    const form = page.getByRole('form', { name: 'Add an integration' });
    await form.getByLabel('Integration id').fill('acme');
    await form.getByLabel('Display name').fill('Acme');
    await form.getByLabel('Authorization endpoint').fill(`${issuer}/auth`);
    await form.getByLabel('Token endpoint').fill(`${issuer}/token`);
    await form.getByLabel('Client id').fill('cortex-console');
    await form.getByLabel('Client secret').fill(CLIENT_SECRET);
    await form.getByLabel('Scopes (space separated)').fill('openid api');
    await form.getByRole('button', { name: 'Save integration' }).click();
    const row = page.locator('tr[data-integration-id="acme"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('set');
    expect(await page.locator('body').textContent()).not.toContain(CLIENT_SECRET);
    const listed = await app.get<{ integrations: { has_client_secret: boolean }[] }>('/v1/integrations', ws.key);
    expect(listed.body.integrations).toEqual([
      expect.objectContaining({ integration_id: 'acme', has_client_secret: true }),
    ]);

    // A reflex on the MCP server, its calls made with the person's acme account.
    await page.getByRole('button', { name: 'New reflex' }).click();
    const nf = page.getByRole('form', { name: 'New reflex' });
    await nf.getByLabel('Reflex name').fill('acme tools');
    await nf.getByLabel('Tools from').selectOption('mcp');
    await nf.getByLabel('MCP server URL').fill(mcpUrl);
    await nf.getByLabel('Connected account (integration id, optional)').fill('acme');
    await nf.getByRole('button', { name: 'Create reflex' }).click();
    await page.waitForURL(/\/console\/tools\/[0-9a-f-]{36}$/);
    const reflexId = page.url().split('/').pop()!;
    const stored = await app.get<{ metadata: Record<string, unknown> }>(`/v1/reflexes/${reflexId}`, ws.key);
    expect(stored.body.metadata).toEqual({ server_url: mcpUrl, integration_id: 'acme' });

    // Its discovered tools, as the API lists them.
    await page.locator('tr[data-tool="whoami"]').waitFor();
    await page.locator('tr[data-tool="ping"]').waitFor();
    const apiTools = await app.get<{ tools: { name: string }[] }>(`/v1/reflexes/${reflexId}/tools`, ws.key);
    expect(apiTools.body.tools.map((t) => t.name).sort()).toEqual(['ping', 'whoami']);

    // Connect: out to the provider's login and consent, back to this page, the connection shown.
    const conn = page.locator('tr[data-integration="acme"]');
    await poll(() => conn.getAttribute('data-connected')).toBe('false');
    startProvider([`${app.url}/v1/reflexes/${reflexId}/callback`]);
    await page.getByRole('button', { name: 'Connect acme' }).click();
    await page.waitForURL((u) => u.origin === new URL(issuer).origin);
    await page.fill('input[name=login]', 'ada');
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
    await page.waitForSelector('button[type=submit]');
    await page.click('button[type=submit]');
    await page.waitForURL(new RegExp(`/console/tools/${reflexId}\\?`));
    await page.locator('[data-note="connected"]').waitFor();
    await poll(() => conn.getAttribute('data-connected')).toBe('true');
    const check = await app.get<{ connected: boolean }>(`/v1/reflexes/${reflexId}/connections/check`, jwt);
    expect(check.body.connected).toBe(true);
    await shots(page, 'tool-connected');

    // Attached to the agent from the reflex's page; the agent's page lists it.
    const attach = page.getByRole('form', { name: 'Attach to an agent' });
    await attach.getByLabel('Attach to agent').selectOption({ label: 'helper' });
    await attach.getByRole('button', { name: 'Attach' }).click();
    await page.locator(`table.attached tr[data-neuron-id="${String(agent.body.id)}"]`).waitFor();
    const onAgent = await app.get<{ id: string }[]>(`/v1/neurons/${String(agent.body.id)}/reflexes`, ws.key);
    expect(onAgent.body.map((r) => r.id)).toEqual([reflexId]);
    await page.goto(`${app.url}/console/agents/${String(agent.body.id)}`);
    await page.locator('[data-field="reflexes"]').getByRole('link', { name: 'acme tools' }).waitFor();

    // Disconnect on the reflex's page.
    await page.goto(`${app.url}/console/tools/${reflexId}`);
    await poll(() => conn.getAttribute('data-connected')).toBe('true');
    await page.getByRole('button', { name: 'Disconnect' }).click();
    await poll(() => conn.getAttribute('data-connected')).toBe('false');
    clean();
  }, 120_000);

  it('makes an HTTP-tools reflex and lists its tool; refuses bad JSON on the form; edits its name and description', async () => {
    const ws = await buildWorkspace(app);
    const { page, clean } = await tab();
    await signIn(page, ws.key, '/tools');
    await page.getByRole('button', { name: 'New reflex' }).click();
    const nf = page.getByRole('form', { name: 'New reflex' });
    await nf.getByLabel('Reflex name').fill('weather');
    await nf.getByLabel('Tools from').selectOption('http');
    const box = nf.getByLabel(/^HTTP tools/);
    await box.fill('[{ "name": "forecast"');
    await nf.getByRole('button', { name: 'Create reflex' }).click();
    await nf.getByText('HTTP tools: not JSON').waitFor();
    await box.fill(
      JSON.stringify([
        {
          name: 'forecast',
          description: 'The forecast of a city',
          method: 'GET',
          url: 'https://weather.example.com/forecast/{city}',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ]),
    );
    await nf.getByRole('button', { name: 'Create reflex' }).click();
    await page.waitForURL(/\/console\/tools\/[0-9a-f-]{36}$/);
    const row = page.locator('tr[data-tool="forecast"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('HTTP');
    // Edited: a new name and description (PUT /v1/reflexes/:id), shown and stored.
    const reflexId = page.url().split('/').pop()!;
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const ef = page.getByRole('form', { name: 'Edit reflex' });
    await ef.getByLabel('Name').fill('weather-service');
    await ef.getByLabel('Description').fill('Forecasts by city');
    await ef.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'weather-service', level: 1 }).waitFor();
    await page.getByText('Forecasts by city').waitFor();
    const stored = await app.get<{ name: string; description: string }>(`/v1/reflexes/${reflexId}`, ws.key);
    expect(stored.body).toMatchObject({ name: 'weather-service', description: 'Forecasts by city' });
    await page.goto(`${app.url}/console/tools`);
    await page.locator('table.reflexes tr', { hasText: 'weather-service' }).waitFor();
    await shots(page, 'tools');
    clean();
  }, 60_000);

  it('shows a member no integrations and no change to a workspace reflex; the API refuses them', async () => {
    const ws = await buildWorkspace(app);
    const r = await app.post('/v1/reflexes', ws.key, {
      name: 'clock',
      type: 'sensory',
      scope: 'workspace',
      metadata: { handler: 'current_time' },
    });
    expect(r.status, r.text).toBe(201);
    const id = String(r.body.id);
    const agent = await app.post('/v1/neurons', ws.key, {
      name: 'shared',
      brain_id: ws.brainId,
      scope: 'workspace',
      neuron_config: { model: 'openai/gpt-4o-mini' },
    });
    const key = await app.post('/v1/api-keys', await ws.jwt([]), { name: 'member key' });
    const memberKey = String(key.body.key);
    const { page, clean } = await tab();
    await signIn(page, memberKey, '/tools');
    await page.locator(`tr[data-reflex-id="${id}"]`).waitFor();
    expect(await page.getByRole('heading', { name: 'Integrations' }).count()).toBe(0);
    await page.goto(`${app.url}/console/tools/${id}`);
    await page.locator('tr[data-tool="current_time"]').waitFor();
    await page.getByText('No agent has this reflex yet.').waitFor();
    for (const name of ['Edit', 'Delete', 'Deactivate', 'Attach'])
      expect(await page.getByRole('button', { name, exact: true }).count(), name).toBe(0);
    clean();
    expect((await app.get('/v1/integrations', memberKey)).status).toBe(403);
    expect((await app.request('DELETE', `/v1/reflexes/${id}`, { auth: memberKey })).status).toBe(403);
    expect((await app.request('PUT', `/v1/reflexes/${id}`, { auth: memberKey, body: { name: 'x' } })).status).toBe(403);
    expect((await app.post(`/v1/neurons/${String(agent.body.id)}/reflexes`, memberKey, { reflex_id: id })).status).toBe(
      403,
    );
  }, 60_000);
});
