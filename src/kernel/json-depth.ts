import { validationError } from './errors.js';

/**
 * How deep a JSON value may nest (objects and arrays; `{}` is one level, `{ "a": [] }` two), in
 * every request body (MCP and the OpenAI-compatible endpoint included) and every value a run
 * produces (an http node's answer). Deeper values are refused with a 400 naming the field (a run's
 * node fails with a clear reason): encoding them would overflow the stack (a 500), and no
 * legitimate document needs more.
 */
export const JSON_MAX_DEPTH = 64;

/**
 * How deep a stored free-form field may nest (src/kernel/store/codec.ts): the request bound plus room for
 * the envelopes the platform puts around a request's values (a firing's trigger, a job's result),
 * so a body that was accepted is never refused half-way through storing it.
 */
export const STORED_JSON_MAX_DEPTH = JSON_MAX_DEPTH + 16;

/** Whether `value` nests deeper than `max` levels. Iterative: a value of any depth is walked without recursion. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop() as object;
    const depth = depths.pop()!;
    if (depth > max) return true;
    const children: unknown[] = Array.isArray(v) ? v : Object.values(v);
    for (const c of children) {
      if (c !== null && typeof c === 'object') {
        values.push(c);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** The refusal of a value nested too deep, naming its field. */
export const tooDeep = (field: string, max = JSON_MAX_DEPTH) =>
  validationError(`${field}: nested deeper than ${max} levels`);

/**
 * Refuses (400) a request value nested deeper than `max`, naming the top-level field where it
 * is (`metadata: nested deeper than 64 levels`), or `what` when the value itself is an array.
 */
export function assertJsonDepth(value: unknown, what: string, max = JSON_MAX_DEPTH): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    if (nestsDeeperThan(value, max)) throw tooDeep(what, max);
    return;
  }
  for (const [k, v] of Object.entries(value)) if (nestsDeeperThan(v, max - 1)) throw tooDeep(k, max);
}
