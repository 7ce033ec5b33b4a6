import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import Provider from 'oidc-provider';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { mcpHandler } from '../support/mcp-server.js';
import { useSimPlatform } from '../support/platform.js';
import { dataOf, readSse } from '../support/sse.js';

/**
 * Reflex connections through a real OpenID provider (oidc-provider, in this process) and a tool
 * server that accepts only that provider's tokens: connect → consent → callback → connected →
 * tool call with the token → refresh → disconnect, plus a wrong state, a replayed callback and an
 * open-redirect callbackUrl. The browser part runs in Debian's Chromium.
 */
const { app, sim } = useSimPlatform(
  { firstTokenMs: [20, 60], interTokenMs: 5, tokens: [3, 6] },
  {
    OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'],
    OAUTH_CALLBACK_ALLOW: ['https://app.example'],
  },
);
const CHROMIUM = '/usr/bin/chromium';
const CLIENT_SECRET = `secret-${randomUUID()}`;
const servers: Server[] = [];
let issuer = '';
let provider: Provider;
let context: BrowserContext;
let userDataDir = '';
let mcpUrl = '';
/** The integration's MCP server (mcp_server_url), and whether each request to it carried a token. */
let integrationMcpUrl = '';
const integrationMcpAuth: boolean[] = [];
/** Every bearer token the tool server received (the database dump must hold none of them). */
const seenTokens: string[] = [];

