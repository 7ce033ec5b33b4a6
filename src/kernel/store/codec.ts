import { nestsDeeperThan, STORED_JSON_MAX_DEPTH, tooDeep } from '../json-depth.js';

/**
 * Client-supplied free-form JSON is stored as a JSON string (docs/decisions.md, "FerretDB and MongoDB"):
 * FerretDB 1.x refuses nested arrays, keys with '.' or a leading '$', NaN and NUL, so a blob
 * goes in intact as text on both MongoDB and FerretDB and comes back as it was sent.
 * The API never filters inside a blob; fields the platform queries are first-class.
 */
export type Blob = string & { readonly __blob: unique symbol };

/**
 * A value as its stored text. `field` names it in the 400 for a value nested deeper than
 * STORED_JSON_MAX_DEPTH (src/kernel/json-depth.ts): encoding one would overflow the stack, a 500.
 */
export function encodeBlob(value: unknown, field = 'value'): Blob {
  if (nestsDeeperThan(value, STORED_JSON_MAX_DEPTH)) throw tooDeep(field, STORED_JSON_MAX_DEPTH);
  return JSON.stringify(value ?? null) as Blob;
}

export function decodeBlob<T = unknown>(blob: string | null | undefined, fallback: T): T {
  if (blob == null || blob === '') return fallback;
  try {
    return JSON.parse(blob) as T;
  } catch {
    return fallback;
  }
}
