import { describe, expect, it } from 'vitest';
import { LlmAbortError, LlmError } from '../../src/llm/errors.js';
import { createModelRegistry, resolveFallbacks } from '../../src/llm/registry.js';
import { failover, firstTokenDeadline, modelOf } from '../../src/runs/fallback.js';

/** Which failures of a model with a fallback after it skip its retries (src/runs/fallback.ts). */
describe('model fallbacks: the model side', () => {
  const registry = createModelRegistry({ defaultProvider: 'local', openai: { baseURL: 'http://127.0.0.1:1/v1' } });

  it('resolves the chain and says whether a model comes after', () => {
    const run = { model: 'openai/a', fallbackModels: ['openai/b', 'local/echo'] };
    expect(modelOf(registry, run, 0)).toMatchObject({ resolved: { id: 'openai/a' }, hasNext: true });
    expect(modelOf(registry, run, 2)).toMatchObject({ resolved: { id: 'local/echo' }, hasNext: false });
    expect(modelOf(registry, { model: 'openai/a' })).toMatchObject({ hasNext: false });
    expect(resolveFallbacks(registry, ['echo', 'openai/x'])).toEqual(['local/echo', 'openai/x']);
    expect(() => resolveFallbacks(registry, ['openai/x', 'nope/y'])).toThrow(/fallback_models\[1\].*nope/);
  });

  it('a Retry-After past the patience and a permanent 4xx move on at once; a 5xx is left to the retries', () => {
    const long = new LlmError('openai', 'openai: 429', { status: 429, retryable: true, retryAfterMs: 30_000 });
    const moved = failover('openai/a', long, { patienceMs: 10_000 });
    expect(moved).toBeInstanceOf(LlmError);
    expect((moved as LlmError).retryable).toBe(false);
    expect((moved as LlmError).message).toMatch(/asked to wait 30 s/);
    const short = new LlmError('openai', 'openai: 429', { status: 429, retryable: true, retryAfterMs: 2_000 });
    expect(failover('openai/a', short, { patienceMs: 10_000 })).toBe(short);
    const five = new LlmError('openai', 'openai: 500', { status: 500, retryable: true });
    expect(failover('openai/a', five, { patienceMs: 10_000 })).toBe(five);
  });

  it('a call without a first chunk by the deadline fails as a model failure, not as a cancellation', async () => {
    const deadline = firstTokenDeadline(20);
    await new Promise((r) => setTimeout(r, 40));
    expect(deadline.signal.aborted).toBe(true);
    const err = failover('openai/a', new LlmAbortError('openai'), { deadline, patienceMs: 0 });
    expect(err).toBeInstanceOf(LlmError);
    expect((err as LlmError).retryable).toBe(false);
    expect((err as LlmError).message).toMatch(/no first token within 20 ms/);
    // The activity's own cancellation passes through.
    const cancelled = new AbortController();
    cancelled.abort();
    const abort = new LlmAbortError('openai');
    expect(failover('openai/a', abort, { deadline, signal: cancelled.signal, patienceMs: 0 })).toBe(abort);
    // Met in time: nothing aborts.
    const met = firstTokenDeadline(20);
    met.met();
    await new Promise((r) => setTimeout(r, 40));
    expect(met.signal.aborted).toBe(false);
  });
});