const listen = async (handler: (req: IncomingMessage, res: ServerResponse) => void) => {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/provision.sh`);
  issuer = await listen((req, res) => handler(req, res));
  // A tool server that accepts only tokens the provider vouches for (its userinfo endpoint).
  const accountTools = (server: McpServer, req: IncomingMessage) => {
    const auth = String(req.headers.authorization ?? '');
    server.registerTool('whoami', { description: 'Says which account the call is made for' }, async () => {
      const token = auth.replace(/^Bearer /, '');
      if (!token) return { isError: true, content: [{ type: 'text', text: 'no token' }] };
      seenTokens.push(token);
      const me = await fetch(`${issuer}/me`, { headers: { authorization: `Bearer ${token}` } });
      if (!me.ok) return { isError: true, content: [{ type: 'text', text: `token refused (${me.status})` }] };
      return { content: [{ type: 'text', text: `you are ${String(((await me.json()) as { sub: string }).sub)}` }] };
    });
    server.registerTool('ping', { description: 'Answers pong (needs no account)' }, async () => ({
      content: [{ type: 'text', text: 'pong' }],
    }));
  };
  mcpUrl = `${await listen(mcpHandler('account', accountTools))}/mcp`;
  // The integration's own tool server lists and runs its tools only for a connected account (401 without a token).
  const accountOnly = mcpHandler('account-only', accountTools);
  integrationMcpUrl = `${await listen((req, res) => {
    integrationMcpAuth.push(Boolean(req.headers.authorization));
    if (req.headers.authorization) void accountOnly(req, res);
    else res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
  })}/mcp`;
  userDataDir = await mkdtemp(path.join(tmpdir(), 'oauth-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
});
afterAll(async () => {
  await context?.close();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
  for (const s of servers) await new Promise((r) => s.close(r));
});

/** What the issuer's port answers: the provider, once the test has started it. */
let handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, res) => res.writeHead(503).end();

/** Starts the OpenID provider with our OAuth client registered for this callback (an admin registers it per reflex). */
function startProvider(redirectUris: string[]) {
  provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'cortex-test',
        client_secret: CLIENT_SECRET,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    features: { devInteractions: { enabled: true } },
    // Refresh tokens rotate, and a second use of a used one revokes the grant (as strict providers do).
    pkce: { required: () => true },
    ttl: { AccessToken: 3600 },
    issueRefreshToken: async () => true,
    rotateRefreshToken: true,
    scopes: ['openid', 'api'],
  });
  handler = provider.callback();
}

/** Drives the provider's login and consent screens in Chromium; returns the callback URL the browser ended on and its JSON. */
async function consent(redirectUrl: string, login: string) {
  await context.clearCookies(); // a fresh login each time (no session left from an earlier consent)
  const page = await context.newPage();
  await page.goto(redirectUrl);
  if (!(await page.locator('input[name=login]').count()))
    throw new Error(
      `the provider answered: ${(await page.content()).replace(/<style>[\s\S]*?<\/style>/, '').slice(0, 1500)}`,
    );
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any');
  await page.click('button[type=submit]');
  await page.waitForSelector('button[type=submit]');
  await page.click('button[type=submit]');
  await page.waitForURL(/\/callback\?/);
  const url = page.url();
  const body = JSON.parse((await page.textContent('body')) ?? '{}') as Record<string, unknown>;
  await page.close();
  return { url, body };
}

describe('reflex connections over OAuth 2', () => {
  it('connect → consent → callback → connected → tool call with the token → refresh → disconnect; wrong state, replay and open redirect refused', async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const userSub = randomUUID();
    const user = await ws.jwt([], userSub);
    const put = await app.put('/v1/integrations/demo', admin, {
      authorization_endpoint: `${issuer}/auth`,
      token_endpoint: `${issuer}/token`,
      scopes: ['openid', 'api'],
      client_id: 'cortex-test',
      client_secret: CLIENT_SECRET,
      mcp_server_url: integrationMcpUrl,
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({
      integration_id: 'demo',
      has_client_secret: true,
      mcp_server_url: integrationMcpUrl,
    });
    expect(JSON.stringify((await app.get('/v1/integrations', admin)).body)).not.toContain(CLIENT_SECRET);
    expect((await app.put('/v1/integrations/demo2', ws.key.replace(/./g, 'x'), {})).status).toBe(401);
    expect(
      (
        await app.put('/v1/integrations/demo2', await ws.jwt([]), {
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
          client_id: 'x',
        })
      ).status,
    ).toBe(403);

    const reflex = await app.post('/v1/reflexes', ws.key, {
      name: 'account',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      metadata: { server_url: mcpUrl, integration_id: 'demo' },
    });
    expect(reflex.status).toBe(201);
    const reflexId = String(reflex.body.id);
    // A workspace-wide integration on the same provider, used by the end of the test.
    const teamReflex = await app.post('/v1/reflexes', ws.key, {
      name: 'team-account',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      metadata: { server_url: mcpUrl, integration_id: 'team' },
    });
    const teamId = String(teamReflex.body.id);
    startProvider([`${app.url}/v1/reflexes/${reflexId}/callback`, `${app.url}/v1/reflexes/${teamId}/callback`]);
    const neuron = await app.post('/v1/neurons', ws.key, {
      name: 'agent',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/sim' },
    });
    await app.post(`/v1/neurons/${String(neuron.body.id)}/reflexes`, ws.key, { reflex_id: reflexId });
    sim.configure({
      toolCalls: (body) => (body.messages.some((m) => m.role === 'tool') ? null : [{ name: 'whoami', arguments: {} }]),
    });
    // A second neuron uses an integration-backed tool set: the integration's server, only the tool the set names.
    const setReflex = await app.post('/v1/reflexes', ws.key, {
      name: 'account-set',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      tools: [{ integration_id: 'demo', tools: ['whoami'] }],
    });
    expect(setReflex.status, setReflex.text).toBe(201);
    const setNeuron = await app.post('/v1/neurons', ws.key, {
      name: 'set-agent',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/sim' },
    });
    await app.post(`/v1/neurons/${String(setNeuron.body.id)}/reflexes`, ws.key, { reflex_id: setReflex.body.id });
    const offeredFor = (message: string) =>
      (sim.requests.find((r) => r.messages.some((m) => m.content === message))!.tools ?? []) as {
        function: { name: string; description: string };
      }[];

    // Not connected yet: the status says so, and a run tells the model and the stream.
    const before = await app.get(`/v1/reflexes/${reflexId}/connections/check`, user);
    expect(before.body).toMatchObject({
      connected: false,
      integrations: [{ integration_id: 'demo', configured: true, connected: false, action: 'connect' }],
    });
    const unconnected = await app.post(`/v1/neurons/${String(neuron.body.id)}/invoke`, user, { message: 'who am I?' });
    const sse = await readSse(`${app.url}/v1/jobs/${String(unconnected.body.job_id)}/stream`, {
      headers: { authorization: `Bearer ${user}` },
      timeoutMs: 30_000,
    });
    const entries = sse.events.map(dataOf);
    expect(entries.find((e) => e.type === 'connection_required')).toMatchObject({
      integration_id: 'demo',
      connect: { path: `/v1/reflexes/${reflexId}/connect` },
    });
    expect(String(entries.find((e) => e.type === 'tool')?.result)).toContain('not connected');
    // The tool set's server lists nothing without a token: its named tool is offered by name, and a call says "not connected".
    const setUnconnected = await settleJob(
      app,
      ws.key,
      String(
        (await app.post(`/v1/neurons/${String(setNeuron.body.id)}/invoke`, user, { message: 'who am I, by the set?' }))
          .body.job_id,
      ),
    );
    expect(offeredFor('who am I, by the set?').map((t) => t.function.name)).toEqual(['whoami']);
    expect((setUnconnected.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toMatch(
      /not connected.*connect/s,
    );
    const setStream = (
      await readSse(`${app.url}/v1/jobs/${setUnconnected.job_id}/stream`, {
        headers: { authorization: `Bearer ${user}` },
        timeoutMs: 30_000,
      })
    ).events.map(dataOf);
    expect(setStream.find((e) => e.type === 'connection_required')).toMatchObject({
      reflex_id: setReflex.body.id,
      integration_id: 'demo',
      connect: { method: 'POST', path: `/v1/reflexes/${String(setReflex.body.id)}/connect` },
    });
    expect(integrationMcpAuth.length).toBeGreaterThan(0);
    expect(integrationMcpAuth.every((a) => !a)).toBe(true);

    // Open redirect refused; a flow started, answered with a wrong state, refused.
    expect(
      (await app.post(`/v1/reflexes/${reflexId}/connect`, user, { callbackUrl: 'https://evil.example/steal' })).status,
    ).toBe(400);
    const stray = await app.post(`/v1/reflexes/${reflexId}/connections/initiate`, user, {});
    expect(stray.status).toBe(200);
    const wrongState = await app.get(
      `/v1/reflexes/${reflexId}/callback?connectionRequestId=${String(stray.body.connectionRequestId)}&code=abc&state=${String(stray.body.connectionRequestId)}.forged`,
      undefined,
    );
    expect(wrongState.status).toBe(400);
    expect(String(wrongState.body.message)).toMatch(/state/);

    // The real flow, in the browser.
    const start = await app.post(`/v1/reflexes/${reflexId}/connect`, user, {});
    const redirectUrl = new URL(String(start.body.redirectUrl));
    expect(redirectUrl.searchParams.get('redirect_uri')).toBe(`${app.url}/v1/reflexes/${reflexId}/callback`);
    expect(redirectUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(redirectUrl.searchParams.get('state')).toContain(String(start.body.connectionRequestId));
    const { url: callbackUrl, body: done } = await consent(redirectUrl.toString(), 'ada');
    expect(done).toMatchObject({ success: true, connectedAccountId: expect.any(String) });
    // Replaying the callback (same code and state) is refused.
    const replay = await app.get(callbackUrl.replace(app.url, ''), undefined);
    expect(replay.status).toBe(409);
    expect((await app.get(`/v1/reflexes/${reflexId}/connection`, user)).body).toMatchObject({
      connected: true,
      connectedAccountId: done.connectedAccountId,
    });
    const batch = await app.post('/v1/reflexes/connections/batch', user, { reflexIds: [reflexId, randomUUID()] });
    expect(batch.body.connections).toEqual([
      { reflexId, connectedAccountId: done.connectedAccountId, connected: true },
      expect.objectContaining({ connected: false }),
    ]);
    expect(
      (
        await app.post('/v1/reflexes/connections/batch', user, {
          reflexIds: Array.from({ length: 101 }, () => randomUUID()),
        })
      ).status,
    ).toBe(400);
    const checked = await app.post('/v1/reflexes/connections/check-batch', user, {});
    expect(
      (checked.body.statuses as { reflexId: string; status: { connected: boolean } }[]).find(
        (s) => s.reflexId === reflexId,
      )?.status.connected,
    ).toBe(true);

    // Connected: the tool is called with the user's token, which the tool server checks with the provider.
    const run = await settleJob(
      app,
      ws.key,
      String(
        (await app.post(`/v1/neurons/${String(neuron.body.id)}/invoke`, user, { message: 'who am I now?' })).body
          .job_id,
      ),
    );
    expect((run.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toBe('you are ada');
    // The server's two tools were offered: one needs the account, one does not.
    const offered = (sim.requests.find((r) => r.messages.some((m) => m.content === 'who am I now?'))!.tools ?? []) as {
      function: { name: string };
    }[];
    expect(offered.map((t) => t.function.name).sort()).toEqual(['ping', 'whoami']);
    // The tool set, now connected: listed from the integration's server with the token, narrowed to the tool it names, called with the token.
    const setRun = await settleJob(
      app,
      ws.key,
      String(
        (
          await app.post(`/v1/neurons/${String(setNeuron.body.id)}/invoke`, user, {
            message: 'who am I now, by the set?',
          })
        ).body.job_id,
      ),
    );
    expect((setRun.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toBe('you are ada');
    expect(offeredFor('who am I now, by the set?').map((t) => [t.function.name, t.function.description])).toEqual([
      ['whoami', 'Says which account the call is made for'],
    ]);
    expect((await app.get(`/v1/reflexes/${String(setReflex.body.id)}/connections/check`, user)).body).toMatchObject({
      connected: true,
      integrations: [{ integration_id: 'demo', connected: true, action: 'none' }],
    });
    // Another user of the workspace has no connection of their own.
    expect((await app.get(`/v1/reflexes/${reflexId}/connection`, await ws.jwt([]))).body).toMatchObject({
      connected: false,
    });

    // Refresh: the stored token is about to expire, so the next call refreshes it first.
    const conn = app.deps.db.collection('connections');
    const sealedBefore = (await conn.findOne({ _id: done.connectedAccountId as never }))!.accessSealed as string;
    await conn.updateOne(
      { _id: done.connectedAccountId as never },
      { $set: { expiresAt: new Date(Date.now() + 10_000) } },
    );
    const again = await settleJob(
      app,
      ws.key,
      String(
        (await app.post(`/v1/neurons/${String(neuron.body.id)}/invoke`, user, { message: 'and now?' })).body.job_id,
      ),
    );
    expect((again.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toBe('you are ada');
    const after = (await conn.findOne({ _id: done.connectedAccountId as never }))!;
    expect(after.accessSealed).not.toBe(sealedBefore);
    expect(after.refreshedAt).toBeInstanceOf(Date);
    expect(new Set(seenTokens).size).toBeGreaterThanOrEqual(2);

    // Many callers find the token about to expire at once: one refresh, and all get the new token (a second
    // refresh with the rotated token would make the provider revoke the grant, and the next call would fail).
    await conn.updateOne(
      { _id: done.connectedAccountId as never },
      { $set: { expiresAt: new Date(Date.now() + 10_000) } },
    );
    const sealedThen = (await conn.findOne({ _id: done.connectedAccountId as never }))!.accessSealed as string;
    const tokens = await Promise.all(
      Array.from({ length: 5 }, () =>
        app.services.connections.tokenFor({ workspaceId: ws.workspaceId, userId: userSub, apiKeyId: null }, 'demo'),
      ),
    );
    expect(tokens[0]).toEqual(expect.any(String));
    expect(new Set(tokens).size).toBe(1);
    expect((await conn.findOne({ _id: done.connectedAccountId as never }))!.accessSealed).not.toBe(sealedThen);
    const thereafter = await settleJob(
      app,
      ws.key,
      String(
        (await app.post(`/v1/neurons/${String(neuron.body.id)}/invoke`, user, { message: 'and after the rush?' })).body
          .job_id,
      ),
    );
    expect((thereafter.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toBe('you are ada');
    expect(await app.deps.db.collection('connection_refreshes').countDocuments({})).toBe(0);

    // At rest, nothing readable: no token, no secret, no verifier in any of the collections.
    const dump = JSON.stringify(
      await Promise.all(
        ['connections', 'connection_requests', 'integrations'].map((c) => app.deps.db.collection(c).find({}).toArray()),
      ),
    );
    for (const secret of [...seenTokens, CLIENT_SECRET]) expect(dump).not.toContain(secret);
    expect(dump).toContain('v1.');

    expect((await app.del(`/v1/reflexes/${reflexId}/connection`, user)).status).toBe(200);
    expect((await app.get(`/v1/reflexes/${reflexId}/connection`, user)).body).toMatchObject({
      connected: false,
      connectedAccountId: null,
    });
    expect((await app.del(`/v1/reflexes/${reflexId}/connection`, user)).status).toBe(404);

    // A workspace-wide integration: one account, connected and removed by an admin, used by every member.
    expect(
      (
        await app.put('/v1/integrations/team', admin, {
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
          scopes: ['openid', 'api'],
          client_id: 'cortex-test',
          client_secret: CLIENT_SECRET,
          per: 'workspace',
        })
      ).status,
    ).toBe(200);
    expect((await app.post(`/v1/reflexes/${teamId}/connect`, user, {})).status).toBe(403);
    const teamStart = await app.post(`/v1/reflexes/${teamId}/connect`, admin, {});
    expect(teamStart.status, teamStart.text).toBe(200);
    expect((await consent(String(teamStart.body.redirectUrl), 'team-account')).body).toMatchObject({ success: true });
    const member = await ws.jwt([]);
    expect((await app.get(`/v1/reflexes/${teamId}/connections/check`, member)).body).toMatchObject({
      connected: true,
      integrations: [{ integration_id: 'team', per: 'workspace', connected: true }],
    });
    const teamNeuron = await app.post('/v1/neurons', ws.key, {
      name: 'team-agent',
      brain_id: ws.brainId,
      neuron_config: { model: 'openai/sim' },
    });
    await app.post(`/v1/neurons/${String(teamNeuron.body.id)}/reflexes`, ws.key, { reflex_id: teamId });
    const teamRun = await settleJob(
      app,
      ws.key,
      String(
        (await app.post(`/v1/neurons/${String(teamNeuron.body.id)}/invoke`, member, { message: 'who are we?' })).body
          .job_id,
      ),
    );
    expect((teamRun.result as { toolCalls: { result: string }[] }).toolCalls[0].result).toBe('you are team-account');
    expect((await app.del(`/v1/reflexes/${teamId}/connection`, member)).status).toBe(403);
    expect((await app.get(`/v1/reflexes/${teamId}/connection`, member)).body).toMatchObject({ connected: true });
    expect((await app.del(`/v1/reflexes/${teamId}/connection`, admin)).status).toBe(200);
    expect((await app.get(`/v1/reflexes/${teamId}/connection`, member)).body).toMatchObject({ connected: false });
  }, 120_000);
});
