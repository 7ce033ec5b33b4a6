import { describe, expect, it } from 'vitest';
import { encodeBlob } from '../../src/kernel/store/codec.js';
import {
  assertJsonDepth,
  JSON_MAX_DEPTH,
  nestsDeeperThan,
  STORED_JSON_MAX_DEPTH,
} from '../../src/kernel/json-depth.js';

const nest = (n: number, leaf: unknown = 1): unknown => {
  let v = leaf;
  for (let i = 0; i < n; i++) v = i % 2 ? [v] : { a: v };
  return v;
};

describe('JSON depth', () => {
  it('counts objects and arrays as levels, scalars as none', () => {
    expect(nestsDeeperThan(1, 0)).toBe(false);
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan({ a: [] }, 1)).toBe(true);
    expect(nestsDeeperThan({ a: [], b: 'x' }, 2)).toBe(false);
    expect(nestsDeeperThan(nest(JSON_MAX_DEPTH), JSON_MAX_DEPTH)).toBe(false);
    expect(nestsDeeperThan(nest(JSON_MAX_DEPTH + 1), JSON_MAX_DEPTH)).toBe(true);
    // Wide and shallow is fine; a value far deeper than the stack allows is walked without recursion.
    expect(nestsDeeperThan({ xs: Array.from({ length: 10_000 }, (_, i) => ({ i })) }, 3)).toBe(false);
    expect(nestsDeeperThan(nest(1_000_000), JSON_MAX_DEPTH)).toBe(true);
  });

  it('names the top-level field of a request value, or the value itself when it is an array', () => {
    expect(() => assertJsonDepth({ ok: nest(10), metadata: nest(10_000) }, 'body')).toThrow(
      'metadata: nested deeper than 64 levels',
    );
    expect(() => assertJsonDepth([nest(10_000)], 'body')).toThrow('body: nested deeper than 64 levels');
    expect(() => assertJsonDepth({ metadata: nest(JSON_MAX_DEPTH - 1) }, 'body')).not.toThrow();
    expect(() => assertJsonDepth({ metadata: nest(JSON_MAX_DEPTH) }, 'body')).toThrow(/^metadata:/);
    expect(() => assertJsonDepth('text', 'body')).not.toThrow();
  });

  it('the codec refuses a stored value nested too deep with a 400 naming its field, never a stack overflow', () => {
    expect(() => encodeBlob(nest(10_000), 'metadata')).toThrow(
      `metadata: nested deeper than ${STORED_JSON_MAX_DEPTH} levels`,
    );
    expect(encodeBlob(nest(STORED_JSON_MAX_DEPTH), 'metadata')).toContain('"a"');
    let status = 0;
    try {
      encodeBlob(nest(10_000));
    } catch (e) {
      status = (e as { status?: number }).status ?? 500;
    }
    expect(status).toBe(400);
  });
});
