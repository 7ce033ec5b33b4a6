/** The connection repository (src/connections/store.mongo.ts): integrations and connections by workspace, single-use requests, one refresh at a time. */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { ConnectionDoc, ConnectionRepo, IntegrationDoc } from '../../src/connections/index.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function integration(workspaceId: string, integrationId: string): IntegrationDoc {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    integrationId,
    name: integrationId,
    authorizationEndpoint: 'https://idp.example/authorize',
    tokenEndpoint: 'https://idp.example/token',
    scopes: ['read'],
    clientId: 'client',
    clientSecretSealed: 'sealed-1',
    clientSecretEnv: null,
    per: 'user',
    createdAt: now,
    updatedAt: now,
  };
}

function connection(workspaceId: string, integrationId: string, ownerId: string): ConnectionDoc {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    integrationId,
    ownerId,
    accessSealed: 'access-1',
    refreshSealed: null,
    expiresAt: null,
    scope: null,
    keyId: 'k1',
    createdAt: now,
    refreshedAt: null,
    updatedAt: now,
  };
}

describe.each(h.backends)('connection repository (%s)', (backend) => {
  const repo: ConnectionRepo = h.repos(backend).connections;
  const ws = randomUUID();

  it('puts, lists and removes integrations (with their connections) in their workspace', async () => {
    const mail = integration(ws, 'a-mail');
    await repo.putIntegration(integration(ws, 'b-crm'));
    await repo.putIntegration(mail);
    await repo.putIntegration({ ...mail, name: 'Mail' }); // replaced, not added
    expect((await repo.listIntegrations(ws)).map((i) => [i.integrationId, i.name])).toEqual([
      ['a-mail', 'Mail'],
      ['b-crm', 'b-crm'],
    ]);
    expect(await repo.integration(randomUUID(), 'a-mail')).toBeNull();
    const c = connection(ws, 'a-mail', 'u1');
    await repo.putConnection(c);
    await repo.putConnection({ ...c, accessSealed: 'access-2' });
    expect((await repo.connection(ws, 'a-mail', 'u1'))?.accessSealed).toBe('access-2');
    expect(await repo.connection(randomUUID(), 'a-mail', 'u1')).toBeNull();
    expect(await repo.removeIntegration(randomUUID(), 'a-mail')).toBe(false);
    expect(await repo.removeIntegration(ws, 'a-mail')).toBe(true);
    expect(await repo.connection(ws, 'a-mail', 'u1')).toBeNull();
    await repo.putConnection(connection(ws, 'b-crm', 'u1'));
    expect(await repo.removeConnection(ws, 'b-crm', 'u2')).toBe(false);
    expect(await repo.removeConnection(ws, 'b-crm', 'u1')).toBe(true);
  });

  it('uses a connect request once: of two concurrent uses exactly one wins', async () => {
    const id = randomUUID();
    const now = new Date();
    await repo.createRequest({
      _id: id,
      workspaceId: ws,
      reflexId: 'r1',
      integrationId: 'a-mail',
      userId: 'u1',
      stateHash: 'h',
      verifierSealed: 'v',
      redirectUri: 'https://x',
      callbackUrl: null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + 60_000),
      usedAt: null,
    });
    expect(await repo.findRequest(id, 'other-reflex')).toBeNull();
    expect((await Promise.all([repo.useRequest(id), repo.useRequest(id)])).sort()).toEqual([false, true]);
    expect((await repo.findRequest(id, 'r1'))?.usedAt).toBeInstanceOf(Date);
  });

  it('runs one refresh at a time: of two concurrent refreshes exactly one holds, and the key is free after', async () => {
    const key = `c1:${randomUUID()}`;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = repo.refreshOnce(key, 30_000, async () => {
      await gate;
      return 'refreshed';
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(await repo.refreshOnce(key, 30_000, async () => 'second')).toEqual({ held: false });
    release();
    expect(await first).toEqual({ held: true, value: 'refreshed' });
    expect(await repo.refreshOnce(key, 30_000, async () => 'again')).toEqual({ held: true, value: 'again' });
  });

  it('reseals a value only while it is the one read', async () => {
    const i = integration(ws, `seal-${randomUUID().slice(0, 8)}`);
    await repo.putIntegration(i);
    expect(await repo.resealIntegration(i._id, 'not-current', 'sealed-2')).toBe(false);
    expect(await repo.resealIntegration(i._id, 'sealed-1', 'sealed-2')).toBe(true);
    expect((await repo.integration(ws, i.integrationId))?.clientSecretSealed).toBe('sealed-2');
  });
});
