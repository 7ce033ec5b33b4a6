/**
 * The evaluations repository (src/evaluations/store.mongo.ts): datasets and their versioned items
 * (each change a new version; any version read as it was), values surviving the codec (items, an
 * experiment's run scope and a run's output stored as JSON text, handed back decoded), the item
 * limit, experiments moved only until they end, item runs claimed once and finished once, paging
 * order, and every operation scoped to its workspace.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { DatasetDoc, ExperimentRecord, ExperimentItemRecord } from '../../src/evaluations/index.js';
import type { EvaluationStore } from '../../src/evaluations/store.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function dataset(workspaceId: string, o: Partial<DatasetDoc> = {}): DatasetDoc {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: 'b1',
    name: 'golden',
    description: null,
    version: 0,
    itemCount: 0,
    nextSeq: 0,
    createdBy: null,
    createdAt: now,
    updatedAt: now,
    ...o,
  };
}

function experiment(workspaceId: string, datasetId: string, o: Partial<ExperimentRecord> = {}): ExperimentRecord {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: 'b1',
    name: null,
    datasetId,
    datasetVersion: 1,
    target: { kind: 'neuron', id: randomUUID(), version: 2 },
    evaluators: [{ type: 'regex', name: 're', passThreshold: 1, pattern: '^a.b$', flags: 'i' }],
    concurrency: 2,
    status: 'pending',
    itemCount: 0,
    currentStep: null,
    failedReason: null,
    aggregates: null,
    scope: { workspaceId, brainId: 'b1', userId: 'u1', apiKeyId: null, roles: ['member'], credential: 'jwt' },
    createdBy: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
    ...o,
  };
}

function run(e: ExperimentRecord, seq: number, o: Partial<ExperimentItemRecord> = {}): ExperimentItemRecord {
  return {
    _id: `${e._id}:${seq}`,
    workspaceId: e.workspaceId,
    experimentId: e._id,
    itemId: randomUUID(),
    seq,
    jobId: randomUUID(),
    status: 'running',
    output: null,
    error: null,
    scores: [],
    passed: false,
    latencyMs: null,
    inputTokens: 0,
    outputTokens: 0,
    totalTokens: 0,
    costUsd: 0,
    evaluatorCostUsd: 0,
    createdAt: new Date(),
    finishedAt: null,
    ...o,
  };
}

const finished = (o: Partial<ExperimentItemRecord> = {}) => ({
  status: 'scored' as const,
  output: { answer: 'a.b', 'k.k': [[1]] } as unknown,
  error: null,
  scores: [{ evaluator: 're', score: 1, passed: true, reason: 'matched', jobId: null }],
  passed: true,
  latencyMs: 120,
  inputTokens: 10,
  outputTokens: 5,
  totalTokens: 15,
  costUsd: 0.002,
  evaluatorCostUsd: 0,
  finishedAt: new Date('2026-08-09T10:11:12.013Z'),
  ...o,
});

describe.each(h.backends)('evaluations repository (%s)', (backend) => {
  const repo: EvaluationStore = h.repos(backend).evaluations;

  it('creates, reads, renames and removes datasets only in their workspace; pages a brain’s newest first', async () => {
    const ws = randomUUID();
    const t = Date.now();
    const ds = [0, 1, 2].map((i) => dataset(ws, { name: `d${i}`, createdAt: new Date(t + i * 1000) }));
    for (const d of ds) await repo.createDataset(d);
    await repo.createDataset(dataset(ws, { brainId: 'b2' }));
    await repo.createDataset(dataset(randomUUID()));
    expect(await repo.getDataset(ws, ds[0]._id)).toEqual(ds[0]);
    expect(await repo.getDataset(randomUUID(), ds[0]._id)).toBeNull();
    const p1 = await repo.pageDatasets(ws, 'b1', { limit: 2 });
    expect(p1.items.map((d) => d.name)).toEqual(['d2', 'd1']);
    const p2 = await repo.pageDatasets(ws, 'b1', { limit: 2, cursor: p1.nextCursor! });
    expect(p2.items.map((d) => d.name)).toEqual(['d0']);
    expect(p2.hasMore).toBe(false);

    expect(await repo.updateDataset(randomUUID(), ds[0]._id, { name: 'x' })).toBeNull();
    expect(await repo.updateDataset(ws, ds[0]._id, { name: 'renamed', description: 'd' })).toMatchObject({
      name: 'renamed',
      description: 'd',
      version: 0,
    });
    expect(await repo.removeDataset(randomUUID(), ds[0]._id)).toBe(false);
    expect(await repo.removeDataset(ws, ds[0]._id)).toBe(true);
    expect(await repo.getDataset(ws, ds[0]._id)).toBeNull();
  });

  it('adds and removes items as new versions; each version reads as it was; values decoded', async () => {
    const ws = randomUUID();
    const d = dataset(ws);
    await repo.createDataset(d);
    const weird = { 'a.b': [[1, 2]], $k: 'v', nul: 'x\u0000y' };
    const v1 = await repo.addItems(
      ws,
      d._id,
      [{ input: weird, expected: 'yes', metadata: { tag: 'a' } }, { input: 2 }],
      10,
    );
    if (!v1 || v1 === 'full') throw new Error('expected items');
    expect(v1.dataset).toMatchObject({ version: 1, itemCount: 2, nextSeq: 2 });
    expect(v1.items.map((i) => [i.seq, i.addedIn, i.input])).toEqual([
      [0, 1, weird],
      [1, 1, 2],
    ]);
    expect(v1.items[1]).toMatchObject({ expected: null, metadata: null, sourceJobId: null, removedIn: null });
    const v2 = await repo.addItems(ws, d._id, [{ input: 'three', sourceJobId: 'job-1' }], 10);
    if (!v2 || v2 === 'full') throw new Error('expected items');
    expect(v2.dataset).toMatchObject({ version: 2, itemCount: 3, nextSeq: 3 });
    expect(v2.items[0].seq).toBe(2);

    expect(await repo.removeItem(randomUUID(), d._id, v1.items[0]._id)).toBeNull();
    const v3 = await repo.removeItem(ws, d._id, v1.items[0]._id);
    expect(v3).toMatchObject({ version: 3, itemCount: 2 });
    expect(await repo.removeItem(ws, d._id, v1.items[0]._id)).toBeNull();

    const inputsAt = async (v: number) => (await repo.pageItems(ws, d._id, v, { limit: 10 })).items.map((i) => i.input);
    expect(await inputsAt(0)).toEqual([]);
    expect(await inputsAt(1)).toEqual([weird, 2]);
    expect(await inputsAt(2)).toEqual([weird, 2, 'three']);
    expect(await inputsAt(3)).toEqual([2, 'three']);
    expect(await repo.countAt(ws, d._id, 2)).toBe(3);
    expect(await repo.countAt(ws, d._id, 3)).toBe(2);
    expect(await repo.countAt(randomUUID(), d._id, 3)).toBe(0);
    expect(await repo.itemIdsAt(ws, d._id, 2, 2)).toEqual([v1.items[0]._id, v1.items[1]._id]);

    const p1 = await repo.pageItems(ws, d._id, 2, { limit: 2 });
    const p2 = await repo.pageItems(ws, d._id, 2, { limit: 2, cursor: p1.nextCursor! });
    expect(p2.items.map((i) => i.input)).toEqual(['three']);

    expect((await repo.getItem(ws, v1.items[0]._id))?.metadata).toEqual({ tag: 'a' });
    expect(await repo.getItem(randomUUID(), v1.items[0]._id)).toBeNull();
    expect(
      (await repo.getItems(ws, [v1.items[1]._id, v2.items[0]._id, randomUUID()])).map((i) => i.input).sort(),
    ).toEqual([2, 'three'].sort());
    expect(await repo.getItems(randomUUID(), [v1.items[1]._id])).toEqual([]);
    expect(await repo.getItems(ws, [])).toEqual([]);

    expect(await repo.removeDataset(ws, d._id)).toBe(true);
    expect(await repo.getItem(ws, v2.items[0]._id)).toBeNull();
  });

  it('refuses items past the limit; a missing dataset answers null', async () => {
    const ws = randomUUID();
    const d = dataset(ws);
    await repo.createDataset(d);
    await repo.addItems(ws, d._id, [{ input: 1 }, { input: 2 }], 3);
    expect(await repo.addItems(ws, d._id, [{ input: 3 }, { input: 4 }], 3)).toBe('full');
    expect((await repo.getDataset(ws, d._id))?.version).toBe(1);
    expect(await repo.addItems(randomUUID(), d._id, [{ input: 1 }], 3)).toBeNull();
    expect(await repo.removeItem(ws, d._id, randomUUID())).toBeNull();
  });

  it('concurrent additions stay within the item limit (the limit is part of the version compare-and-set)', async () => {
    const ws = randomUUID();
    const d = dataset(ws);
    await repo.createDataset(d);
    const outs = await Promise.all([0, 1, 2, 3].map((i) => repo.addItems(ws, d._id, [{ input: i }, { input: i }], 4)));
    expect(outs.filter((o) => o === 'full')).toHaveLength(2);
    expect((await repo.getDataset(ws, d._id))?.itemCount).toBeLessThanOrEqual(4);
  });

  it('two concurrent removals of one item count it once', async () => {
    const ws = randomUUID();
    const d = dataset(ws);
    await repo.createDataset(d);
    const added = await repo.addItems(ws, d._id, [{ input: 1 }, { input: 2 }], 10);
    if (!added || added === 'full') throw new Error('expected items');
    await Promise.all([0, 1, 2].map(() => repo.removeItem(ws, d._id, added.items[0]._id)));
    expect((await repo.getDataset(ws, d._id))?.itemCount).toBe(1);
    expect(await repo.countAt(ws, d._id, (await repo.getDataset(ws, d._id))!.version)).toBe(1);
  });

  it('moves an experiment only until it ends; aggregates are set whatever its status', async () => {
    const ws = randomUUID();
    const e = experiment(ws, randomUUID());
    await repo.createExperiment(e);
    expect(await repo.getExperiment(ws, e._id)).toEqual(e);
    expect(await repo.getExperiment(randomUUID(), e._id)).toBeNull();
    expect(await repo.setExperiment(randomUUID(), e._id, { status: 'running' })).toBe(false);
    expect(await repo.setExperiment(ws, e._id, { status: 'running', currentStep: 'items' })).toBe(true);
    const end = new Date('2026-09-10T11:12:13.014Z');
    expect(await repo.setExperiment(ws, e._id, { status: 'cancelled', finishedAt: end })).toBe(true);
    expect(await repo.setExperiment(ws, e._id, { status: 'completed' })).toBe(false);
    const agg = {
      items: 2,
      scored: 2,
      failed: 0,
      passRate: 0.5,
      meanScores: { re: 0.5, judge: null },
      latencyP50Ms: 10,
      latencyP95Ms: null,
      targetCostUsd: 0.01,
      evaluatorCostUsd: 0,
      totalCostUsd: 0.01,
      totalTokens: 30,
    };
    await repo.setAggregates(randomUUID(), e._id, agg);
    expect((await repo.getExperiment(ws, e._id))?.aggregates).toBeNull();
    await repo.setAggregates(ws, e._id, agg);
    expect(await repo.getExperiment(ws, e._id)).toMatchObject({
      status: 'cancelled',
      currentStep: 'items',
      finishedAt: end,
      aggregates: agg,
    });
  });

  it('claims an item run once (a retry gets the first claim), finishes it once, pages in dataset order', async () => {
    const ws = randomUUID();
    const e = experiment(ws, randomUUID());
    await repo.createExperiment(e);
    const first = run(e, 0);
    expect(await repo.claimItem(first)).toEqual(first);
    expect((await repo.claimItem({ ...first, jobId: 'retry' })).jobId).toBe(first.jobId);
    const claims = await Promise.all(['a', 'b', 'c'].map((j) => repo.claimItem(run(e, 1, { jobId: j }))));
    expect(new Set(claims.map((c) => c.jobId)).size).toBe(1);
    await repo.claimItem(run(e, 2));

    await repo.finishItem(randomUUID(), first._id, finished());
    expect((await repo.experimentItems(ws, e._id))[0].status).toBe('running');
    await repo.finishItem(ws, first._id, finished());
    await repo.finishItem(ws, first._id, finished({ status: 'failed', error: 'late' }));
    const items = await repo.experimentItems(ws, e._id);
    expect(items.map((i) => i.seq)).toEqual([0, 1, 2]);
    expect(items[0]).toMatchObject({
      status: 'scored',
      error: null,
      output: { answer: 'a.b', 'k.k': [[1]] },
      scores: [{ evaluator: 're', score: 1, passed: true, reason: 'matched', jobId: null }],
      finishedAt: new Date('2026-08-09T10:11:12.013Z'),
    });
    const p1 = await repo.pageExperimentItems(ws, e._id, { limit: 2 });
    expect(p1.items.map((i) => i.seq)).toEqual([0, 1]);
    const p2 = await repo.pageExperimentItems(ws, e._id, { limit: 2, cursor: p1.nextCursor! });
    expect(p2.items.map((i) => i.seq)).toEqual([2]);
    expect((await repo.pageExperimentItems(randomUUID(), e._id, { limit: 10 })).items).toEqual([]);

    expect(await repo.removeExperiment(randomUUID(), e._id)).toBe(false);
    expect(await repo.removeExperiment(ws, e._id)).toBe(true);
    expect(await repo.experimentItems(ws, e._id)).toEqual([]);
    expect(await repo.removeExperiment(ws, e._id)).toBe(false);
  });

  it('keeps an experiment’s run scope and a run’s output as JSON text, and hands them back decoded', async () => {
    const ws = randomUUID();
    const e = experiment(ws, randomUUID());
    await repo.createExperiment(e);
    const raw = await h.db.collection('eval_experiments').findOne({ _id: e._id as never });
    expect(raw?.scope).toBe(JSON.stringify(e.scope));
    expect((await repo.pageExperiments(ws, {}, { limit: 10 })).items).toEqual([e]);

    const [a, b] = [run(e, 0), run(e, 1)];
    for (const r of [a, b]) await repo.claimItem(r);
    await repo.finishItem(ws, a._id, finished());
    await repo.finishItem(ws, b._id, finished({ status: 'failed', output: null, error: 'boom' }));
    const rows = await h.db
      .collection('eval_experiment_items')
      .find({ experimentId: e._id })
      .sort({ seq: 1 })
      .toArray();
    expect(rows.map((r) => r.output)).toEqual([JSON.stringify({ answer: 'a.b', 'k.k': [[1]] }), null]);
    expect((await repo.experimentItems(ws, e._id)).map((r) => r.output)).toEqual([
      { answer: 'a.b', 'k.k': [[1]] },
      null,
    ]);
    // A retried claim answers the first claim's row, decoded.
    const c = run(e, 2);
    await repo.finishItem(ws, c._id, finished()); // no row yet: nothing to finish
    await repo.claimItem(c);
    expect(await repo.claimItem({ ...c, jobId: 'retry' })).toEqual(c);

    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    await expect(repo.finishItem(ws, c._id, finished({ output: deep }))).rejects.toThrow(/^output: nested deeper than/);
  });

  it('reads an experiment stored without a readable run scope as the system in its workspace', async () => {
    const ws = randomUUID();
    const e = experiment(ws, randomUUID());
    await repo.createExperiment(e);
    await h.db.collection('eval_experiments').updateOne({ _id: e._id as never }, { $set: { scope: '' } });
    expect((await repo.getExperiment(ws, e._id))?.scope).toEqual({
      workspaceId: ws,
      userId: null,
      apiKeyId: null,
      roles: [],
      credential: 'system',
    });
  });

  it("pages a workspace's experiments newest first, by brain and dataset", async () => {
    const ws = randomUUID();
    const dsA = randomUUID();
    const t = Date.now();
    const es = [
      experiment(ws, dsA, { createdAt: new Date(t) }),
      experiment(ws, randomUUID(), { createdAt: new Date(t + 1000), brainId: 'b2' }),
      experiment(ws, dsA, { createdAt: new Date(t + 2000), brainId: 'b2' }),
    ];
    for (const e of es) await repo.createExperiment(e);
    await repo.createExperiment(experiment(randomUUID(), dsA));
    const ids = async (f: { brainId?: string; datasetId?: string }) =>
      (await repo.pageExperiments(ws, f, { limit: 10 })).items.map((e) => e._id);
    expect(await ids({})).toEqual([es[2]._id, es[1]._id, es[0]._id]);
    expect(await ids({ brainId: 'b2' })).toEqual([es[2]._id, es[1]._id]);
    expect(await ids({ datasetId: dsA })).toEqual([es[2]._id, es[0]._id]);
    expect(await ids({ brainId: 'b1', datasetId: dsA })).toEqual([es[0]._id]);
  });
});
