/**
 * The trace repository's operations on both forms (docs/architecture.md, "Storage boundary"):
 * decoded round trips, workspace scoping, the engram append under concurrent writers, the
 * counters' convergence and the history reads.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TraceRepo } from '../../src/traces/index.js';
import { emptyCost, type NewEngram, type NewTrace } from '../../src/traces/model.js';
import { openRepoHarness, type RepoHarness } from '../support/repos.js';

let h: RepoHarness;
beforeAll(async () => {
  h = await openRepoHarness();
});
afterAll(async () => {
  await h.close();
});

const newTrace = (workspaceId: string, traceId: string): NewTrace => {
  const now = new Date();
  return {
    traceId,
    workspaceId,
    brainId: null,
    userId: null,
    apiKeyId: null,
    receptorId: null,
    neuronId: null,
    title: null,
    titleSource: null,
    traceType: 'thread',
    metadata: { origin: 'test', nested: [[1, 2]], 'a.b': true },
    createdAt: now,
    messageCount: 0,
    cost: emptyCost(),
    memoryIds: [],
    updatedAt: now,
  };
};
const newEngram = (workspaceId: string, traceId: string, content: string, tokens = 1): NewEngram => ({
  _id: randomUUID(),
  workspaceId,
  traceId,
  content: { type: 'human', content },
  contentHash: content,
  metadata: { $weird: 'kept', list: [[content]] },
  sourceType: 'user',
  sourceId: null,
  targetType: null,
  targetId: null,
  traceType: 'thread',
  memoryIds: [],
  jobId: null,
  createdAt: new Date(),
  cost: { totalCostUsd: 0.5, totalTokens: tokens, inputTokens: tokens, outputTokens: 0 },
});

describe.each(['ferretdb', 'mongodb'] as const)('trace repository (%s form)', (backend) => {
  let repo: TraceRepo;
  beforeAll(() => {
    if (!h.backends.includes(backend)) return;
    repo = h.repos(backend).traces;
  });
  const run = (name: string, fn: () => Promise<void>) =>
    it(name, async (ctx) => {
      if (!h.backends.includes(backend)) return ctx.skip();
      await fn();
    });

  run('creates, finds and lists decoded traces, scoped to their workspace', async () => {
    const ws = randomUUID();
    const traceId = randomUUID();
    expect(await repo.create(newTrace(ws, traceId))).toBe(true);
    expect(await repo.create(newTrace(ws, traceId))).toBe(false);
    const t = await repo.get(ws, traceId);
    expect(t?.metadata).toEqual({ origin: 'test', nested: [[1, 2]], 'a.b': true });
    expect(await repo.get(randomUUID(), traceId)).toBeNull();
    await repo.setTitle(t!, { title: 'Quarterly', titleSource: 'manual', updatedAt: new Date() });
    // Another workspace's write through the same key changes nothing.
    await repo.setTitle(
      { _id: t!._id, workspaceId: randomUUID() },
      {
        title: 'other',
        titleSource: 'manual',
        updatedAt: new Date(),
      },
    );
    expect((await repo.get(ws, traceId))?.title).toBe('Quarterly');
    const page = await repo.list(ws, {}, { field: 'createdAt', dir: -1 }, { limit: 10 }, 'quarter');
    expect(page.items.map((x) => x.traceId)).toEqual([traceId]);
    expect(page.items[0]?.metadata).toMatchObject({ origin: 'test' });
    expect((await repo.list(randomUUID(), {}, { field: 'createdAt', dir: -1 }, { limit: 10 })).total).toBe(0);
  });

  run('appends in order with running totals, converges the counters, and reads the history', async () => {
    const ws = randomUUID();
    const traceId = randomUUID();
    await repo.create(newTrace(ws, traceId));
    let stored = 0;
    for (const c of ['a', 'b', 'c']) {
      const r = await repo.appendEngram(newEngram(ws, traceId, c, 2), {
        hint: 0,
        memoryIds: ['m1'],
        onStored: () => stored++,
      });
      expect(r.existed).toBe(false);
      expect(r.engram.metadata).toEqual({ $weird: 'kept', list: [[c]] });
    }
    expect(stored).toBe(3);
    const t = await repo.get(ws, traceId);
    expect(t).toMatchObject({ messageCount: 3, memoryIds: ['m1'] });
    expect(t?.cost).toEqual({ totalCostUsd: 1.5, totalTokens: 6, inputTokens: 6, outputTokens: 0 });
    const all = await repo.history(ws, traceId, 3);
    expect(all.map((e) => [e.seq, e.content.content])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    expect((await repo.history(ws, traceId, 0, { newest: 2 })).map((e) => e.content.content)).toEqual(['b', 'c']);
    expect((await repo.history(ws, traceId, 3, { limit: 2, newest: 1 })).map((e) => e.content.content)).toEqual(['b']);
    expect(await repo.history(randomUUID(), traceId, 3)).toEqual([]);
    expect(await repo.findEngram(randomUUID(), all[0]!._id)).toBeNull();
    expect((await repo.findEngram(ws, all[0]!._id))?.metadata).toEqual({ $weird: 'kept', list: [['a']] });
  });

  run('an appended id stored before answers the stored engram', async () => {
    const ws = randomUUID();
    const traceId = randomUUID();
    await repo.create(newTrace(ws, traceId));
    const e = newEngram(ws, traceId, 'once');
    const first = await repo.appendEngram(e, { hint: 0, memoryIds: [] });
    const again = await repo.appendEngram(
      { ...e, content: { type: 'human', content: 'twice' } },
      {
        hint: 0,
        memoryIds: [],
      },
    );
    expect(again.existed).toBe(true);
    expect(again.engram._id).toBe(first.engram._id);
    expect((await repo.history(ws, traceId, 1)).map((x) => x.content.content)).toEqual(['once']);
  });

  run('concurrent appends each claim one seq: no gap, no duplicate, exact counters', async () => {
    const ws = randomUUID();
    const traceId = randomUUID();
    await repo.create(newTrace(ws, traceId));
    // Three repositories stand for three processes: one process's appends to a trace take turns,
    // the processes race for the claims.
    const writers = [repo, h.repos(backend).traces, h.repos(backend).traces];
    const n = 12;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        writers[i % writers.length]!.appendEngram(newEngram(ws, traceId, `m${i}`), { hint: 0, memoryIds: [] }),
      ),
    );
    expect(results.map((r) => r.engram.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const t = await repo.get(ws, traceId);
    expect(t?.messageCount).toBe(n);
    expect(t?.cost.totalTokens).toBe(n);
    expect((await repo.history(ws, traceId, n)).map((e) => e.seq)).toEqual(results.map((_, i) => i + 1));
  });

  run('the newest seq a process remembers is a hint: appends of another process meanwhile are found', async () => {
    const ws = randomUUID();
    const traceId = randomUUID();
    await repo.create(newTrace(ws, traceId));
    const other = h.repos(backend).traces;
    for (const c of ['a', 'b']) await repo.appendEngram(newEngram(ws, traceId, c, 1), { hint: 0, memoryIds: [] });
    for (const c of ['c', 'd', 'e']) await other.appendEngram(newEngram(ws, traceId, c, 1), { hint: 0, memoryIds: [] });
    // This process remembers seq 2; a stale hint from the caller too.
    const r = await repo.appendEngram(newEngram(ws, traceId, 'f', 1), { hint: 1, memoryIds: [] });
    expect(r.engram.seq).toBe(6);
    expect((await repo.get(ws, traceId))?.cost.totalTokens).toBe(6);
    // A trace of another workspace with the same id starts at 1 whatever this process remembers.
    const elsewhere = randomUUID();
    await repo.create(newTrace(elsewhere, traceId));
    expect(
      (await repo.appendEngram(newEngram(elsewhere, traceId, 'x', 1), { hint: 0, memoryIds: [] })).engram.seq,
    ).toBe(1);
  });

  run('a trace stored with a random id (before trace keys) gets its counters too', async () => {
    const ws = randomUUID();
    const traceId = randomUUID();
    const t = newTrace(ws, traceId);
    await h.db.collection('traces').insertOne({ ...t, _id: randomUUID() as never, metadata: '{}' });
    for (const [i, c] of ['a', 'b', 'c'].entries()) {
      const r = await repo.appendEngram(newEngram(ws, traceId, c, 2), { hint: i, memoryIds: [] });
      expect(r.engram.seq).toBe(i + 1);
    }
    expect(await repo.get(ws, traceId)).toMatchObject({ messageCount: 3, cost: { totalTokens: 6 } });
  });

  run('a writer that converges late never takes the counters back', async () => {
    const ws = randomUUID();
    const traceId = randomUUID();
    await repo.create(newTrace(ws, traceId));
    const other = h.repos(backend).traces;
    await repo.appendEngram(newEngram(ws, traceId, 'a', 1), { hint: 0, memoryIds: [] });
    await other.appendEngram(newEngram(ws, traceId, 'b', 1), { hint: 0, memoryIds: [] });
    // The first writer's engram is appended again (a retried call): it answers the stored engram
    // and its converge must leave the newer counters as they are.
    const first = (await repo.history(ws, traceId, 2))[0]!;
    const again = await repo.appendEngram(
      { ...newEngram(ws, traceId, 'a', 1), _id: first._id },
      { hint: 0, memoryIds: [] },
    );
    expect(again).toMatchObject({ existed: true, engram: { seq: 1 } });
    expect(await repo.get(ws, traceId)).toMatchObject({ messageCount: 2, cost: { totalTokens: 2 } });
  });

  run('a generated title is set with the counters only while the trace has none', async () => {
    const ws = randomUUID();
    const traceId = randomUUID();
    await repo.create(newTrace(ws, traceId));
    const r = await repo.appendEngram(newEngram(ws, traceId, 'x'), { hint: 0, memoryIds: [], title: 'Generated' });
    expect(r.titled).toBe(true);
    expect(r.trace).toMatchObject({ title: 'Generated', titleSource: 'generated', messageCount: 1 });
    const s = await repo.appendEngram(newEngram(ws, traceId, 'y'), { hint: 1, memoryIds: [], title: 'Other' });
    expect(s.titled).toBe(false);
    expect((await repo.get(ws, traceId))?.title).toBe('Generated');
  });

  run('start writes the trace with its first engram; a taken engram id leaves nothing and answers null', async () => {
    const ws = randomUUID();
    const traceId = randomUUID();
    const e = newEngram(ws, traceId, 'first');
    const first = await repo.start({ ...newTrace(ws, traceId), memoryIds: [] }, e);
    expect(first?.seq).toBe(1);
    expect(await repo.get(ws, traceId)).toMatchObject({ messageCount: 1 });
    const other = randomUUID();
    expect(await repo.start(newTrace(ws, other), { ...e, traceId: other })).toBeNull();
    // The trace of the losing call exists, its first place is free: an append takes seq 1.
    const next = await repo.appendEngram(newEngram(ws, other, 'next'), { hint: 0, memoryIds: [] });
    expect(next.engram.seq).toBe(1);
  });
});
