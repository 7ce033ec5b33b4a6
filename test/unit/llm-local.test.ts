import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/kernel/errors.js';
import { createLocalProvider, LOCAL_ECHO_PREFACE } from '../../src/llm/local.js';
import { costOf, DEFAULT_PRICES, priceOf } from '../../src/llm/pricing.js';
import { createModelRegistry } from '../../src/llm/registry.js';
import type { ChatProvider, ChatRequest, ChatResult } from '../../src/llm/types.js';

const ask = (model: string, text: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model,
  messages: [
    { role: 'system', content: 'You are helpful.' },
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: 'first answer' },
    { role: 'user', content: text },
  ],
  ...extra,
});

describe('local provider', () => {
  const local = createLocalProvider();

  it('local/echo answers the last user message behind a plain preface, streamed word by word', async () => {
    const tokens: string[] = [];
    const res = await local.chat(ask('echo', 'hello there  world'), async (t) => {
      await new Promise((r) => setTimeout(r, 1)); // a slow sink is awaited, not overtaken
      tokens.push(t);
    });
    expect(res.text).toBe(`${LOCAL_ECHO_PREFACE}hello there  world`);
    expect(tokens).toEqual(['[local/echo] ', 'hello ', 'there  ', 'world']);
    expect(tokens.join('')).toBe(res.text);
    expect(res).toMatchObject({ toolCalls: [], finishReason: 'stop', provider: 'local', model: 'echo' });
  });

  it('counts usage as whitespace-separated words', async () => {
    const res = await local.chat(ask('echo', 'one two three'));
    // input: 3 + 2 + 2 + 3 words; output: "[local/echo]" + 3 words
    expect(res.usage).toEqual({ inputTokens: 10, outputTokens: 4, totalTokens: 14 });
  });

  it('local/json returns a parseable object with the echo', async () => {
    const res = await local.chat(ask('json', 'make "json" of this', { responseFormat: 'json' }));
    expect(JSON.parse(res.text)).toEqual({ echo: 'make "json" of this', model: 'local/json' });
  });

  it('never calls tools, even when offered some', async () => {
    const res = await local.chat(
      ask('echo', 'use a tool', {
        tools: [{ name: 'lookup', description: 'd', parameters: { type: 'object', properties: {} } }],
      }),
    );
    expect(res.toolCalls).toEqual([]);
  });

  it('honours maxTokens by cutting words (finishReason length)', async () => {
    const res = await local.chat(ask('echo', 'a b c d e', { maxTokens: 3 }));
    expect(res.text).toBe('[local/echo] a b ');
    expect(res.finishReason).toBe('length');
  });

  it('answers with an empty echo when there is no user message', async () => {
    const res = await local.chat({ model: 'echo', messages: [{ role: 'system', content: 'x' }] });
    expect(res.text).toBe(LOCAL_ECHO_PREFACE);
  });

  it('rejects an unknown local model with a 400', async () => {
    await expect(local.chat(ask('gpt', 'x'))).rejects.toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
  });

  it('stops when the signal aborts, with an AbortError', async () => {
    const ac = new AbortController();
    const tokens: string[] = [];
    const run = local.chat(ask('echo', 'one two three four', { signal: ac.signal }), (t) => {
      tokens.push(t);
      if (tokens.length === 2) ac.abort();
    });
    await expect(run).rejects.toMatchObject({ name: 'AbortError', retryable: false });
    expect(tokens).toHaveLength(2);
  });
});

