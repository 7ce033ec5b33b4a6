import { describe, expect, it } from 'vitest';
import { MapNodeData, PathwayNodeData, mapConcurrency } from '../../src/pathways/graph.js';
import { validateGraph } from '../../src/pathways/validate.js';

const N1 = '11111111-1111-4111-8111-111111111111';
const P1 = '33333333-3333-4333-8333-333333333333';
const P2 = '44444444-4444-4444-8444-444444444444';

const graphOf = (type: string, data: Record<string, unknown>) => ({
  nodes: [
    { id: 's', type: 'start' },
    { id: 'x', type, data },
    { id: 'o', type: 'output' },
  ],
  edges: [
    { source: 's', target: 'x' },
    { source: 'x', target: 'o' },
  ],
});
const refs = { neuronIds: new Set([N1]), pathwayIds: new Set([P1, P2]) };

describe('pathway and map node data', () => {
  it('a pathway node needs a pathway UUID; version, input and the policy keys are optional; unknown keys are named', () => {
    expect(PathwayNodeData.safeParse({ pathway_id: P1 }).success).toBe(true);
    expect(
      PathwayNodeData.safeParse({
        pathway_id: P1,
        version: 2,
        input: '{ "q": last }',
        retry: { max_attempts: 3, initial_interval_ms: 100, backoff: 2 },
        on_error: 'continue',
      }).success,
    ).toBe(true);
    expect(validateGraph(graphOf('pathway', {}), refs).errors.join('\n')).toContain('data.pathway_id: missing');
    const unknown = validateGraph(graphOf('pathway', { pathway_id: P1, inputs: 'x' }), refs).errors.join('\n');
    expect(unknown).toMatch(/node "x" \(pathway\): data: .*"inputs"/);
    const retry = validateGraph(graphOf('pathway', { pathway_id: P1, retry: { max_attempts: 11 } }), refs);
    expect(retry.errors.join('\n')).toContain('data.retry.max_attempts');
  });

  it('a foreign pathway, or the pathway itself, is an error naming the node', () => {
    const foreign = '55555555-5555-4555-8555-555555555555';
    expect(validateGraph(graphOf('pathway', { pathway_id: foreign }), refs).errors).toEqual([
      `node "x" (pathway): data.pathway_id: foreign or missing pathway "${foreign}" (not in this workspace and brain)`,
    ]);
    const self = validateGraph(graphOf('map', { items: 'input.list', pathway_id: P1 }), {
      ...refs,
      selfPathwayId: P1,
    });
    expect(self.errors).toEqual([
      `node "x" (map): data.pathway_id: a pathway must not run itself ("${P1}" is this pathway)`,
    ]);
    expect(validateGraph(graphOf('pathway', { pathway_id: P2 }), { ...refs, selfPathwayId: P1 }).valid).toBe(true);
  });

  it('a map runs exactly one of a neuron or a pathway, with the fields of that kind', () => {
    expect(MapNodeData.safeParse({ items: 'input.list', neuron_id: N1, message: '{{ item }}' }).success).toBe(true);
    expect(MapNodeData.safeParse({ items: 'input.list', pathway_id: P1, input: 'item', version: 1 }).success).toBe(
      true,
    );
    const both = validateGraph(graphOf('map', { items: 'x', neuron_id: N1, pathway_id: P1 }), refs).errors.join('\n');
    expect(both).toContain('exactly one of neuron_id');
    expect(validateGraph(graphOf('map', { items: 'x' }), refs).errors.join('\n')).toContain('exactly one of neuron_id');
    const wrong = validateGraph(graphOf('map', { items: 'x', neuron_id: N1, input: 'item' }), refs).errors.join('\n');
    expect(wrong).toContain('data.input: input is for a map over a pathway');
    const tooMany = validateGraph(graphOf('map', { items: 'x', neuron_id: N1, concurrency: 51 }), refs);
    expect(tooMany.errors.join('\n')).toContain('data.concurrency');
    const noItems = validateGraph(graphOf('map', { neuron_id: N1 }), refs).errors.join('\n');
    expect(noItems).toContain('data.items: missing');
    const foreign = '66666666-6666-4666-8666-666666666666';
    expect(validateGraph(graphOf('map', { items: 'x', neuron_id: foreign }), refs).errors.join('\n')).toContain(
      'foreign or missing neuron',
    );
  });

  it("map's items, input and message are checked as expressions and templates", () => {
    const bad = validateGraph(graphOf('map', { items: 'input.(', neuron_id: N1, message: '{{ item. }}' }), refs);
    expect(bad.errors.some((m) => m.startsWith('node "x" (map): data.items:'))).toBe(true);
    expect(bad.errors.some((m) => m.startsWith('node "x" (map): data.message: in {{'))).toBe(true);
    const badInput = validateGraph(graphOf('pathway', { pathway_id: P1, input: '{ "a": ' }), refs);
    expect(badInput.errors.some((m) => m.startsWith('node "x" (pathway): data.input:'))).toBe(true);
  });

  it('concurrency defaults to 4 and is clamped to 1..50', () => {
    expect(mapConcurrency({})).toBe(4);
    expect(mapConcurrency({ concurrency: 2 })).toBe(2);
    expect(mapConcurrency({ concurrency: 500 })).toBe(50);
    expect(mapConcurrency({ concurrency: 0 })).toBe(1);
  });
});
