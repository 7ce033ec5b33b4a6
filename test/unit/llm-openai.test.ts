import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LlmError } from '../../src/llm/errors.js';
import { createOpenAIProvider } from '../../src/llm/openai.js';
import { createModelRegistry } from '../../src/llm/registry.js';
import type { ChatProvider } from '../../src/llm/types.js';
import { lastUserText, startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';

// The scripted server listens on 127.0.0.1 only: the real openai SDK adapter is exercised over
// real HTTP/SSE without any external service.
let server: ScriptedOpenAI;
let openai: ChatProvider;

beforeAll(async () => {
  server = await startScriptedOpenAI();
  openai = createOpenAIProvider({ baseURL: server.baseURL });
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.requests.length = 0;
});

const user = (content: string) => [{ role: 'user' as const, content }];

describe('openai provider against the scripted server', () => {
  it('a stream dropped mid-answer is a retryable failure, never a short answer', async () => {
    server.script([{ chunks: ['a ', 'b ', 'c ', 'd '], disconnectAfterChunks: 2 }]);
    const seen: string[] = [];
    const err = await openai
      .chat({ model: 'scripted-model', messages: user('hi') }, (t) => void seen.push(t))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect((err as LlmError).retryable).toBe(true);
    expect(seen.length).toBeLessThanOrEqual(2); // what arrived before the drop, at most
  });

  it('a 429 carries the Retry-After the provider asked for', async () => {
    server.script([{ status: 429, headers: { 'retry-after': '3' } }]);
    const err = await openai.chat({ model: 'scripted-model', messages: user('hi') }).catch((e: unknown) => e);
    expect(err).toMatchObject({ retryable: true, status: 429, retryAfterMs: 3000 });
  });

  it('streams tokens in order, awaiting the sink, and returns the same text', async () => {
    const chunks = ['Hel', 'lo', ', ', 'wor', 'ld', '!'];
    server.script([{ chunks, usage: { prompt_tokens: 12, completion_tokens: 6 } }]);
    const seen: string[] = [];
    let inSink = false;
    const res = await openai.chat({ model: 'scripted-model', messages: user('hi') }, async (t) => {
      expect(inSink).toBe(false); // never called again before the previous call settled
      inSink = true;
      await new Promise((r) => setTimeout(r, 2));
      seen.push(t);
      inSink = false;
    });
    expect(seen).toEqual(chunks);
    expect(res.text).toBe('Hello, world!');
    expect(res).toMatchObject({ finishReason: 'stop', provider: 'openai', model: 'scripted-model', toolCalls: [] });
    expect(res.usage).toEqual({ inputTokens: 12, outputTokens: 6, totalTokens: 18, cachedInputTokens: 0 });
    expect(server.requests[0]).toMatchObject({
      model: 'scripted-model',
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('returns the whole text without a sink', async () => {
    server.script([{ text: 'just the answer' }]);
    const res = await openai.chat({ model: 'scripted-model', messages: user('hi') });
    expect(res.text).toBe('just the answer');
  });

  it('assembles tool calls whose deltas are split across chunks', async () => {
    const args = { city: 'Zürich', days: 3, units: { temp: 'C' } };
    server.script([
      {
        text: 'Checking.',
        toolCalls: [
          { name: 'get_weather', arguments: args },
          { name: 'noop', arguments: {} },
        ],
      },
    ]);
    const res = await openai.chat({
      model: 'scripted-model',
      messages: user('weather?'),
      tools: [
        {
          name: 'get_weather',
          description: 'Weather by city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
    });
    expect(res.finishReason).toBe('tool_calls');
    expect(res.text).toBe('Checking.');
    expect(res.toolCalls).toHaveLength(2);
    expect(res.toolCalls[0]).toMatchObject({ name: 'get_weather' });
    expect(res.toolCalls[0].id).toMatch(/^call_/);
    expect(JSON.parse(res.toolCalls[0].arguments)).toEqual(args);
    expect(JSON.parse(res.toolCalls[1].arguments)).toEqual({});
    expect(server.requests[0].tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather by city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ]);
  });

  it('maps a tool round trip, options and json mode onto the request', async () => {
    server.script([{ text: '{"ok":true}' }]);
    await openai.chat({
      model: 'scripted-model',
      temperature: 0.2,
      maxTokens: 50,
      responseFormat: 'json',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'q', name: 'ann' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' }] },
        { role: 'tool', content: 'result text', toolCallId: 'call_1', name: 'lookup' },
      ],
    });
    expect(server.requests[0]).toMatchObject({
      temperature: 0.2,
      max_tokens: 50, // a custom baseURL gets the widely supported field
      response_format: { type: 'json_object' },
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'q', name: 'ann' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'result text' },
      ],
    });
  });

  it('structured output (jsonSchema) becomes response_format json_schema, strict', async () => {
    server.script([{ text: '{"names":[]}' }]);
    const schema = {
      type: 'object',
      properties: { names: { type: 'array', items: { type: 'string' } } },
      required: ['names'],
      additionalProperties: false,
    };
    await openai.chat({
      model: 'scripted-model',
      responseFormat: 'json',
      jsonSchema: { name: 'people', schema },
      messages: user('who?'),
    });
    expect(server.requests.at(-1)?.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'people', schema, strict: true },
    });
  });

  it('estimates usage at ceil(chars/4) when the server sends none', async () => {
    server.script([{ text: 'abcdefgh', omitUsage: true }]);
    const res = await openai.chat({ model: 'scripted-model', messages: user('12345') });
    expect(res.usage).toEqual({ inputTokens: 2, outputTokens: 2, totalTokens: 4, cachedInputTokens: 0 });
  });

  it('turns an error status into a thrown LlmError (4xx not retryable, 429/5xx retryable)', async () => {
    server.script([{ status: 400, errorMessage: 'bad model' }, { status: 429 }, { status: 503 }]);
    const err400 = await openai.chat({ model: 'x', messages: user('a') }).catch((e: unknown) => e);
    expect(err400).toBeInstanceOf(LlmError);
    expect(err400).toMatchObject({ status: 400, retryable: false, provider: 'openai' });
    expect((err400 as Error).message).toContain('bad model');
    await expect(openai.chat({ model: 'x', messages: user('a') })).rejects.toMatchObject({
      status: 429,
      retryable: true,
    });
    await expect(openai.chat({ model: 'x', messages: user('a') })).rejects.toMatchObject({
      status: 503,
      retryable: true,
    });
    expect(server.requests).toHaveLength(3); // maxRetries 0: one request per call, Temporal retries
  });

  it('a connection failure is a retryable LlmError without status', async () => {
    const dead = createOpenAIProvider({ baseURL: 'http://127.0.0.1:1/v1' });
    await expect(dead.chat({ model: 'x', messages: user('a') })).rejects.toMatchObject({
      name: 'LlmError',
      status: undefined,
      retryable: true,
    });
  });

  it('aborts mid-stream through the signal with an AbortError', async () => {
    server.script([{ text: 'one two three four five six seven eight', delayMsPerChunk: 30 }]);
    const ac = new AbortController();
    const seen: string[] = [];
    const run = openai.chat({ model: 'scripted-model', messages: user('go'), signal: ac.signal }, (t) => {
      seen.push(t);
      if (seen.length === 2) ac.abort();
    });
    const err = await run.catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'AbortError', retryable: false, provider: 'openai' });
    expect(err).not.toBeInstanceOf(LlmError); // a cancellation must not be mapped to a failure
    expect(seen).toHaveLength(2);
    await expect.poll(() => server.disconnects).toBeGreaterThan(0);
  });

  it('an abort while waiting for the next chunk is an AbortError, not a partial answer', async () => {
    server.script([{ text: 'one two three four', delayMsPerChunk: 150 }]);
    await expect(
      openai.chat({ model: 'scripted-model', messages: user('go'), signal: AbortSignal.timeout(400) }),
    ).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('aborts a request the server has not answered yet', async () => {
    server.script([{ text: 'late', hangMs: 5_000 }]);
    const started = Date.now();
    await expect(
      openai.chat({ model: 'scripted-model', messages: user('go'), signal: AbortSignal.timeout(100) }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('serves concurrent calls by request content through setDefault', async () => {
    server.setDefault((body) => ({ text: `answer to ${lastUserText(body)}`, delayMsPerChunk: 5 }));
    const names = ['a', 'b', 'c', 'd'];
    const results = await Promise.all(
      names.map((n) => openai.chat({ model: 'scripted-model', messages: user(n) }, () => undefined)),
    );
    expect(results.map((r) => r.text)).toEqual(names.map((n) => `answer to ${n}`));
  });

  it('the registry routes openai/* to this endpoint', async () => {
    server.script([{ text: 'via registry' }]);
    const reg = createModelRegistry({ defaultProvider: 'local', openai: { baseURL: server.baseURL } });
    const { provider, model, id } = reg.resolve('openai/scripted-model');
    expect(id).toBe('openai/scripted-model');
    expect((await provider.chat({ model, messages: user('x') })).text).toBe('via registry');
  });

  it('also answers non-streaming requests and lists models', async () => {
    server.script([{ text: 'plain', toolCalls: [{ name: 't', arguments: { a: 1 } }] }]);
    const res = await fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    });
    const body = (await res.json()) as {
      choices: { message: { content: string; tool_calls: { function: { arguments: string } }[] } }[];
    };
    expect(body.choices[0].message.content).toBe('plain');
    expect(JSON.parse(body.choices[0].message.tool_calls[0].function.arguments)).toEqual({ a: 1 });
    const models = (await (await fetch(`${server.baseURL}/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['scripted-model']);
  });
});
