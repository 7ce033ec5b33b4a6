import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { JobList } from '../../src/jobs/schemas.js';
import { buildWorkspace } from '../support/app.js';
import { lastUserText } from '../support/scripted-openai.js';
import { usePlatform } from '../support/platform.js';

/**
 * The OpenAI-compatible endpoint (docs/openai-compatible.md) driven by the official clients: the
 * `openai` SDK, the Vercel AI SDK's OpenAI provider and LangChain's ChatOpenAI, each against the
 * real API and worker, with the neuron's model served by the scripted provider.
 */
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
  return r.body as { id: string; name: string };
}

const client = (ws: Ws, key = ws.key) =>
  new OpenAI({
    baseURL: `${app.url}/v1/openai`,
    apiKey: key,
    defaultHeaders: { 'x-brain-id': ws.brainId },
    maxRetries: 0,
  });

/** Replies per user message, so files' tests never take each other's scripted answers. */
function script(
  replies: Record<string, { chunks: string[]; usage: { prompt_tokens: number; completion_tokens: number } }>,
) {
  llm.setDefault((body) => {
    const text = lastUserText(body);
    const key = Object.keys(replies).find((k) => text.includes(k));
    return key ? { ...replies[key], delayMsPerChunk: 10 } : { text: 'unscripted' };
  });
}

