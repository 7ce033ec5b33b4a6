import { describe, expect, it } from 'vitest';
import { normalizeGraph, predecessors } from '../../console/src/graph.js';
import { applyEntry, emptyRun, stateOf, type Entry } from '../../console/src/run-state.js';

/**
 * What the console's run page shows, folded from job stream entries alone (console/src/run-state.ts):
 * node states through parallel branches, a map's items, a human node's wait and answer, caught
 * errors, the terminal entry, and the reply by the reset rule (docs/streams.md).
 */
const fold = (entries: Entry[]) => entries.reduce((v, e) => applyEntry(v, e), emptyRun());
const start = (node: string, node_type: string, node_index = 0): Entry => ({
  type: 'node_start',
  node,
  node_index,
  node_type,
});
const finish = (node: string, node_type: string, extra: Record<string, unknown> = {}): Entry => ({
  type: 'node_finish',
  node,
  node_type,
  ...extra,
});

describe('run-state', () => {
  it('colours nodes through parallel branches, a map, a human wait and its answer, to the end', () => {
    const v = fold([
      { type: 'status', status: 'running' },
      start('start', 'start'),
      finish('start', 'start'),
      start('a', 'delay'),
      start('b', 'delay'),
    ]);
    expect([stateOf(v, 'a'), stateOf(v, 'b'), stateOf(v, 'join')]).toEqual(['running', 'running', 'pending']);
    applyEntry(v, finish('a', 'delay'));
    expect([stateOf(v, 'a'), stateOf(v, 'b')]).toEqual(['done', 'running']);
    for (const e of [
      finish('b', 'delay'),
      start('m', 'map'),
      { type: 'node_progress', node: 'm', node_type: 'map', done: 1, total: 3 },
    ])
      applyEntry(v, e);
    expect(v.nodes.m).toMatchObject({ state: 'running', items: { done: 1, total: 3 } });
    applyEntry(v, finish('m', 'map'));
    expect(v.nodes.m.items).toEqual({ done: 3, total: 3 });
    applyEntry(v, start('ask', 'human'));
    applyEntry(v, { type: 'waiting', intervention_id: 'i1', options: ['approve', 'reject'] });
    expect(v.nodes.ask).toMatchObject({ state: 'waiting', interventionId: 'i1' });
    expect(v.status).toBe('waiting');
    applyEntry(v, { type: 'intervention_answered', intervention_id: 'i1', action: 'approve' });
    expect(stateOf(v, 'ask')).toBe('running');
    applyEntry(v, finish('ask', 'human', { handle: 'approve' }));
    applyEntry(v, start('out', 'output'));
    applyEntry(v, finish('out', 'output'));
    expect(stateOf(v, 'dropped')).toBe('pending');
    applyEntry(v, { type: 'complete', result: { output: 1 } });
    expect(v.nodes.ask).toMatchObject({ state: 'done', handle: 'approve' });
    expect(stateOf(v, 'out')).toBe('done');
    // A node the ended run never reached was skipped.
    expect(stateOf(v, 'dropped')).toBe('skipped');
    expect(v.status).toBe('completed');
  });

  it('counts visits, keeps a caught error as failed, and fails what was running when the run fails', () => {
    const v = fold([
      start('loop', 'while'),
      finish('loop', 'while', { handle: 'body' }),
      start('loop', 'while'),
      finish('loop', 'while', { handle: 'done' }),
      start('call', 'http'),
      { type: 'node_error', node: 'call', error: 'answered 500', policy: 'continue' },
      finish('call', 'http', { error_policy: 'continue' }),
      start('slow', 'delay'),
      { type: 'error', error: 'cancelled', message: 'Cancelled by user' },
    ]);
    expect(v.nodes.loop).toMatchObject({ state: 'done', visits: 2, handle: 'done' });
    expect(v.nodes.call).toMatchObject({ state: 'failed', error: 'answered 500' });
    expect(v.nodes.slow).toMatchObject({ state: 'failed', error: 'Cancelled by user' });
    expect(v.status).toBe('failed');
  });

  it('names nodes by node_index when a graph has no ids', () => {
    const v = fold([{ type: 'node_start', node_index: 2, node_type: 'transform' }]);
    expect(stateOf(v, '2')).toBe('running');
  });

  it('shows the reply by the reset rule: a reset turn starts over, an older attempt never shows', () => {
    const v = fold([
      { type: 'token', turn: 0, attempt: 1, index: 0, text: 'Hel' },
      { type: 'token', turn: 0, attempt: 1, index: 1, text: 'lo wor' },
      { type: 'reset', turn: 0, attempt: 2 },
      { type: 'token', turn: 0, attempt: 1, index: 2, text: 'ld (stale)' },
      { type: 'token', turn: 0, attempt: 2, index: 0, text: 'Hi ' },
      { type: 'token', turn: 1, attempt: 1, index: 0, text: 'there' },
      { type: 'token', turn: 0, attempt: 2, index: 1, text: 'again, ' },
    ]);
    expect(v.reply).toBe('Hi again, there');
    expect(v.turns.get(0)).toMatchObject({ attempt: 2, retries: 1 });
    expect(v.turns.get(1)).toMatchObject({ attempt: 1, retries: 0 });
    // stream_reset: everything shown is dropped; the whole stream follows.
    applyEntry(v, { type: 'stream_reset', after: '1-0', newest: null });
    expect(v.reply).toBe('');
    expect(v.nodes).toEqual({});
  });

  it('normalizes both graph forms and keeps saved positions only when every node has one', () => {
    const indexed = normalizeGraph({
      nodes: [{ type: 'start' }, { type: 'if', data: { condition: 'x' } }, { type: 'output' }],
      edges: [
        [0, 1],
        [1, 2, 'true'],
      ],
    });
    expect(indexed.nodes.map((n) => n.id)).toEqual(['0', '1', '2']);
    expect(indexed.edges.map((e) => [e.source, e.target, e.handle])).toEqual([
      ['0', '1', undefined],
      ['1', '2', 'true'],
    ]);
    expect(predecessors(indexed, '2')).toEqual(['1']);
    const named = normalizeGraph({
      nodes: [
        { id: 's', type: 'start', position: { x: 0, y: 0 } },
        { id: 'h', type: 'human', position: { x: 0, y: 100 } },
      ],
      edges: [{ source: 's', target: 'h', sourceHandle: 'x' }],
    });
    expect(named.nodes[1].position).toEqual({ x: 0, y: 100 });
    expect(named.edges[0].handle).toBe('x');
    const partly = normalizeGraph({
      nodes: [
        { id: 'a', type: 'start', position: { x: 1, y: 2 } },
        { id: 'b', type: 'end' },
      ],
    });
    expect(partly.nodes.every((n) => n.position === undefined)).toBe(true);
    expect(normalizeGraph('nonsense')).toEqual({ nodes: [], edges: [] });
  });

  it("keeps each node's value from its node_finish entry, the latest visit's", () => {
    const v = fold([start('t', 'transform'), finish('t', 'transform', { value: { total: 5 } })]);
    expect(v.nodes.t.output).toEqual({ total: 5 });
    applyEntry(v, start('t', 'transform'));
    applyEntry(v, finish('t', 'transform', { value: { truncated: true, chars: 9000, preview: '{"big"' } }));
    expect(v.nodes.t.output).toEqual({ truncated: true, chars: 9000, preview: '{"big"' });
    // An entry written before node values were streamed carries none: nothing is invented.
    const old = fold([start('u', 'delay'), finish('u', 'delay')]);
    expect('output' in old.nodes.u).toBe(false);
  });
});
