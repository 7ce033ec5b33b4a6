/**
 * The workspace repository (src/platform/workspaces.mongo.ts): workspaces with unique slugs (a taken one falls
 * back to a suffixed slug), brains scoped to their workspace, API keys by hash (live and revoked),
 * paged newest first, their limits set only within their workspace.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { ApiKeyDoc, WorkspaceRepo } from '../../src/platform/index.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

const slug = () => `ws-${randomUUID().slice(0, 8)}`;

function key(workspaceId: string, o: Partial<ApiKeyDoc> = {}): ApiKeyDoc {
  return {
    _id: randomUUID(),
    workspaceId,
    name: 'ci',
    hash: randomUUID(),
    prefix: 'ctx_abc',
    roles: ['admin'],
    createdBy: null,
    createdAt: new Date(),
    lastUsedAt: null,
    revokedAt: null,
    ...o,
  };
}

describe.each(h.backends)('workspace repository (%s)', (backend) => {
  const repo: WorkspaceRepo = h.repos(backend).workspaces;

  it('ensures a workspace once, found by id or slug; a taken slug gets the id suffix, then the id', async () => {
    const s = slug();
    const a = randomUUID();
    const first = await repo.ensureWorkspace(a, s, 'A');
    expect(first).toMatchObject({ _id: a, slug: s, name: 'A' });
    expect(first?.createdAt).toBeInstanceOf(Date);
    // Idempotent: the same id keeps its stored slug and name; mayCreate is not asked.
    expect(await repo.ensureWorkspace(a, 'other', 'B', () => Promise.reject(new Error('asked')))).toMatchObject({
      slug: s,
      name: 'A',
    });
    expect((await repo.findWorkspace(s))?._id).toBe(a);
    expect((await repo.findWorkspace(a))?.slug).toBe(s);
    expect(await repo.findWorkspace(slug())).toBeNull();

    const b = randomUUID();
    expect((await repo.ensureWorkspace(b, s, 'B'))?.slug).toBe(`${s}-${b.slice(0, 8)}`);
    const c = randomUUID();
    await repo.ensureWorkspace(`${c.slice(0, 8)}-x`, `${s}-${c.slice(0, 8)}`, 'squatter');
    expect((await repo.ensureWorkspace(c, s, 'C'))?.slug).toBe(c);
    expect(await repo.workspaceIds()).toEqual(expect.arrayContaining([a, b, c]));
  });

  it('refuses to create a workspace mayCreate forbids', async () => {
    const id = randomUUID();
    expect(await repo.ensureWorkspace(id, slug(), 'gone', async () => false)).toBeNull();
    expect(await repo.findWorkspace(id)).toBeNull();
  });

  it('two concurrent first ensures of one workspace both answer the one stored', async () => {
    const id = randomUUID();
    const s = slug();
    const [x, y] = await Promise.all([repo.ensureWorkspace(id, s, 'X'), repo.ensureWorkspace(id, s, 'X')]);
    expect(x?.slug).toBe(s);
    expect(y?.slug).toBe(s);
  });

  it('renames a workspace; slugTaken sees other workspaces only', async () => {
    const id = randomUUID();
    const other = randomUUID();
    const s = slug();
    await repo.ensureWorkspace(id, s, 'old');
    await repo.ensureWorkspace(other, slug(), 'other');
    expect(await repo.slugTaken(s, id)).toBe(false);
    expect(await repo.slugTaken(s, other)).toBe(true);
    const s2 = slug();
    const at = new Date('2026-03-04T05:06:07.089Z');
    expect(await repo.updateWorkspace(id, { slug: s2, name: 'new', updatedAt: at })).toMatchObject({
      slug: s2,
      name: 'new',
      updatedAt: at,
    });
    expect(await repo.findWorkspace(s)).toBeNull();
    expect(await repo.updateWorkspace(randomUUID(), { name: 'x' })).toBeNull();
  });

  it('ensures brains once, scoped to their workspace, listed oldest first', async () => {
    const ws = randomUUID();
    const b1 = randomUUID();
    const b2 = randomUUID();
    expect(await repo.ensureBrain(ws, b1, 'first')).toMatchObject({ _id: b1, workspaceId: ws, name: 'first' });
    expect(await repo.ensureBrain(ws, b1, 'renamed')).toMatchObject({ name: 'first' });
    await new Promise((r) => setTimeout(r, 5));
    await repo.ensureBrain(ws, b2, 'second');
    expect((await repo.findBrain(ws, b1))?.name).toBe('first');
    expect(await repo.findBrain(randomUUID(), b1)).toBeNull();
    expect((await repo.brainById(b1))?.workspaceId).toBe(ws);
    expect((await repo.brainsOf(ws)).map((b) => b._id)).toEqual([b1, b2]);
    expect((await repo.brainsOf(ws, 1)).map((b) => b._id)).toEqual([b1]);
    expect(await repo.brainsOf(randomUUID())).toEqual([]);
  });

  it('stores API keys: by hash (live only for authentication), scoped reads, touch, revoke', async () => {
    const ws = randomUUID();
    const k = key(ws, { rateLimit: { points: 5, durationS: 60 } });
    await repo.insertKey(k);
    await expect(repo.insertKey({ ...key(ws), hash: k.hash })).rejects.toThrow();
    expect(await repo.liveKeyByHash(k.hash)).toMatchObject({ _id: k._id, roles: ['admin'], rateLimit: k.rateLimit });
    expect((await repo.findLiveKey(ws, k._id))?.hash).toBe(k.hash);
    expect(await repo.findLiveKey(randomUUID(), k._id)).toBeNull();

    const at = new Date('2026-01-02T03:04:05.006Z');
    await repo.touchKey(k._id, at);
    expect((await repo.findLiveKey(ws, k._id))?.lastUsedAt).toEqual(at);

    await repo.revokeKey(randomUUID(), k._id);
    expect(await repo.liveKeyByHash(k.hash)).not.toBeNull();
    await repo.revokeKey(ws, k._id);
    expect(await repo.liveKeyByHash(k.hash)).toBeNull();
    expect(await repo.findLiveKey(ws, k._id)).toBeNull();
    expect((await repo.keyByHash(k.hash))?.revokedAt).toBeInstanceOf(Date);
  });

  it("sets a live key's limit only in its workspace; clears it with null", async () => {
    const ws = randomUUID();
    const k = key(ws);
    await repo.insertKey(k);
    expect(await repo.setKeyRateLimit(randomUUID(), k._id, { points: 1, durationS: 1 })).toBeNull();
    expect((await repo.setKeyRateLimit(ws, k._id, { points: 9, durationS: 30 }))?.rateLimit).toEqual({
      points: 9,
      durationS: 30,
    });
    expect((await repo.setKeyRateLimit(ws, k._id, null))?.rateLimit).toBeNull();
    await repo.revokeKey(ws, k._id);
    expect(await repo.setKeyRateLimit(ws, k._id, { points: 1, durationS: 1 })).toBeNull();
  });

  it('ensureKey creates the key of a hash once (a second call changes nothing)', async () => {
    const ws = randomUUID();
    const { hash, ...rest } = key(ws, { name: 'bootstrap' });
    await repo.ensureKey(hash, rest);
    await repo.ensureKey(hash, { ...rest, _id: randomUUID(), name: 'again' });
    expect(await repo.keyByHash(hash)).toMatchObject({ _id: rest._id, name: 'bootstrap' });
  });

  it("pages the workspace's live keys newest first by cursor, optionally one creator's", async () => {
    const ws = randomUUID();
    const t = Date.now();
    const keys = [0, 1, 2, 3].map((i) =>
      key(ws, { createdAt: new Date(t + i * 1000), createdBy: i % 2 ? 'u1' : 'u2' }),
    );
    for (const k of keys) await repo.insertKey(k);
    await repo.insertKey(key(randomUUID()));
    await repo.revokeKey(ws, keys[3]._id);
    const p1 = await repo.pageKeys(ws, {}, { limit: 2 });
    expect(p1.items.map((k) => k._id)).toEqual([keys[2]._id, keys[1]._id]);
    expect(p1.hasMore).toBe(true);
    const p2 = await repo.pageKeys(ws, {}, { limit: 2, cursor: p1.nextCursor! });
    expect(p2.items.map((k) => k._id)).toEqual([keys[0]._id]);
    expect(p2.hasMore).toBe(false);
    expect((await repo.pageKeys(ws, { createdBy: 'u1' }, { limit: 10 })).items.map((k) => k._id)).toEqual([
      keys[1]._id,
    ]);
    expect((await repo.pageKeys(ws, {}, { limit: 10 })).total).toBe(3);
  });
});
