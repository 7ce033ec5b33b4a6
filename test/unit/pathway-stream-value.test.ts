import { describe, expect, it } from 'vitest';
import { NODE_VALUE_STREAM_CHARS, streamValue } from '../../src/pathways/walk.js';

/** What a node_finish entry carries of a node's value (src/pathways/walk.ts, docs/streams.md). */
describe('streamValue', () => {
  it('carries a value whose JSON fits as it is (undefined as null)', () => {
    expect(streamValue({ total: 5 })).toEqual({ total: 5 });
    expect(streamValue('x'.repeat(NODE_VALUE_STREAM_CHARS - 2))).toBe('x'.repeat(NODE_VALUE_STREAM_CHARS - 2));
    expect(streamValue(undefined)).toBeNull();
  });

  it('bounds a larger one: its size and the start of its JSON', () => {
    const big = { body: 'y'.repeat(NODE_VALUE_STREAM_CHARS) };
    const json = JSON.stringify(big);
    expect(streamValue(big)).toEqual({ truncated: true, chars: json.length, preview: json.slice(0, 1000) });
  });
});
