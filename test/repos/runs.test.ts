/**
 * The run repository (src/runs/store.mongo.ts): a run's context stored once (a claim), the stored workflow
 * start kept until confirmed, model and tool steps by natural key (a retry rewrites, never adds),
 * text surviving the codec, the working set dropped whole. A second repository over the same store
 * (another process) reads what the first wrote.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunStore as RunRepo } from '../../src/runs/store.js';
import type { PreparedRunData } from '../../src/temporal/definitions.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function prepared(o: Partial<PreparedRunData> = {}): PreparedRunData {
  return {
    model: 'openai/gpt-x',
    neuronName: 'helper',
    neuronType: null,
    responseFormat: 'text',
    delegates: [],
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi \u0000 there' },
    ],
    tools: [{ name: 'lookup', description: 'find', parameters: { type: 'object', 'x.y': { $ref: '#' } } }],
    ...o,
  };
}

describe.each(h.backends)('run repository (%s)', (backend) => {
  const repo: RunRepo = h.repos(backend).runs;
  const otherProcess = (): RunRepo => h.repos(backend).runs;

  it('stores a context once; a second put is refused and changes nothing; another process reads it', async () => {
    const job = randomUUID();
    const data = prepared();
    expect(await repo.putContext(randomUUID(), job, data)).toBe(true);
    expect(await repo.putContext(randomUUID(), job, prepared({ model: 'other' }))).toBe(false);
    expect(await repo.context(job)).toEqual(data);
    expect(await otherProcess().context(job)).toEqual(data);
    expect(await otherProcess().context(randomUUID())).toBeNull();
    // Each read decodes its own copy.
    const mine = (await repo.context(job))!;
    mine.messages.push({ role: 'user', content: 'mutated' });
    expect((await repo.context(job))?.messages).toHaveLength(2);
  });

  it('keeps a stored start until confirmed; lists unconfirmed starts older than a time', async () => {
    const ws = randomUUID();
    const job = randomUUID();
    const start = { workflowType: 'neuronRun', args: [{ jobId: job, 'a.b': [[1]] }], summary: 's' };
    await repo.putContext(ws, job, prepared(), start);
    const plain = randomUUID();
    await repo.putContext(ws, plain, prepared());
    expect(await repo.storedStart(job)).toEqual(start);
    expect(await repo.storedStart(plain)).toBeNull();
    expect(await repo.unconfirmedStarts(new Date(Date.now() - 60_000))).not.toContainEqual(
      expect.objectContaining({ jobId: job }),
    );
    const later = await repo.unconfirmedStarts(new Date(Date.now() + 1000));
    expect(later).toContainEqual({ jobId: job, workspaceId: ws, start });
    expect(later.map((s) => s.jobId)).not.toContain(plain);
    await repo.confirmStart(job);
    expect(await repo.storedStart(job)).toBeNull();
    expect((await repo.unconfirmedStarts(new Date(Date.now() + 1000))).map((s) => s.jobId)).not.toContain(job);
    expect(await repo.context(job)).toEqual(prepared());
  });

  it("reads each turn's accepted attempt and its tool results, in order; a retry rewrites a step", async () => {
    const job = randomUUID();
    await repo.putModel(job, { turn: 0, attempt: 0, text: 'rejected', toolCalls: [] });
    await repo.putModel(job, {
      turn: 0,
      attempt: 1,
      text: 'calling',
      toolCalls: [
        { id: 'c1', name: 'lookup', arguments: '{"q":"a"}' },
        { id: 'c2', name: 'lookup', arguments: '{}' },
      ],
    });
    await repo.putTool(job, { turn: 0, callId: 'c1', name: 'lookup', content: 'first try' });
    await repo.putTool(job, { turn: 0, callId: 'c1', name: 'lookup', content: 'result \u0000 one' });
    await repo.putTool(job, { turn: 0, callId: 'c2', name: 'lookup', content: '{"$a.b":[[2]]}' });
    await repo.putModel(job, { turn: 1, attempt: 0, text: 'done', toolCalls: [] });
    await repo.putModel(randomUUID(), { turn: 0, attempt: 1, text: 'another run', toolCalls: [] });

    for (const r of [repo, otherProcess()]) {
      const got = await r.steps(job, [1, 0]);
      expect(got.models.map((m) => [m.turn, m.attempt, m.text])).toEqual([
        [0, 1, 'calling'],
        [1, 0, 'done'],
      ]);
      expect(got.models[0].toolCalls.map((c) => c.id)).toEqual(['c1', 'c2']);
      expect(got.tools).toEqual([
        { turn: 0, callId: 'c1', name: 'lookup', content: 'result \u0000 one' },
        { turn: 0, callId: 'c2', name: 'lookup', content: '{"$a.b":[[2]]}' },
      ]);
    }
    expect((await repo.steps(job, [0])).models.map((m) => m.text)).toEqual(['rejected']);
    expect(await h.db.collection('run_steps').countDocuments({ jobId: job })).toBe(5);
  });

  it("drops a run's working set whole, and only that run's", async () => {
    const job = randomUUID();
    const other = randomUUID();
    for (const j of [job, other]) {
      await repo.putContext(randomUUID(), j, prepared());
      await repo.putModel(j, { turn: 0, attempt: 0, text: 't', toolCalls: [{ id: 'c', name: 'n', arguments: '{}' }] });
      await repo.putTool(j, { turn: 0, callId: 'c', name: 'n', content: 'r' });
    }
    await repo.drop(job);
    expect(await repo.context(job)).toBeNull();
    expect(await repo.steps(job, [0])).toEqual({ models: [], tools: [] });
    expect(await otherProcess().context(job)).toBeNull();
    expect((await repo.steps(other, [0])).tools).toHaveLength(1);
    expect(await repo.context(other)).not.toBeNull();
  });
});
