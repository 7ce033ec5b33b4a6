/**
 * The job repository's operations on both forms: decoded round trips, workspace scoping, the
 * terminal claim under concurrent writers, transitions that race it, and paging order.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRecord as Job, JobRepo } from '../../src/jobs/index.js';
import { openRepoHarness, type RepoHarness } from '../support/repos.js';

let h: RepoHarness;
beforeAll(async () => {
  h = await openRepoHarness();
});
afterAll(async () => {
  await h.close();
});

const newJob = (workspaceId: string, over: Partial<Job> = {}): Job => {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: null,
    kind: 'neuron',
    status: 'pending',
    progress: 0,
    currentStep: 'queued',
    failedReason: null,
    waitingFor: null,
    neuronId: null,
    pathwayId: null,
    receptorId: null,
    traceId: null,
    parentJobId: null,
    clientNonce: null,
    createdBy: null,
    createdAt: now,
    finishedAt: null,
    updatedAt: now,
    ...over,
  };
};

describe.each(['ferretdb', 'mongodb'] as const)('job repository (%s form)', (backend) => {
  let repo: JobRepo;
  beforeAll(() => {
    if (!h.backends.includes(backend)) return;
    repo = h.repos(backend).jobs;
  });
  const run = (name: string, fn: () => Promise<void>) =>
    it(name, async (ctx) => {
      if (!h.backends.includes(backend)) return ctx.skip();
      await fn();
    });

  run('inserts once and reads decoded values, scoped to the workspace', async () => {
    const ws = randomUUID();
    const job = newJob(ws);
    expect(await repo.insert(job)).toBe(true);
    expect(await repo.insert(job)).toBe(false);
    expect(await repo.get(ws, job._id)).toMatchObject({ _id: job._id, result: undefined, waitingFor: null });
    expect(await repo.get(randomUUID(), job._id)).toBeNull();
    expect((await repo.findUnscoped(job._id))?._id).toBe(job._id);
    const waitingFor = { interventionId: 'i', 'odd.key': [[1]] };
    const r = await repo.recordTransition(ws, job._id, { status: 'waiting', waitingFor }, new Date());
    expect(r).toMatchObject({ applied: true, previous: { status: 'pending' } });
    const after = await repo.get(ws, job._id);
    expect(after?.waitingFor).toEqual(waitingFor);
    expect(after?.processedAt).toBeInstanceOf(Date);
    // Another workspace's transition of the same id changes nothing.
    expect((await repo.recordTransition(randomUUID(), job._id, { status: 'running' }, new Date())).previous).toBeNull();
    expect((await repo.get(ws, job._id))?.status).toBe('waiting');
  });

  run('concurrent terminal claims: exactly one wins, and every writer learns the state that holds', async () => {
    const ws = randomUUID();
    const job = newJob(ws);
    await repo.insert(job);
    const claims = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        repo.claimTerminal(ws, job._id, {
          status: i % 2 ? 'failed' : 'completed',
          failedReason: i % 2 ? `writer ${i}` : null,
          result: { writer: i, nested: [[i]] },
        }),
      ),
    );
    const winners = claims.filter((c) => c.won);
    expect(winners).toHaveLength(1);
    for (const c of claims) expect(c.held).toEqual(winners[0]!.held);
    const state = await repo.terminalState(job._id);
    expect(state).toEqual(winners[0]!.held);
    const settled = await repo.settleTerminal(ws, job._id, state!, new Date());
    expect(settled).toMatchObject({ status: state!.status, result: state!.result });
    // A later non-terminal write is repaired to the claimed end.
    expect((await repo.recordTransition(ws, job._id, { status: 'running', progress: 50 }, new Date())).applied).toBe(
      false,
    );
    expect((await repo.get(ws, job._id))?.status).toBe(state!.status);
  });

  run('pages newest first under the filter; counts and finds by share link; children and pending sweeps', async () => {
    const ws = randomUUID();
    const base = Date.now() - 60_000;
    const jobs = Array.from({ length: 5 }, (_, i) =>
      newJob(ws, { createdAt: new Date(base + i * 1000), shareTokenId: 's', traceId: 't', receptorId: 'r' }),
    );
    for (const j of jobs) await repo.insert(j);
    const first = await repo.page(ws, {}, { limit: 2 });
    expect(first.items.map((j) => j._id)).toEqual([jobs[4]!._id, jobs[3]!._id]);
    const next = await repo.page(ws, {}, { limit: 2, cursor: first.nextCursor! });
    expect(next.items.map((j) => j._id)).toEqual([jobs[2]!._id, jobs[1]!._id]);
    expect((await repo.page(ws, { status: 'completed' }, { limit: 10 })).total).toBe(0);
    expect(await repo.countForShare(ws, 's')).toBe(5);
    expect(await repo.countForShare(ws, 's', 3)).toBe(3);
    expect(await repo.countForShare(randomUUID(), 's')).toBe(0);
    expect(await repo.ranOnTraceForShare(ws, 't', 's')).toBe(true);
    expect(await repo.ranOnTraceForShare(ws, 't', 'other')).toBe(false);
    expect(await repo.ranOnTraceForShare(ws, 'other', 's')).toBe(false);
    expect(await repo.pendingBefore(ws, new Date(base + 2500))).toHaveLength(3);
    const child = newJob(ws, { parentJobId: jobs[0]!._id });
    await repo.insert(child);
    expect((await repo.openChildren(ws, jobs[0]!._id)).map((j) => j._id)).toEqual([child._id]);
    expect(await repo.openChildren(randomUUID(), jobs[0]!._id)).toEqual([]);
  });

  run('a job that never started is forgotten with its terminal claim', async () => {
    const ws = randomUUID();
    const job = newJob(ws);
    await repo.insert(job);
    await repo.claimTerminal(ws, job._id, { status: 'failed', failedReason: 'never', currentStep: 'not started' });
    await repo.settleTerminal(ws, job._id, (await repo.terminalState(job._id))!, new Date());
    await repo.forgetNotStarted(ws, job._id, 'not started');
    expect(await repo.get(ws, job._id)).toBeNull();
    expect(await repo.terminalState(job._id)).toBeNull();
    expect(await repo.insert(job)).toBe(true);
  });
});
