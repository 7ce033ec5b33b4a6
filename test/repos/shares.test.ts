/**
 * The share link repository (src/shares/store.mongo.ts): one live link per receptor and per token
 * hash (claims by unique insert), found by hash for the public page, changed and removed only
 * within its workspace; uploads scoped to their link.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { ShareRepo, ShareTokenDoc, ShareUploadDoc } from '../../src/shares/index.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function link(workspaceId: string, receptorId: string, o: Partial<ShareTokenDoc> = {}): ShareTokenDoc {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    receptorId,
    tokenHash: randomUUID(),
    prefix: 'shr_abc',
    allowFiles: false,
    customization: { title: 'Ask us', colors: { primary: '#1f6feb' } },
    expiresAt: new Date('2027-01-01T00:00:00.000Z'),
    budget: { maxRequests: 10 },
    createdBy: null,
    createdAt: now,
    rotatedAt: null,
    updatedAt: now,
    ...o,
  };
}

function upload(l: ShareTokenDoc, o: Partial<ShareUploadDoc> = {}): ShareUploadDoc {
  return {
    _id: randomUUID(),
    workspaceId: l.workspaceId,
    receptorId: l.receptorId,
    shareTokenId: l._id,
    name: 'a.txt',
    contentType: 'text/plain',
    size: 3,
    data: Buffer.from([0, 1, 255]),
    createdAt: new Date(),
    ...o,
  };
}

describe.each(h.backends)('share link repository (%s)', (backend) => {
  const repo: ShareRepo = h.repos(backend).shares;

  it('creates one link per receptor and per hash; reads it by receptor (scoped) and by hash', async () => {
    const ws = randomUUID();
    const receptor = randomUUID();
    const l = link(ws, receptor);
    expect(await repo.create(l)).toBe(true);
    expect(await repo.create(link(ws, receptor))).toBe(false);
    expect(await repo.create(link(ws, randomUUID(), { tokenHash: l.tokenHash }))).toBe(false);
    expect(await repo.forReceptor(ws, receptor)).toMatchObject({
      _id: l._id,
      customization: l.customization,
      expiresAt: l.expiresAt,
      budget: { maxRequests: 10 },
    });
    expect(await repo.forReceptor(randomUUID(), receptor)).toBeNull();
    expect((await repo.byHash(l.tokenHash))?._id).toBe(l._id);
    expect(await repo.byHash(randomUUID())).toBeNull();
    expect(await repo.exists(ws, l._id)).toBe(true);
    expect(await repo.exists(randomUUID(), l._id)).toBe(false);
  });

  it('of two concurrent creations for one receptor exactly one wins', async () => {
    const ws = randomUUID();
    const receptor = randomUUID();
    const outs = await Promise.all([0, 1, 2].map(() => repo.create(link(ws, receptor))));
    expect(outs.filter(Boolean)).toHaveLength(1);
  });

  it('rotates a link in place (same id, new hash) only within its workspace; removes it', async () => {
    const ws = randomUUID();
    const receptor = randomUUID();
    const l = link(ws, receptor);
    await repo.create(l);
    const newHash = randomUUID();
    await repo.update(randomUUID(), l._id, { tokenHash: 'stolen' });
    expect(await repo.byHash('stolen')).toBeNull();
    const at = new Date('2026-05-06T07:08:09.010Z');
    await repo.update(ws, l._id, { tokenHash: newHash, rotatedAt: at, allowFiles: true });
    expect(await repo.byHash(l.tokenHash)).toBeNull();
    expect(await repo.byHash(newHash)).toMatchObject({ _id: l._id, rotatedAt: at, allowFiles: true });

    expect(await repo.removeForReceptor(randomUUID(), receptor)).toBe(false);
    expect(await repo.removeForReceptor(ws, receptor)).toBe(true);
    expect(await repo.removeForReceptor(ws, receptor)).toBe(false);
    expect(await repo.forReceptor(ws, receptor)).toBeNull();
    expect(await repo.create(link(ws, receptor))).toBe(true);
  });

  it("returns uploads of this link only: another link's or workspace's are not its", async () => {
    const ws = randomUUID();
    const receptor = randomUUID();
    const l = link(ws, receptor);
    await repo.create(l);
    const mine = upload(l);
    const otherLink = upload(l, { shareTokenId: randomUUID() });
    const otherWs = upload(l, { workspaceId: randomUUID() });
    for (const u of [mine, otherLink, otherWs]) await repo.addUpload(u);
    const got = await repo.uploadsOf(ws, l._id, [mine._id, otherLink._id, otherWs._id, randomUUID()]);
    expect(got.map((u) => u._id)).toEqual([mine._id]);
    expect(Buffer.from(got[0].data.buffer ?? got[0].data)).toEqual(Buffer.from([0, 1, 255]));
    expect(await repo.uploadsOf(ws, l._id, [])).toEqual([]);
  });
});
