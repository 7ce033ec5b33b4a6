/**
 * Conversation forks (POST /v1/traces/:id/fork) end to end: the real API and worker, the neuron's
 * model served by the scripted OpenAI server. A run invoked on the fork sends the model the copied
 * history only; the original trace is untouched.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Engram, Trace } from '../../src/traces/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { settleJob } from '../support/jobs.js';
import { lastUserText } from '../support/scripted-openai.js';
import { usePlatform } from '../support/platform.js';

const { app, llm } = usePlatform();
const MODEL = 'openai/gpt-4o-mini';

type Ws = Awaited<ReturnType<typeof buildWorkspace>>;

async function createNeuron(ws: Ws, name: string) {
  const r = await app.post('/v1/neurons', ws.key, {
    name,
    brain_id: ws.brainId,
    neuron_config: { model: MODEL, system_prompt: `You are ${name}.` },
  });
  expect(r.status).toBe(201);
  return String(r.body.id);
}

/** Invokes the neuron with `message` (on `traceId` when given) and waits for its reply. */
async function say(ws: Ws, neuronId: string, message: string, traceId?: string) {
  const r = await app.post(`/v1/neurons/${neuronId}/invoke`, ws.key, {
    message,
    ...(traceId ? { trace_id: traceId } : {}),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  const job = await settleJob(app, ws.key, String(r.body.job_id));
  expect(job.status, job.failedReason).toBe('completed');
  return String(r.body.trace_id);
}

const messagesOf = async (ws: Ws, traceId: string) =>
  (await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key)).body.engrams.map((e) =>
    Engram.parse(e),
  );

describe('POST /v1/traces/:id/fork', () => {
  it('copies the engrams up to one of them; an invoke on the fork continues from there; the original is untouched', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = await createNeuron(ws, 'forker');
    const nonce = randomUUID();
    llm.setDefault((body) => ({ text: `reply to ${lastUserText(body)}` }));

    const traceId = await say(ws, neuronId, `first ${nonce}`);
    await say(ws, neuronId, `second ${nonce}`, traceId);
    const original = await messagesOf(ws, traceId);
    expect(original.map((m) => m.content.content)).toEqual([
      `first ${nonce}`,
      `reply to first ${nonce}`,
      `second ${nonce}`,
      `reply to second ${nonce}`,
    ]);
    const originalTrace = Trace.parse((await app.get(`/v1/traces/${traceId}`, ws.key)).body.trace);

    // Fork at the first reply.
    const at = original[1];
    const f = await app.post(`/v1/traces/${traceId}/fork`, ws.key, { at_engram_id: at.id });
    expect(f.status, JSON.stringify(f.body)).toBe(201);
    const fork = Trace.parse(f.body.trace);
    expect(fork.trace_id).not.toBe(traceId);
    expect(fork.forked_from).toEqual({ trace_id: traceId, engram_id: at.id });
    expect(fork.message_count).toBe(2);
    expect(fork.brain_id).toBe(ws.brainId);
    const copies = await messagesOf(ws, fork.trace_id);
    expect(copies.map((m) => [m.source_type, m.content])).toEqual(
      original.slice(0, 2).map((m) => [m.source_type, m.content]),
    );
    expect(copies.every((c) => c.trace_id === fork.trace_id && !original.some((o) => o.id === c.id))).toBe(true);
    // The fork carries the copies' cost (the running totals through the engram it was cut at).
    const read = Trace.parse((await app.get(`/v1/traces/${fork.trace_id}`, ws.key)).body.trace);
    expect(read.forked_from).toEqual({ trace_id: traceId, engram_id: at.id });
    expect(read.cost_summary.total_tokens).toBeLessThan(originalTrace.cost_summary.total_tokens);

    // An invoke on the fork: the model sees the copied history and the new message, nothing of the rest.
    const seen = llm.requests.length;
    await say(ws, neuronId, `other ${nonce}`, fork.trace_id);
    const sent = llm.requests.slice(seen).find((r) => lastUserText(r).includes(`other ${nonce}`))!;
    expect(sent).toBeDefined();
    const texts = sent.messages.filter((m) => m.role !== 'system').map((m) => [m.role, String(m.content)]);
    expect(texts).toEqual([
      ['user', `first ${nonce}`],
      ['assistant', `reply to first ${nonce}`],
      ['user', `other ${nonce}`],
    ]);
    expect((await messagesOf(ws, fork.trace_id)).map((m) => m.content.content)).toEqual([
      `first ${nonce}`,
      `reply to first ${nonce}`,
      `other ${nonce}`,
      `reply to other ${nonce}`,
    ]);

    // The original is as it was.
    expect(await messagesOf(ws, traceId)).toEqual(original);
    const after = Trace.parse((await app.get(`/v1/traces/${traceId}`, ws.key)).body.trace);
    expect(after.message_count).toBe(4);
    expect(after.forked_from).toBeUndefined();
    expect(after.cost_summary).toEqual(originalTrace.cost_summary);
  });

  it('400 for an engram of another trace or none and a missing field; 404 for another workspace', async () => {
    const ws = await buildWorkspace(app);
    const neuronId = await createNeuron(ws, 'forker-errors');
    llm.setDefault(() => ({ text: 'ok' }));
    const a = await say(ws, neuronId, `a ${randomUUID()}`);
    const b = await say(ws, neuronId, `b ${randomUUID()}`);
    const [ofB] = await messagesOf(ws, b);

    const wrong = await app.post(`/v1/traces/${a}/fork`, ws.key, { at_engram_id: ofB.id });
    expect(wrong.status).toBe(400);
    expect(String(wrong.body.message)).toMatch(/^at_engram_id/);
    const none = await app.post(`/v1/traces/${a}/fork`, ws.key, { at_engram_id: randomUUID() });
    expect(none.status).toBe(400);
    const missing = await app.post(`/v1/traces/${a}/fork`, ws.key, {});
    expect(missing.status).toBe(400);
    expect(String(missing.body.message)).toMatch(/at_engram_id/);

    const other = await buildWorkspace(app);
    const [ofA] = await messagesOf(ws, a);
    expect((await app.post(`/v1/traces/${a}/fork`, other.key, { at_engram_id: ofA.id })).status).toBe(404);
    expect((await app.post(`/v1/traces/${randomUUID()}/fork`, ws.key, { at_engram_id: ofA.id })).status).toBe(404);
    expect((await messagesOf(ws, a)).length).toBe(2);
  });
});
