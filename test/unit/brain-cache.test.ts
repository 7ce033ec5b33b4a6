import { afterEach, describe, expect, it, vi } from 'vitest';
import { withBrainCache, type BrainDoc, type WorkspaceRepo } from '../../src/platform/index.js';

const brain = (workspaceId: string, id: string): BrainDoc => ({
  _id: id,
  workspaceId,
  name: 'Brain',
  createdAt: new Date(0),
  updatedAt: new Date(0),
});

/** A store holding `rows`, counting its reads. */
function storeOf(rows: BrainDoc[]) {
  const reads: string[] = [];
  const store = {
    findBrain: async (workspaceId: string, id: string) => {
      reads.push(id);
      return rows.find((b) => b._id === id && b.workspaceId === workspaceId) ?? null;
    },
  } as unknown as WorkspaceRepo;
  return { store, reads };
}

describe("a process's memory of the brains it found", () => {
  afterEach(() => vi.useRealTimers());

  it('a brain found is read once within 5 s, and again after', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { store, reads } = storeOf([brain('w1', 'b1')]);
    const cached = withBrainCache(store);
    expect(await cached.findBrain('w1', 'b1')).toMatchObject({ _id: 'b1', workspaceId: 'w1' });
    vi.advanceTimersByTime(4_900);
    expect(await cached.findBrain('w1', 'b1')).toMatchObject({ _id: 'b1' });
    expect(reads).toEqual(['b1']);
    vi.advanceTimersByTime(200);
    await cached.findBrain('w1', 'b1');
    expect(reads).toEqual(['b1', 'b1']);
  });

  it('another workspace asking for the brain is not answered from memory', async () => {
    const { store, reads } = storeOf([brain('w1', 'b1')]);
    const cached = withBrainCache(store);
    expect(await cached.findBrain('w1', 'b1')).not.toBeNull();
    expect(await cached.findBrain('w2', 'b1')).toBeNull();
    expect(await cached.findBrain('w2', 'b1')).toBeNull();
    expect(reads).toEqual(['b1', 'b1', 'b1']);
  });

  it('a brain missing is asked again each time, so one made meanwhile is found at once', async () => {
    const rows: BrainDoc[] = [];
    const { store, reads } = storeOf(rows);
    const cached = withBrainCache(store);
    expect(await cached.findBrain('w1', 'b2')).toBeNull();
    rows.push(brain('w1', 'b2'));
    expect(await cached.findBrain('w1', 'b2')).toMatchObject({ _id: 'b2' });
    expect(reads).toEqual(['b2', 'b2']);
  });

  it('a caller changing the brain it was given does not change what others are given', async () => {
    const { store } = storeOf([brain('w1', 'b1')]);
    const cached = withBrainCache(store);
    const first = await cached.findBrain('w1', 'b1');
    first!.name = 'changed';
    expect((await cached.findBrain('w1', 'b1'))!.name).toBe('Brain');
  });
});
