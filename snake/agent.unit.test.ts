import { describe, expect, it } from 'vitest';
import { createAgentClient, describeState, parseHeading, redact } from './agent.js';
import { reset } from './state.js';

describe('parseHeading', () => {
  it.each([
    ['up', 'up'],
    ['  Down\n', 'down'],
    ['LEFT', 'left'],
    ['right.', 'right'],
    ['"up"', 'up'],
    ['{"heading":"left"}', 'left'],
    ['{"heading": "RIGHT", "why": "fruit"}', 'right'],
    ['I will go left', 'left'],
    ['left, left', 'left'],
    ['```json\n{"heading":"down"}\n```', 'down'],
  ])('reads %j as %s', (text, heading) => expect(parseHeading(text)).toBe(heading));

  it.each([
    [''],
    ['north'],
    ['diagonal'],
    ['up or down'],
    ['left then right'],
    ['upward'],
    ['{"heading":"north"}'],
    ['{"heading":3}'],
    ['42'],
  ])('rejects %j', (text) => expect(parseHeading(text)).toBeNull());
});

describe('describeState', () => {
  it('names head, fruit, legal and safe moves, and the reply format', () => {
    const text = describeState({ ...reset({ width: 8, height: 8 }), fruit: { x: 6, y: 4 } });
    expect(text).toContain('8x8');
    expect(text).toContain('Head at (4, 4), heading right');
    expect(text).toContain('Fruit: (6, 4)');
    expect(text).toContain('Legal moves: up, right, down.');
    expect(text).toContain('one word: up, down, left or right');
  });
});

describe('redact', () => {
  it('removes every occurrence of the secret', () => {
    expect(redact('a KEY b KEY', 'KEY')).toBe('a [redacted] b [redacted]');
    expect(redact('nothing', undefined)).toBe('nothing');
  });
});

describe('createAgentClient', () => {
  const config = {
    apiUrl: 'http://platform.test',
    apiKey: 'sk-unit-secret',
    brainId: 'brain-1',
    neuron: 'snake-decider',
    agentTimeoutMs: 500,
    pollMs: 10,
  };
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

  it('invokes with the key and brain, polls the job and reads the heading', async () => {
    const seen: { url: string; headers: Headers; body: string }[] = [];
    let polls = 0;
    const fetch = (async (req: Request) => {
      const url = req.url;
      seen.push({ url, headers: req.headers, body: await req.text() });
      if (url.endsWith('/invoke')) return json(202, { job_id: 'j1', status: 'pending', user_engram_id: 'e1' });
      polls++;
      return polls < 3
        ? json(200, { job_id: 'j1', status: 'running' })
        : json(200, { job_id: 'j1', status: 'completed', result: { text: 'Up' } });
    }) as typeof globalThis.fetch;
    const answer = await createAgentClient({ fetch, config }).decide(reset());
    expect(answer).toEqual({ ok: true, heading: 'up', raw: 'Up', job_id: 'j1' });
    expect(seen[0].url).toBe('http://platform.test/v1/neurons/snake-decider/invoke');
    expect(seen[0].headers.get('authorization')).toBe('Bearer sk-unit-secret');
    expect(seen[0].headers.get('x-brain-id')).toBe('brain-1');
    expect(JSON.parse(seen[0].body).data).toEqual(reset());
    expect(seen[1].url).toBe('http://platform.test/v1/jobs/j1/status');
    expect(polls).toBe(3);
  });

  it('fails fast without a key', async () => {
    const fetch = (() => {
      throw new Error('must not be called');
    }) as typeof globalThis.fetch;
    const answer = await createAgentClient({ fetch, config: { ...config, apiKey: undefined } }).decide(reset());
    expect(answer).toMatchObject({ ok: false, failure: 'not_configured' });
  });

  it('scrubs the key from upstream error messages', async () => {
    const fetch = (async () =>
      json(401, { message: 'bad key sk-unit-secret', code: 'AUTH_REQUIRED' })) as typeof globalThis.fetch;
    const answer = await createAgentClient({ fetch, config }).decide(reset());
    expect(answer).toEqual({
      ok: false,
      failure: 'upstream_error',
      reason: 'platform answered 401 to invoke: bad key [redacted]',
    });
  });

  it('times out while the job keeps running', async () => {
    const fetch = (async (req: Request) =>
      req.url.endsWith('/invoke')
        ? json(202, { job_id: 'j2' })
        : json(200, { status: 'running' })) as typeof globalThis.fetch;
    const started = Date.now();
    const answer = await createAgentClient({ fetch, config: { ...config, agentTimeoutMs: 120 } }).decide(reset());
    expect(answer).toEqual({ ok: false, failure: 'timeout', reason: 'no answer within 120 ms', job_id: 'j2' });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