describe('OpenAI-compatible endpoint, with the openai SDK', () => {
  it('lists the neurons as models, answers a completion with the usage ledger, and the run is a job', async () => {
    const ws = await buildWorkspace(app);
    const n = await createNeuron(ws, 'oai-helper');
    const openai = client(ws);
    const models = await openai.models.list();
    const ids = models.data.map((m) => m.id);
    expect(ids).toContain('oai-helper');
    expect(models.data.find((m) => m.id === 'oai-helper')).toMatchObject({ object: 'model', owned_by: 'cortex' });

    const nonce = randomUUID();
    script({ [nonce]: { chunks: ['Hello', ' from', ' Cortex'], usage: { prompt_tokens: 21, completion_tokens: 3 } } });
    const res = await openai.chat.completions.create({
      model: 'oai-helper',
      messages: [{ role: 'user', content: `greet ${nonce}` }],
    });
    expect(res.object).toBe('chat.completion');
    expect(res.choices[0].message.content).toBe('Hello from Cortex');
    expect(res.choices[0].finish_reason).toBe('stop');
    expect(res.usage).toEqual({ prompt_tokens: 21, completion_tokens: 3, total_tokens: 24 });
    const jobId = res.id.replace(/^chatcmpl-/, '');

    // The run is a job like any invoke: listed, with the neuron and a trace.
    const jobs = JobList.parse((await app.get('/v1/jobs', ws.key)).body).jobs;
    expect(jobs.find((j) => j.job_id === jobId)).toMatchObject({
      kind: 'neuron',
      status: 'completed',
      neuron_id: n.id,
    });
    // The neuron's own instructions applied; the caller's message is the turn's.
    const sent = llm.requests.find((r) => lastUserText(r).includes(nonce))!;
    expect(sent.messages[0]).toMatchObject({ role: 'system' });
    expect(String(sent.messages[0].content)).toContain('You are oai-helper.');
    expect(lastUserText(sent)).toBe(`greet ${nonce}`);
  });

  it('streams content deltas that join to the reply, then a usage chunk', async () => {
    const ws = await buildWorkspace(app);
    await createNeuron(ws, 'oai-streamer');
    const nonce = randomUUID();
    script({ [nonce]: { chunks: ['One', ', two', ', three.'], usage: { prompt_tokens: 9, completion_tokens: 4 } } });
    const stream = await client(ws).chat.completions.create({
      model: 'oai-streamer',
      messages: [{ role: 'user', content: `count ${nonce}` }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      for (const c of chunk.choices) {
        if (c.delta.content) deltas.push(c.delta.content);
        if (c.finish_reason) finish = c.finish_reason;
      }
      if (chunk.usage) {
        expect(chunk.choices).toEqual([]);
        usage = chunk.usage;
      }
    }
    expect(deltas.join('')).toBe('One, two, three.');
    expect(deltas.length).toBeGreaterThan(1);
    expect(finish).toBe('stop');
    expect(usage).toEqual({ prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 });
  });

  it('earlier messages are context of a new trace; metadata.trace_id continues a trace', async () => {
    const ws = await buildWorkspace(app);
    await createNeuron(ws, 'oai-context');
    const nonce = randomUUID();
    script({ [nonce]: { chunks: ['ok'], usage: { prompt_tokens: 1, completion_tokens: 1 } } });
    const openai = client(ws);
    const { data, response } = await openai.chat.completions
      .create({
        model: 'oai-context',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'My name is Ada.' },
          { role: 'assistant', content: 'Hello Ada.' },
          { role: 'user', content: `What is my name? ${nonce}` },
        ],
      })
      .withResponse();
    expect(data.choices[0].message.content).toBe('ok');
    const folded = lastUserText(llm.requests.filter((r) => lastUserText(r).includes(nonce)).at(-1)!);
    expect(folded).toContain('user: My name is Ada.');
    expect(folded).toContain('assistant: Hello Ada.');
    expect(folded).toContain('system: Be brief.');
    expect(folded.endsWith(`What is my name? ${nonce}`)).toBe(true);

    const traceId = response.headers.get('x-cortex-trace-id')!;
    expect(traceId).toMatch(/^[0-9a-f-]{36}$/);
    const again = `${nonce} again`;
    await openai.chat.completions.create({
      model: 'oai-context',
      messages: [{ role: 'user', content: again }],
      metadata: { trace_id: traceId },
    });
    // The trace's stored history is the context: the earlier turn is sent as messages of their own.
    const second = llm.requests.filter((r) => lastUserText(r) === again).at(-1)!;
    expect(second.messages.filter((m) => m.role === 'user').length).toBe(2);
    const msgs = (await app.get<{ engrams: unknown[] }>(`/v1/traces/${traceId}/messages`, ws.key)).body.engrams;
    expect(msgs.length).toBe(4);
  });

  it('errors are OpenAI errors: unknown model → NotFoundError, bad key → AuthenticationError, bad request → BadRequestError', async () => {
    const ws = await buildWorkspace(app);
    await createNeuron(ws, 'oai-errors');
    const err = await client(ws)
      .chat.completions.create({ model: 'no-such-neuron', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).status).toBe(404);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');

    const bad = await client(ws, 'sk-not-a-key')
      .models.list()
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((bad as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');

    const invalid = await client(ws)
      .chat.completions.create({ model: 'oai-errors', messages: [{ role: 'assistant', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(OpenAI.BadRequestError);
    expect((invalid as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages');

    // The raw body is OpenAI's shape, never the platform's { message, code }.
    const raw = await app.post('/v1/openai/chat/completions', ws.key, { model: 'oai-errors' });
    expect(raw.status).toBe(400);
    expect(raw.body).toEqual({
      error: { message: expect.any(String), type: 'invalid_request_error', param: 'messages', code: null },
    });
    // Other routes keep the platform's error body.
    expect((await app.get('/v1/jobs/not-a-job/status', ws.key)).body).toMatchObject({ code: expect.any(String) });
  });

  it('a pathway as the model: its output is the reply, streaming and not', async () => {
    const ws = await buildWorkspace(app);
    const p = await app.post(
      '/v1/pathways',
      ws.key,
      {
        name: 'oai echo',
        pathway_graph: {
          nodes: [
            { id: 'start', type: 'start' },
            { id: 'out', type: 'output', data: { value: '"echo: " & input.message' } },
          ],
          edges: [{ id: 'e1', source: 'start', target: 'out' }],
        },
      },
      ws.brainHeaders,
    );
    expect(p.status, p.text).toBe(201);
    const model = `pathway:${String(p.body.id)}`;
    const openai = client(ws);
    // Listed by its slug (execute's resolution); the id works too.
    expect((await openai.models.list()).data.map((m) => m.id)).toContain('pathway:oai-echo');
    const res = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'ping' }] });
    expect(res.choices[0].message.content).toBe('echo: ping');
    expect(res.usage?.total_tokens).toBe(0);
    const byName = await openai.chat.completions.create({
      model: 'pathway:oai echo',
      messages: [{ role: 'user', content: 'pong' }],
      stream: true,
    });
    let text = '';
    for await (const c of byName) text += c.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: pong');
    const bySlug = await openai.chat.completions.create({
      model: 'pathway:oai-echo',
      messages: [{ role: 'user', content: 'slug' }],
    });
    expect(bySlug.choices[0].message.content).toBe('echo: slug');
  });
});

describe('OpenAI-compatible endpoint, with the Vercel AI SDK and LangChain', () => {
  it('AI SDK generateText and streamText', async () => {
    const { createOpenAI } = await import('@ai-sdk/openai');
    const { generateText, streamText } = await import('ai');
    const ws = await buildWorkspace(app);
    await createNeuron(ws, 'oai-vercel');
    const nonce = randomUUID();
    script({ [nonce]: { chunks: ['Vercel', ' says', ' hi'], usage: { prompt_tokens: 5, completion_tokens: 3 } } });
    const provider = createOpenAI({
      baseURL: `${app.url}/v1/openai`,
      apiKey: ws.key,
      headers: { 'x-brain-id': ws.brainId },
    });
    const gen = await generateText({ model: provider.chat('oai-vercel'), prompt: `hi ${nonce}`, maxRetries: 0 });
    expect(gen.text).toBe('Vercel says hi');
    expect(gen.usage).toMatchObject({ inputTokens: 5, outputTokens: 3, totalTokens: 8 });

    const streamed = streamText({ model: provider.chat('oai-vercel'), prompt: `again ${nonce}`, maxRetries: 0 });
    const parts: string[] = [];
    for await (const t of streamed.textStream) parts.push(t);
    expect(parts.join('')).toBe('Vercel says hi');
    expect(await streamed.usage).toMatchObject({ inputTokens: 5, outputTokens: 3 });
  });

  it('LangChain ChatOpenAI invoke and stream', async () => {
    const { ChatOpenAI } = await import('@langchain/openai');
    const ws = await buildWorkspace(app);
    await createNeuron(ws, 'oai-langchain');
    const nonce = randomUUID();
    script({ [nonce]: { chunks: ['Lang', 'Chain', ' here'], usage: { prompt_tokens: 7, completion_tokens: 3 } } });
    const chat = new ChatOpenAI({
      model: 'oai-langchain',
      apiKey: ws.key,
      maxRetries: 0,
      configuration: { baseURL: `${app.url}/v1/openai`, defaultHeaders: { 'x-brain-id': ws.brainId } },
    });
    const msg = await chat.invoke(`hello ${nonce}`);
    expect(msg.content).toBe('LangChain here');
    expect(msg.usage_metadata).toMatchObject({ input_tokens: 7, output_tokens: 3, total_tokens: 10 });

    let text = '';
    for await (const chunk of await chat.stream(`stream ${nonce}`)) text += String(chunk.content);
    expect(text).toBe('LangChain here');
  });
});
