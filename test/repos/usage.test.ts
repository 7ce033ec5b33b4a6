/**
 * The usage repository's operations on both forms: ledger rows written once with their job's
 * places, read back by key and by query, sums by the store, rollups stored once and decoded, and
 * resource names scoped to their workspace.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rollupId, type UsageRepo, type UsageRowDoc } from '../../src/usage/index.js';
import { openRepoHarness, type RepoHarness } from '../support/repos.js';

let h: RepoHarness;
beforeAll(async () => {
  h = await openRepoHarness();
});
afterAll(async () => {
  await h.close();
});

const row = (workspaceId: string, jobId: string, n: number, at = new Date()): UsageRowDoc => ({
  _id: `${jobId}:chat:${n}`,
  workspaceId,
  brainId: null,
  userId: 'u',
  apiKeyId: null,
  jobId,
  runId: jobId,
  traceId: null,
  receptorId: 'r',
  neuronId: null,
  pathwayId: null,
  kind: 'chat',
  provider: 'local',
  model: 'm',
  inputTokens: n,
  outputTokens: 1,
  cachedInputTokens: 0,
  totalTokens: n + 1,
  costNanos: 10 * n,
  priced: true,
  priceVersion: 'v',
  outcome: 'ok',
  estimated: false,
  at,
});

describe.each(['ferretdb', 'mongodb'] as const)('usage repository (%s form)', (backend) => {
  let repo: UsageRepo;
  beforeAll(() => {
    if (!h.backends.includes(backend)) return;
    repo = h.repos(backend).usage;
  });
  const run = (name: string, fn: () => Promise<void>) =>
    it(name, async (ctx) => {
      if (!h.backends.includes(backend)) return ctx.skip();
      await fn();
    });

  run("writes a row once, places it in its job, and reads the job's rows by key and by query", async () => {
    const ws = randomUUID();
    const jobId = randomUUID();
    const rows = [1, 2, 3].map((n) => row(ws, jobId, n));
    expect(await Promise.all(rows.map((r) => repo.insert(r)))).toEqual([true, true, true]);
    expect(await repo.insert(rows[0]!)).toBe(false);
    expect((await repo.placedRows(jobId)).sort()).toEqual(rows.map((r) => r._id).sort());
    expect((await repo.jobRows(ws, jobId)).map((r) => r.totalTokens).sort()).toEqual([2, 3, 4]);
    expect(await repo.jobRows(randomUUID(), jobId)).toEqual([]);
    expect((await repo.jobRows(ws, jobId, true)).reduce((n, r) => n + r.costNanos, 0)).toBe(60);
    expect(await repo.row(randomUUID(), rows[0]!._id)).toBeNull();
    expect((await repo.rowsOfJob(ws, jobId, [rows[1]!._id, 'missing'])).map((r) => r._id)).toEqual([rows[1]!._id]);
    const [total] = await repo.sums({ workspaceId: ws, receptorId: 'r' }, null);
    expect(total).toMatchObject({ tokens: 9, costNanos: 60, rows: 3 });
    expect(await repo.sums({ workspaceId: ws, userId: 'other' }, null)).toEqual([]);
    expect(await repo.sums({ workspaceId: ws, from: new Date(Date.now() + 60_000) }, null)).toEqual([]);
    expect((await repo.jobsPer({ workspaceId: ws }, 'receptorId', 'runId')).get('r')).toBe(1);
  });

  run('stores an hour rollup once, decoded on read, and corrects it', async () => {
    const ws = randomUUID();
    const hour = 480_000;
    const group = {
      provider: 'local',
      model: 'm',
      priced: true,
      receptorId: null,
      neuronId: null,
      pathwayId: null,
      shareTokenId: null,
      userId: null,
      apiKeyId: null,
      tokens: 5,
      costNanos: 7,
      inputTokens: 4,
      outputTokens: 1,
      cachedInputTokens: 0,
      rows: 1,
      neuronInvokes: 0,
      receptorInvokes: 0,
      pathwayInvokes: 0,
    };
    const r = {
      _id: rollupId(ws, hour),
      workspaceId: ws,
      hour: new Date(hour * 3_600_000),
      groups: [group],
      rows: 1,
      computedAt: new Date(),
    };
    expect(await repo.storeRollup(r)).toBe(true);
    expect(await repo.storeRollup(r)).toBe(false);
    expect((await repo.rollupsBetween(ws, hour, hour + 1))[0]?.groups).toEqual([group]);
    await repo.correctRollup({ ...r, groups: [{ ...group, tokens: 6 }] });
    expect((await repo.rollupsBetween(ws, null, null))[0]?.groups[0]?.tokens).toBe(6);
    expect(await repo.rollupsBetween(randomUUID(), null, null)).toEqual([]);
  });

  run('names resources of the workspace only', async () => {
    const ws = randomUUID();
    const id = randomUUID();
    await h.db.collection('neurons').insertOne({ _id: id as never, workspaceId: ws, name: 'Helper' });
    expect([...(await repo.resourceNames('neuron', ws, [id]))]).toEqual([[id, { slug: 'Helper', subtype: 'neuron' }]]);
    expect((await repo.resourceNames('neuron', randomUUID(), [id])).size).toBe(0);
  });
});
