/** The pathway trail repository (src/pathways/trails.mongo.ts): one trail per job, values surviving the codec, rewritten by a retry, scoped. */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { PathwayTrailRepo } from '../../src/pathways/index.js';
import type { TrailVisit } from '../../src/pathways/model.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

describe.each(h.backends)('pathway trail repository (%s)', (backend) => {
  const repo: PathwayTrailRepo = h.repos(backend).pathwayTrails;

  it('stores a run’s visits with free-form values intact, readable only in its workspace', async () => {
    const ws = randomUUID();
    const job = randomUUID();
    const visits: TrailVisit[] = [
      { at: 0, value: { 'a.b': [[1, 2]], $weird: 'x', nul: 'a\u0000b', deep: { n: null } }, handle: 'yes' },
      { at: 2, value: 'text' },
      { at: 3, value: null, pending: true },
    ];
    expect(await repo.get(ws, job)).toBeNull();
    await repo.put(ws, job, visits);
    expect(await repo.get(ws, job)).toEqual(visits);
    expect(await repo.get(randomUUID(), job)).toBeNull();
  });

  it('a retried write replaces the trail (one document per job)', async () => {
    const ws = randomUUID();
    const job = randomUUID();
    await repo.put(ws, job, [{ at: 0, value: 1 }]);
    await repo.put(ws, job, [
      { at: 0, value: 2 },
      { at: 1, value: 3 },
    ]);
    expect(await repo.get(ws, job)).toEqual([
      { at: 0, value: 2 },
      { at: 1, value: 3 },
    ]);
    expect(await h.db.collection('pathway_trails').countDocuments({ _id: job as never })).toBe(1);
  });

  it("another workspace's write under the same job id does not replace the trail", async () => {
    const ws = randomUUID();
    const job = randomUUID();
    await repo.put(ws, job, [{ at: 0, value: 'mine' }]);
    await repo.put(randomUUID(), job, [{ at: 0, value: 'theirs' }]).catch(() => undefined);
    expect(await repo.get(ws, job)).toEqual([{ at: 0, value: 'mine' }]);
  });
});
