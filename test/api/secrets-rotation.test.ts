import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/crypto/secrets.js';
import {
  createConnectionRepo,
  type ConnectionDoc,
  type ConnectionRequestDoc,
  type IntegrationDoc,
} from '../../src/connections/index.js';
import { resealSecrets } from '../../src/connections/index.js';
import { buildWorkspace, startTestApp, type TestApp } from '../support/app.js';

/**
 * Key rotation end to end on the real database: values sealed under k1 (through the routes, and a
 * stored connection), `npm run secrets:reseal` with k2 current and k1 old, then everything opens
 * with k2 alone and nothing stored is readable.
 */
const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const k1 = key('k1');
const k2 = key('k2');
let app: TestApp & { close(): Promise<void> };
beforeAll(async () => {
  app = await startTestApp({ SECRETS_KEY: k1, OAUTH_CALLBACK_ALLOW: [] });
});
afterAll(async () => {
  await app?.close();
});

describe('secrets key rotation', () => {
  it('re-seals integration secrets, connection tokens and pending verifiers under the new key; the old key can then go', async () => {
    const ws = await buildWorkspace(app);
    const clientSecret = `client-secret-${randomUUID()}`;
    const put = await app.put('/v1/integrations/rotating', await ws.jwt(['workspace_admin']), {
      authorization_endpoint: 'https://id.example/auth',
      token_endpoint: 'https://id.example/token',
      client_id: 'c',
      client_secret: clientSecret,
    });
    expect(put.status, put.text).toBe(200);
    const reflex = await app.post('/v1/reflexes', ws.key, {
      name: 'rotating',
      type: 'effector',
      scope: 'brain',
      brain_id: ws.brainId,
      tools: [{ integration_id: 'rotating', tools: [] }],
    });
    const userId = randomUUID();
    const user = await ws.jwt([], userId);
    const pending = await app.post(`/v1/reflexes/${String(reflex.body.id)}/connect`, user, {});
    expect(pending.status, pending.text).toBe(200);
    // A workspace secret (an HTTP node's token), sealed under k1 by the API.
    const token = `token-${randomUUID()}`;
    const secretPut = await app.put('/v1/secrets/ROTATING_TOKEN', await ws.jwt(['workspace_admin']), { value: token });
    expect(secretPut.status, secretPut.text).toBe(200);
    const repo = createConnectionRepo(app.deps.db);
    const integrations = app.deps.db.collection<IntegrationDoc>('integrations');
    const connections = app.deps.db.collection<ConnectionDoc>('connections');
    const requests = app.deps.db.collection<ConnectionRequestDoc>('connection_requests');
    // A connection stored under k1 (as the callback stores one), and a connect request that has expired.
    const old = createSecretBox({ SECRETS_KEY: k1, SECRETS_KEYS_OLD: [], JWT_SECRET: app.config.JWT_SECRET });
    const access = `access-${randomUUID()}`;
    const refresh = `refresh-${randomUUID()}`;
    const now = new Date();
    await connections.insertOne({
      _id: randomUUID(),
      workspaceId: ws.workspaceId,
      integrationId: 'rotating',
      ownerId: userId,
      accessSealed: old.seal(access),
      refreshSealed: old.seal(refresh),
      expiresAt: new Date(Date.now() + 3600_000),
      scope: null,
      keyId: 'k1',
      createdAt: now,
      refreshedAt: null,
      updatedAt: now,
    });
    await requests.insertOne({
      _id: randomUUID(),
      workspaceId: ws.workspaceId,
      reflexId: String(reflex.body.id),
      integrationId: 'rotating',
      userId,
      stateHash: 'x',
      verifierSealed: old.seal('v'),
      redirectUri: 'https://x',
      callbackUrl: null,
      createdAt: new Date(0),
      expiresAt: new Date(1000),
      usedAt: null,
    });

    // The script, as an operator runs it: k2 current, k1 still readable.
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/reseal-secrets.ts'], {
      cwd: root,
      env: {
        ...process.env,
        MONGODB_URI: app.config.MONGODB_URI,
        MONGODB_DB: app.config.MONGODB_DB,
        SECRETS_KEY: k2,
        SECRETS_KEYS_OLD: k1,
        JWT_SECRET: app.config.JWT_SECRET,
      },
    });
    expect(stdout).toMatch(
      /re-sealed under key k2: 1 integration secret\(s\), 1 connection\(s\), 1 pending connect request\(s\), 1 workspace secret\(s\); 1 expired request\(s\) deleted/,
    );

    // k2 alone opens everything; nothing is under k1 any more; a second run has nothing to do.
    const next = createSecretBox({ SECRETS_KEY: k2, SECRETS_KEYS_OLD: [], JWT_SECRET: app.config.JWT_SECRET });
    const integration = (await integrations.findOne({ workspaceId: ws.workspaceId, integrationId: 'rotating' }))!;
    expect(next.open(integration.clientSecretSealed!)).toBe(clientSecret);
    const conn = (await connections.findOne({ workspaceId: ws.workspaceId, ownerId: userId }))!;
    expect([next.open(conn.accessSealed), next.open(conn.refreshSealed!), conn.keyId]).toEqual([access, refresh, 'k2']);
    const left = await requests.find({ workspaceId: ws.workspaceId }).toArray();
    expect(left.map((r) => r._id)).toEqual([String(pending.body.connectionRequestId)]);
    expect(next.keyOf(left[0].verifierSealed)).toBe('k2');
    const dump = JSON.stringify(
      await Promise.all(
        ['integrations', 'connections', 'connection_requests', 'workspace_secrets'].map((c) =>
          app.deps.db.collection(c).find({}).toArray(),
        ),
      ),
    );
    const secret = (await app.deps.db.collection('workspace_secrets').findOne({ workspaceId: ws.workspaceId }))!;
    expect([next.open(String(secret.sealed)), secret.keyId]).toEqual([token, 'k2']);
    for (const plain of [clientSecret, access, refresh, token]) expect(dump).not.toContain(plain);
    expect(dump).not.toContain('v1.k1.');
    expect(await resealSecrets(repo, next)).toEqual({
      integrations: 0,
      connections: 0,
      requests: 0,
      expiredRequests: 0,
    });
  });
});
