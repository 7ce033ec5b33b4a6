/** The skill repository (src/skills/store.mongo.ts): versions claimed by unique id, the head held to the newest, scoping. */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { SkillDoc, SkillRepo } from '../../src/skills/index.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function skill(workspaceId: string, brainId: string, name: string): SkillDoc {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId,
    name,
    skillPath: `skills/${name}`,
    bodyMd: '# v1',
    toolLinks: [],
    latestVersion: 1,
    createdBy: null,
    createdAt: now,
    updatedAt: now,
  };
}

describe.each(h.backends)('skill repository (%s)', (backend) => {
  const repo: SkillRepo = h.repos(backend).skills;
  const ws = randomUUID();
  const brain = randomUUID();

  it('creates a skill (a taken path refused), reads it only in its workspace, removes it', async () => {
    const s = skill(ws, brain, 'notes');
    expect(await repo.create(s)).toBe(true);
    expect(await repo.create({ ...s, _id: randomUUID() })).toBe(false);
    expect(await repo.findById(ws, s._id)).toMatchObject({ skillPath: 'skills/notes' });
    expect(await repo.findById(randomUUID(), s._id)).toBeNull();
    expect(await repo.pathTaken(ws, brain, 'skills/notes', randomUUID())).toBe(true);
    expect(await repo.pathTaken(ws, brain, 'skills/notes', s._id)).toBe(false);
    await repo.remove(ws, s._id);
    expect(await repo.findById(ws, s._id)).toBeNull();
  });

  it('records concurrent changes as distinct versions; the head ends at the newest', async () => {
    const s = skill(ws, brain, 'busy');
    await repo.create(s);
    const outs = await Promise.all(
      [1, 2, 3].map((i) =>
        repo.recordVersion(s, { name: 'busy', skillPath: 'skills/busy', bodyMd: `# change ${i}`, createdBy: null }),
      ),
    );
    const versions = outs.map((o) => (typeof o === 'string' ? 0 : o.latestVersion)).sort();
    expect(versions).toEqual([2, 3, 4]);
    expect((await repo.findById(ws, s._id))?.latestVersion).toBe(4);
  });

  it('refuses a rename to a path another skill of the brain has', async () => {
    const a = skill(ws, brain, 'first');
    const b = skill(ws, brain, 'second');
    await repo.create(a);
    await repo.create(b);
    expect(await repo.recordVersion(a, { name: 'second', skillPath: 'skills/second', createdBy: null })).toBe(
      'path_taken',
    );
    const p = await repo.page(ws, { brainId: brain }, { field: 'name', dir: 1 }, { limit: 10 });
    expect(p.items.map((x) => x.name)).toEqual(['busy', 'first', 'second']);
  });
});
