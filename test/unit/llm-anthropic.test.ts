import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../src/llm/anthropic.js';
import type { ChatProvider } from '../../src/llm/types.js';

// The real Anthropic API is out of reach here; this loopback fake replays the Messages API event
// stream as documented, so the adapter's request shaping and event folding run through the real
// SDK. It checks our mapping, not Anthropic's behaviour.
type Event = Record<string, unknown> & { type: string };
let server: Server;
let anthropic: ChatProvider;
const received: { body: Record<string, unknown>; credential: string | undefined }[] = [];
let next: { status?: number; events?: Event[] } = {};

const TOOL_STREAM: Event[] = [
  {
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude-sonnet-4',
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 25, output_tokens: 1, cache_read_input_tokens: 5 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'ping' },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'check.' } },
  { type: 'content_block_stop', index: 0 },
  {
    type: 'content_block_start',
    index: 1,
    content_block: { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: {} },
  },
  { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city": "Par' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'is"}' } },
  { type: 'content_block_stop', index: 1 },
  { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 15 } },
  { type: 'message_stop' },
];

beforeAll(async () => {
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (p: Buffer) => parts.push(p));
    req.on('end', () => {
      received.push({
        body: JSON.parse(Buffer.concat(parts).toString()) as Record<string, unknown>,
        credential: (req.headers['x-api-key'] as string | undefined) ?? req.headers.authorization,
      });
      if (next.status) {
        res.writeHead(next.status, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'model: not found' } }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const e of next.events ?? []) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  anthropic = createAnthropicProvider({
    apiKey: 'sk-ant-test',
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('anthropic provider (loopback fake of the Messages event stream)', () => {
  it('streams text, assembles tool_use input and reads usage', async () => {
    next = { events: TOOL_STREAM };
    const tokens: string[] = [];
    const res = await anthropic.chat(
      { model: 'claude-sonnet-4', messages: [{ role: 'user', content: 'weather?' }] },
      (t) => void tokens.push(t),
    );
    expect(tokens).toEqual(['Let me ', 'check.']);
    expect(res.text).toBe('Let me check.');
    expect(res.toolCalls).toEqual([{ id: 'toolu_01', name: 'get_weather', arguments: '{"city": "Paris"}' }]);
    expect(res).toMatchObject({ finishReason: 'tool_use', provider: 'anthropic', model: 'claude-sonnet-4' });
    expect(res.usage).toEqual({ inputTokens: 30, outputTokens: 15, totalTokens: 45, cachedInputTokens: 5 });
    // SDK 1.x sends the key as `Authorization: Bearer`; older ones used x-api-key
    expect(received.at(-1)?.credential).toMatch(/^(Bearer )?sk-ant-test$/);
  });

  it('shapes system, tool calls, tool results, tools and json mode as the API wants them', async () => {
    next = { events: TOOL_STREAM };
    await anthropic.chat({
      model: 'claude-sonnet-4',
      maxTokens: 100,
      responseFormat: 'json',
      tools: [
        {
          name: 'get_weather',
          description: 'Weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: 'Checking.',
          toolCalls: [
            { id: 'toolu_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
            { id: 'toolu_b', name: 'get_weather', arguments: '{"city":"Rome"}' },
          ],
        },
        { role: 'tool', toolCallId: 'toolu_a', content: 'sunny' },
        { role: 'tool', toolCallId: 'toolu_b', content: 'rain' },
      ],
    });
    const body = received.at(-1)?.body;
    expect(body).toMatchObject({
      model: 'claude-sonnet-4',
      max_tokens: 100,
      stream: true,
      tools: [
        {
          name: 'get_weather',
          description: 'Weather',
          input_schema: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'weather in Paris and Rome?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: { city: 'Rome' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_a', content: 'sunny' },
            { type: 'tool_result', tool_use_id: 'toolu_b', content: 'rain' },
          ],
        },
      ],
    });
    expect(body?.system).toMatch(/^Be brief\.\n\nRespond with a single JSON object/);
  });

  it('structured output (jsonSchema): the schema goes into the system instruction, since the Messages API has no schema mode', async () => {
    next = { events: TOOL_STREAM };
    const schema = {
      type: 'object',
      properties: { names: { type: 'array', items: { type: 'string' } } },
      required: ['names'],
      additionalProperties: false,
    };
    await anthropic.chat({
      model: 'claude-sonnet-4',
      jsonSchema: { name: 'people', schema },
      messages: [{ role: 'user', content: 'who?' }],
    });
    const system = String(received.at(-1)?.body.system);
    expect(system).toMatch(/^Respond with a single JSON object/);
    expect(system).toContain(`The JSON object must match this JSON Schema:\n${JSON.stringify(schema)}`);
  });

  it('defaults max_tokens, since the API requires it', async () => {
    next = { events: TOOL_STREAM };
    await anthropic.chat({ model: 'claude-sonnet-4', messages: [{ role: 'user', content: 'x' }] });
    expect(received.at(-1)?.body.max_tokens).toBe(4096);
    expect(received.at(-1)?.body.system).toBeUndefined();
  });

  it('an error status becomes a non-retryable LlmError', async () => {
    next = { status: 404 };
    await expect(anthropic.chat({ model: 'nope', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({
      name: 'LlmError',
      status: 404,
      retryable: false,
      provider: 'anthropic',
    });
  });
});
