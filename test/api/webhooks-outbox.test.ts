/**
 * The webhook outbox (docs/webhooks.md, "Delivery guarantees"): an endpoint change takes effect for
 * every event after its response (endpoints are read from the store when an event is fanned out,
 * never from a per-process cache), a job's end is recorded with its terminal claim and announced by
 * the follower even when no process told it, and each (event, endpoint) has one `webhook-id`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { usePlatform } from '../support/platform.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../support/webhook-receiver.js';

const { app, llm } = usePlatform({ OUTBOUND_ALLOW_HOSTS: ['127.0.0.1'], WEBHOOK_RETRY_INITIAL_MS: 100 });

let rx: WebhookReceiver;
beforeAll(async () => {
  rx = await startWebhookReceiver();
  // A message starting `fail` gets a 400 from the provider (the run fails at once); others an answer.
  llm.setDefault((body) => {
    const last = body.messages.filter((m) => m.role === 'user').at(-1);
    const text = typeof last?.content === 'string' ? last.content : '';
    return text.startsWith('fail') ? { status: 400, errorMessage: 'scripted refusal' } : { text: 'done' };
  });
});
afterAll(async () => {
  await rx?.close();
});

async function setup() {
  const ws = await buildWorkspace(app);
  const admin = await ws.jwt(['workspace_admin']);
  const neuron = await app.post<{ id: string }>('/v1/neurons', ws.key, {
    name: 'hooked',
    brain_id: ws.brainId,
    neuron_config: { model: 'openai/scripted' },
  });
  expect(neuron.status, neuron.text).toBe(201);
  const invoke = async (message: string) => {
    const inv = await app.post<{ job_id: string }>(`/v1/neurons/${neuron.body.id}/invoke`, ws.key, { message });
    expect(inv.status, inv.text).toBe(202);
    return inv.body.job_id;
  };
  const endpoint = async (path: string, events: string[]) => {
    const r = await app.post<{ id: string }>('/v1/webhook-endpoints', admin, { url: rx.base + path, events });
    expect(r.status, r.text).toBe(201);
    return r.body.id;
  };
  return { ws, admin, invoke, endpoint };
}

const unique = (p: string) => `/${p}-${Math.random().toString(36).slice(2, 10)}`;

describe('webhooks from an outbox', () => {
  it('an endpoint created right after an event of its workspace gets job.failed of a job failing 0.2 s later', async () => {
    const { ws, invoke, endpoint } = await setup();
    // An event of the workspace just before the endpoint exists (what filled a per-process cache before).
    const first = await settleJob(app, ws.key, await invoke('hello'));
    expect(first.status).toBe('completed');
    const path = unique('failed');
    await endpoint(path, ['job.failed']);
    await new Promise((r) => setTimeout(r, 200));
    const jobId = await invoke('fail now');
    expect((await settleJob(app, ws.key, jobId)).status).toBe('failed');
    const got = await until(
      'job.failed delivered',
      () => rx.at(path),
      (r) => r.some((x) => x.jobId === jobId),
    );
    expect(got.map((r) => r.type)).toEqual(['job.failed']);
  });

  it('three endpoints created together: only the one subscribed to job.completed gets it', async () => {
    const { ws, admin, invoke, endpoint } = await setup();
    const [pc, pf, pi] = [unique('completed'), unique('failed-only'), unique('interventions')];
    const [ec, ef, ei] = await Promise.all([
      endpoint(pc, ['job.completed']),
      endpoint(pf, ['job.failed']),
      endpoint(pi, ['intervention.created', 'intervention.answered']),
    ]);
    const jobId = await invoke('hello');
    expect((await settleJob(app, ws.key, jobId)).status).toBe('completed');
    const got = await until(
      'job.completed delivered',
      () => rx.at(pc),
      (r) => r.some((x) => x.jobId === jobId),
    );
    expect(got.map((r) => r.type)).toEqual(['job.completed']);
    // Everything recorded is fanned out by now (the outbox is drained): the other two have no delivery.
    await app.services.webhooks.drainOutbox();
    for (const [id, path] of [
      [ef, pf],
      [ei, pi],
    ]) {
      const log = await app.get<{ deliveries: unknown[] }>(`/v1/webhook-endpoints/${id}/deliveries`, admin);
      expect(log.body.deliveries, path).toEqual([]);
      expect(rx.at(path)).toEqual([]);
    }
    // The delivery log of the subscribed one shows the event, its id the `webhook-id` that was sent.
    const log = await app.get<{ deliveries: { id: string; event: string; status: string }[] }>(
      `/v1/webhook-endpoints/${ec}/deliveries`,
      admin,
    );
    expect(log.body.deliveries.map((d) => [d.id, d.event])).toEqual([[got[0].webhookId, 'job.completed']]);
  });

  it('a job end is announced from its terminal claim; an end fanned out again sends nothing new', async () => {
    const { ws, invoke, endpoint } = await setup();
    const path = unique('claimed');
    await endpoint(path, ['job.completed', 'job.failed']);
    // A job of the workspace, ended here by a transition whose process never tells anyone: the
    // claim's own insert carries the outbox mark, which is all the follower needs.
    const jobId = await invoke('hello');
    expect((await settleJob(app, ws.key, jobId)).status).toBe('completed');
    await until(
      'job.completed delivered',
      () => rx.at(path),
      (r) => r.some((x) => x.jobId === jobId),
    );
    // Announced: the claim has left the outbox.
    expect((await app.services.jobs.unannouncedEnds(1000)).some((e) => e.jobId === jobId)).toBe(false);
    // Fanning the same end out again (a follower that died before removing its row) sends nothing new.
    await app.deps.db
      .collection('job_claims')
      .updateOne({ _id: `job:${jobId}:terminal` as never }, { $set: { outboxAt: new Date(0) } });
    expect((await app.services.jobs.unannouncedEnds(1000)).some((e) => e.jobId === jobId)).toBe(true);
    await app.services.webhooks.drainOutbox();
    await app.services.webhooks.drainOutbox();
    await new Promise((r) => setTimeout(r, 1000));
    const got = rx.at(path).filter((x) => x.jobId === jobId);
    expect(got).toHaveLength(1);
  });
});
