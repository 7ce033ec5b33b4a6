import { describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { useSimPlatform } from '../support/platform.js';

/**
 * POST /v1/neurons/:id/invoke with `version` (docs/neurons.md, "Running an earlier version"): the
 * run takes that version's recorded config (here its model) instead of the head, on the same trace
 * as head runs, so two versions are compared in one conversation; a version the neuron does not
 * have is 404 with nothing stored, a malformed one 400. Real worker, Temporal and the provider
 * simulator (which serves every configured model).
 */
const { app } = useSimPlatform({ firstTokenMs: 10, interTokenMs: 2, tokens: 4 });

describe('invoke a pinned version', () => {
  it('runs the version asked for, the head without it, on one trace; 404 for a version that does not exist', async () => {
    const ws = await buildWorkspace(app);
    const models = (await app.get<{ models: { model: string }[] }>('/v1/config/models', ws.key)).body.models.map(
      (m) => m.model,
    );
    const [first, second] = models.filter((m) => m.startsWith('openai/'));
    expect(first && second && first !== second, 'two openai models are configured').toBe(true);
    const created = await app.post<{ id: string }>('/v1/neurons', ws.key, {
      name: 'versioned',
      brain_id: ws.brainId,
      neuron_config: { model: first },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const put = await app.put(`/v1/neurons/${id}`, ws.key, { neuron_config: { model: second } });
    expect(put.status).toBe(200);

    const run = async (body: Record<string, unknown>) => {
      const r = await app.post<{ job_id: string; trace_id: string }>(`/v1/neurons/${id}/invoke`, ws.key, body);
      expect(r.status).toBe(202);
      const job = await settleJob(app, ws.key, r.body.job_id);
      expect(job.status).toBe('completed');
      return { job, traceId: r.body.trace_id };
    };
    const head = await run({ message: 'Which model are you?' });
    expect((head.job.result as { model?: string }).model).toBe(second);
    const pinned = await run({ message: 'Which model are you?', trace_id: head.traceId, version: 1 });
    expect((pinned.job.result as { model?: string }).model).toBe(first);
    const explicitHead = await run({ message: 'And now?', trace_id: head.traceId, version: 2 });
    expect((explicitHead.job.result as { model?: string }).model).toBe(second);

    // The three replies are on one trace, each engram naming the model that answered.
    const messages = await app.get<{ engrams: { source_type: string; metadata: { model?: string } }[] }>(
      `/v1/traces/${head.traceId}/messages`,
      ws.key,
    );
    expect(messages.body.engrams.filter((e) => e.source_type === 'neuron').map((e) => e.metadata.model)).toEqual([
      second,
      first,
      second,
    ]);

    // A version the neuron does not have: 404, and no job or turn is stored.
    const before = (await app.get<{ total: number }>(`/v1/jobs?neuron_id=${id}`, ws.key)).body.total;
    const missing = await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'x', version: 9 });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'NOT_FOUND' });
    expect((await app.get<{ total: number }>(`/v1/jobs?neuron_id=${id}`, ws.key)).body.total).toBe(before);
    for (const version of [0, 1.5, '1'])
      expect((await app.post(`/v1/neurons/${id}/invoke`, ws.key, { message: 'x', version })).status).toBe(400);
  });
});
