import { LlmAbortError, LlmError } from '../llm/errors.js';
import type { ModelRegistry, ResolvedModel } from '../llm/registry.js';
import type { RunSummary } from '../temporal/definitions.js';

/**
 * Model fallbacks (docs/neurons.md, "Model fallbacks"): the model-side half. The loop over the
 * chain is the workflow's (workflows/runs/neuron-run.ts, `answerTurn`): it asks the `modelTurn`
 * activity for model 0, and when that activity fails after its retries with a model failure,
 * asks again for the next model. This module decides, inside one attempt, which model the attempt
 * calls and which of its failures should not wait for the retries: a model with a fallback after
 * it moves on at once when it refuses for good (4xx: unknown model, bad key, a request it will not
 * take), when its Retry-After exceeds the run's patience, and when it does not start answering by
 * the first-token deadline.
 */

/** The models a run may call, in order: its model, then its fallbacks. */
const chainOf = (run: Pick<RunSummary, 'model' | 'fallbackModels'>): string[] => [
  run.model,
  ...(run.fallbackModels ?? []),
];

/** The model an attempt calls (`index` into the chain, clamped), and whether one comes after it. */
export function modelOf(
  models: Pick<ModelRegistry, 'resolve'>,
  run: Pick<RunSummary, 'model' | 'fallbackModels'>,
  index = 0,
): { resolved: ResolvedModel; hasNext: boolean } {
  const chain = chainOf(run);
  const i = Math.min(Math.max(0, index), chain.length - 1);
  return { resolved: models.resolve(chain[i]!), hasNext: i < chain.length - 1 };
}

/** The first-token deadline of one call: `signal` aborts at `ms` unless `met()` is called first (the first chunk). */
export interface FirstTokenDeadline {
  signal: AbortSignal;
  met: () => void;
  /** Whether the deadline passed (the call was aborted for it). */
  readonly passed: boolean;
  ms: number;
}

export function firstTokenDeadline(ms: number, outer?: AbortSignal): FirstTokenDeadline {
  const own = new AbortController();
  let passed = false;
  const timer = setTimeout(() => {
    passed = true;
    own.abort(new Error(`no first token within ${ms} ms`));
  }, ms);
  return {
    signal: outer ? AbortSignal.any([outer, own.signal]) : own.signal,
    met: () => clearTimeout(timer),
    get passed() {
      return passed;
    },
    ms,
  };
}

/**
 * A failure of a model that has a fallback after it, as the activity should report it: failures
 * that retrying this model cannot mend soon become non-retryable (the workflow then asks the next
 * model at once); the rest stay as they are (retried, then the next model). A cancellation of the
 * activity passes through untouched.
 */
export function failover(
  modelId: string,
  err: unknown,
  o: { deadline?: FirstTokenDeadline; signal?: AbortSignal; patienceMs: number },
): unknown {
  const { deadline, patienceMs } = o;
  const provider = modelId.split('/')[0]!;
  if (o.signal?.aborted) return err; // the activity itself was cancelled
  if (deadline?.passed && (err instanceof LlmAbortError || err instanceof LlmError))
    return new LlmError(provider, `${modelId}: no first token within ${deadline.ms} ms`, { retryable: false });
  if (!(err instanceof LlmError)) return err;
  if (err.retryAfterMs !== undefined && err.retryAfterMs > patienceMs)
    return new LlmError(
      provider,
      `${err.message} (asked to wait ${Math.ceil(err.retryAfterMs / 1000)} s, longer than the run waits for a model that has a fallback)`,
      { status: err.status, retryable: false, cause: err },
    );
  return err;
}