describe('model registry', () => {
  it('always has local; resolves provider/model and bare names to the default provider', () => {
    const reg = createModelRegistry({ defaultProvider: 'local' });
    expect(reg.resolve('local/echo')).toMatchObject({ model: 'echo', id: 'local/echo' });
    expect(reg.resolve('local/echo').provider.name).toBe('local');
    expect(reg.resolve('json')).toMatchObject({ model: 'json', id: 'local/json' });
  });

  it('throws a 400 AppError for an unknown or unconfigured provider', () => {
    const reg = createModelRegistry({ defaultProvider: 'local' });
    for (const id of ['nope/model', 'openai/gpt-4o', 'anthropic/claude-sonnet-4']) {
      let err: unknown;
      try {
        reg.resolve(id);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AppError);
      expect(err).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    }
  });

  it('rejects unknown local models and empty model parts', () => {
    const reg = createModelRegistry({ defaultProvider: 'local' });
    expect(() => reg.resolve('local/gpt-4o')).toThrow(/Unknown model "local\/gpt-4o"/);
    expect(() => reg.resolve('local/')).toThrow(/names no model/);
  });

  it('registers openai when a base URL or key is set, anthropic when a key is set', () => {
    expect(
      createModelRegistry({ defaultProvider: 'local', openai: {}, anthropic: {} })
        .list()
        .map((m) => m.provider),
    ).toEqual(['local', 'local']);
    const reg = createModelRegistry({
      defaultProvider: 'openai',
      defaultModel: 'openai/my-served-model',
      openai: { baseURL: 'http://127.0.0.1:1/v1' },
      anthropic: { apiKey: 'sk-ant-test' },
    });
    const list = reg.list();
    expect(list).toContainEqual({ model: 'local/echo', provider: 'local' });
    expect(list).toContainEqual({ model: 'local/json', provider: 'local' });
    expect(list).toContainEqual({ model: 'openai/gpt-4o-mini', provider: 'openai' });
    expect(list).toContainEqual({ model: 'openai/my-served-model', provider: 'openai' });
    expect(list).toContainEqual({ model: 'anthropic/claude-sonnet-4', provider: 'anthropic' });
    // open-ended providers accept names they do not list; model ids split at the first slash
    expect(reg.resolve('some-model')).toMatchObject({ id: 'openai/some-model' });
    expect(reg.resolve('openai/meta-llama/Llama-3')).toMatchObject({ model: 'meta-llama/Llama-3' });
    expect(reg.resolve('anthropic/claude-3-5-haiku-latest').provider.name).toBe('anthropic');
  });

  it('register() adds or replaces a provider', async () => {
    const reg = createModelRegistry({ defaultProvider: 'local' });
    const fake: ChatProvider = {
      name: 'fake',
      models: () => ['m1'],
      chat: async (req): Promise<ChatResult> => ({
        text: 'hi',
        toolCalls: [],
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        finishReason: 'stop',
        provider: 'fake',
        model: req.model,
      }),
    };
    reg.register('fake', fake);
    const { provider, model } = reg.resolve('fake/anything');
    expect((await provider.chat({ model, messages: [] })).model).toBe('anything');
    expect(reg.list()).toContainEqual({ model: 'fake/m1', provider: 'fake' });
  });
});

describe('pricing', () => {
  it('prices known models per million tokens', () => {
    expect(costOf('openai/gpt-4o-mini', { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toEqual({
      costUsd: 0.75,
      priced: true,
    });
    expect(costOf('anthropic/claude-sonnet-4', { inputTokens: 1000, outputTokens: 2000 }).costUsd).toBeCloseTo(
      0.003 + 0.03,
      10,
    );
  });

  it('prices dated snapshots as their base model, picking the longest base', () => {
    expect(priceOf('openai/gpt-4o-mini-2024-07-18')).toEqual(DEFAULT_PRICES['openai/gpt-4o-mini']);
    expect(priceOf('openai/gpt-4o-2024-08-06')).toEqual(DEFAULT_PRICES['openai/gpt-4o']);
    expect(priceOf('anthropic/claude-sonnet-4-20250514')).toEqual(DEFAULT_PRICES['anthropic/claude-sonnet-4']);
    expect(priceOf('anthropic/claude-3-5-haiku-latest')).toEqual(DEFAULT_PRICES['anthropic/claude-3-5-haiku']);
    expect(priceOf('openai/gpt-4o-audio-preview')).toBeUndefined();
    expect(priceOf('gpt-4.1-mini')).toEqual(DEFAULT_PRICES['openai/gpt-4.1-mini']);
  });

  it('local models are free and priced; unknown models are 0 and unpriced', () => {
    expect(costOf('local/echo', { inputTokens: 5000, outputTokens: 5000 })).toEqual({ costUsd: 0, priced: true });
    expect(costOf('openai/some-self-hosted', { inputTokens: 5000, outputTokens: 5000 })).toEqual({
      costUsd: 0,
      priced: false,
    });
  });

  it('takes an overriding price table', () => {
    const prices = { ...DEFAULT_PRICES, 'openai/my-model': { input: 1, output: 2 } };
    expect(costOf('openai/my-model', { inputTokens: 1_000_000, outputTokens: 500_000 }, prices)).toEqual({
      costUsd: 2,
      priced: true,
    });
  });
});
