/**
 * The workspace secret repository (src/secrets/store.mongo.ts): one secret per (workspace, name), replaced
 * in place keeping its creation; the sealed value never in what lists return; policies with their
 * defaults; every operation scoped to the workspace; key rotation re-seals what is under another key.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { SecretStore as SecretRepo } from '../../src/secrets/store.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

const admins = { allowedHosts: null, usableBy: 'admins' as const };

describe.each(h.backends)('secret repository (%s)', (backend) => {
  const repo: SecretRepo = h.repos(backend).secrets;

  it('creates then replaces a secret by name, keeping its creator and creation time', async () => {
    const ws = randomUUID();
    const first = await repo.put(ws, 'API_TOKEN', { sealed: 'v1.k1.a', keyId: 'k1', by: 'alice', policy: admins });
    expect(first.created).toBe(true);
    expect(first.secret).toMatchObject({ workspaceId: ws, name: 'API_TOKEN', keyId: 'k1', createdBy: 'alice' });
    expect(first.secret).not.toHaveProperty('sealed');
    expect(first.secret).not.toHaveProperty('_id');
    await new Promise((r) => setTimeout(r, 5));
    const second = await repo.put(ws, 'API_TOKEN', {
      sealed: 'v1.k1.b',
      keyId: 'k1',
      by: 'bob',
      policy: { allowedHosts: ['api.example.com', '*.example.org'], usableBy: 'editors' },
    });
    expect(second.created).toBe(false);
    expect(second.secret.createdBy).toBe('alice');
    expect(second.secret.createdAt).toEqual(first.secret.createdAt);
    expect(second.secret.updatedAt.getTime()).toBeGreaterThan(first.secret.updatedAt.getTime());
    expect((await repo.sealedValues(ws, ['API_TOKEN'])).get('API_TOKEN')).toBe('v1.k1.b');
    expect((await repo.policies(ws, ['API_TOKEN'])).get('API_TOKEN')).toEqual({
      allowedHosts: ['api.example.com', '*.example.org'],
      usableBy: 'editors',
    });
  });

  it('two concurrent first puts of one name leave one secret', async () => {
    const ws = randomUUID();
    const outs = await Promise.all(
      ['a', 'b', 'c'].map((v) => repo.put(ws, 'RACE', { sealed: v, keyId: 'k1', by: null, policy: admins })),
    );
    expect(outs.filter((o) => o.created).length).toBeGreaterThanOrEqual(1);
    expect((await repo.list(ws)).map((s) => s.name)).toEqual(['RACE']);
  });

  it('lists by name without sealed values, reads and removes only within the workspace', async () => {
    const ws = randomUUID();
    const other = randomUUID();
    for (const n of ['ZED', 'ALPHA', 'MID'])
      await repo.put(ws, n, { sealed: `s-${n}`, keyId: 'k1', by: null, policy: admins });
    await repo.put(other, 'ALPHA', { sealed: 'theirs', keyId: 'k1', by: null, policy: admins });
    const list = await repo.list(ws);
    expect(list.map((s) => s.name)).toEqual(['ALPHA', 'MID', 'ZED']);
    expect(list.some((s) => 'sealed' in s)).toBe(false);
    const sealed = await repo.sealedValues(ws, ['ALPHA', 'ALPHA', 'NOPE']);
    expect([...sealed]).toEqual([['ALPHA', 's-ALPHA']]);
    expect((await repo.sealedValues(other, ['ALPHA', 'MID'])).get('ALPHA')).toBe('theirs');
    expect((await repo.sealedValues(randomUUID(), ['ALPHA'])).size).toBe(0);

    expect(await repo.remove(randomUUID(), 'ALPHA')).toBe(false);
    expect(await repo.remove(ws, 'ALPHA')).toBe(true);
    expect(await repo.remove(ws, 'ALPHA')).toBe(false);
    expect((await repo.list(ws)).map((s) => s.name)).toEqual(['MID', 'ZED']);
    expect((await repo.list(other)).map((s) => s.name)).toEqual(['ALPHA']);
  });

  it('a secret stored before policies reads as admins-only, any host', async () => {
    const ws = randomUUID();
    await repo.put(ws, 'OLD', { sealed: 's', keyId: 'k1', by: null, policy: admins });
    await h.db
      .collection('workspace_secrets')
      .updateOne({ workspaceId: ws, name: 'OLD' }, { $unset: { allowedHosts: '', usableBy: '' } });
    expect(await repo.policies(ws, ['OLD', 'MISSING'])).toEqual(new Map([['OLD', admins]]));
  });

  it('re-seals every secret not under the current key', async () => {
    const ws = randomUUID();
    await repo.put(ws, 'A', { sealed: 'v1.old.a', keyId: 'old', by: null, policy: admins });
    await repo.put(ws, 'B', { sealed: 'v1.cur.b', keyId: 'cur', by: null, policy: admins });
    expect(await repo.resealAll('cur', (s) => s.replace('.old.', '.cur.'))).toBeGreaterThanOrEqual(1);
    expect(Object.fromEntries(await repo.sealedValues(ws, ['A', 'B']))).toEqual({ A: 'v1.cur.a', B: 'v1.cur.b' });
    expect((await repo.list(ws)).map((s) => s.keyId)).toEqual(['cur', 'cur']);
    expect(await repo.resealAll('cur', (s) => `${s}!`)).toBe(0);
  });
});
