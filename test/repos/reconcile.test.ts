/**
 * The reconcile store (src/reconcile/store.mongo.ts): the jobs that have not ended, oldest first per
 * workspace and state, those waiting in a queue left out, bounded by the limit; stored jobs by id.
 * It reads every workspace of the store, so this file's database holds only what it seeds.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createReconcileStore } from '../../src/reconcile/store.mongo.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

interface Seed {
  _id: string;
  workspaceId: string;
  status: string;
  createdAt: Date;
  receptorId?: string | null;
  queued?: boolean;
  finishedAt?: Date | null;
}

describe('reconcile store', () => {
  const store = createReconcileStore(h.db);
  const jobs = h.db.collection<Seed>('jobs');
  const t = Date.now();
  const at = (s: number) => new Date(t + s * 1000);
  const w1 = randomUUID();
  const w2 = randomUUID();
  const seeds: Seed[] = [
    { _id: 'w1-run-late', workspaceId: w1, status: 'running', createdAt: at(5), receptorId: 'r1' },
    { _id: 'w1-run-early', workspaceId: w1, status: 'running', createdAt: at(1) },
    { _id: 'w1-pending', workspaceId: w1, status: 'pending', createdAt: at(3) },
    { _id: 'w1-queued', workspaceId: w1, status: 'pending', createdAt: at(0), queued: true },
    { _id: 'w1-paused', workspaceId: w1, status: 'paused', createdAt: at(2) },
    { _id: 'w1-done', workspaceId: w1, status: 'completed', createdAt: at(0), finishedAt: at(9) },
    { _id: 'w1-failed', workspaceId: w1, status: 'failed', createdAt: at(0), finishedAt: at(8) },
    { _id: 'w2-waiting', workspaceId: w2, status: 'waiting', createdAt: at(4) },
  ];

  it('lists the open jobs, per workspace by state oldest first, leaving out queued and ended ones', async () => {
    await h.db.collection<{ _id: string }>('workspaces').insertMany([{ _id: w1 }, { _id: w2 }]);
    await jobs.insertMany(seeds);
    const open = await store.openJobs(100);
    const byWs = (ws: string) => open.filter((j) => j.workspaceId === ws).map((j) => j.id);
    expect(byWs(w1)).toEqual(['w1-pending', 'w1-run-early', 'w1-run-late', 'w1-paused']);
    expect(byWs(w2)).toEqual(['w2-waiting']);
    expect(open).toHaveLength(5);
    expect(open.find((j) => j.id === 'w1-run-late')).toEqual({
      id: 'w1-run-late',
      workspaceId: w1,
      status: 'running',
      receptorId: 'r1',
      createdAt: at(5),
    });
    expect(open.find((j) => j.id === 'w1-pending')?.receptorId).toBeNull();
  });

  it('stops at the limit', async () => {
    expect(await store.openJobs(2)).toHaveLength(2);
    expect(await store.openJobs(0)).toEqual([]);
  });

  it('reads the stored jobs among ids, whatever their workspace', async () => {
    const found = await store.jobsByIds(['w1-done', 'w2-waiting', 'nope']);
    expect([...found.keys()].sort()).toEqual(['w1-done', 'w2-waiting']);
    expect(found.get('w1-done')).toEqual({ workspaceId: w1, status: 'completed', finishedAt: at(9) });
    expect((await store.jobsByIds([])).size).toBe(0);
  });
});
