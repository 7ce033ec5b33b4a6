/**
 * Every form of graph the platform has accepted so far still validates and compiles: pathways
 * stored before the format was documented and enforced keep running. Each fixture is a form a
 * client could store: React Flow exports, index graphs, aliases, JavaScript-style conditions.
 */
import { describe, expect, it } from 'vitest';
import { compileGraph } from '../../src/pathways/compile.js';
import { validateGraph } from '../../src/pathways/validate.js';

const N = '6f1c2d3e-1111-4222-8333-444455556666';

const forms: Record<string, unknown> = {
  'id graph with handles': {
    nodes: [
      { id: 's', type: 'start' },
      { id: 'c', type: 'if', data: { condition: 'input.n > 1' } },
      { id: 'y', type: 'output', data: { value: '"yes"' } },
      { id: 'n', type: 'output' },
    ],
    edges: [
      { id: 'e1', source: 's', target: 'c' },
      { id: 'e2', source: 'c', target: 'y', handle: 'true' },
      { id: 'e3', source: 'c', target: 'n', handle: 'false' },
    ],
  },
  'React Flow export: sourceHandle, positions, labels in data, viewport': {
    nodes: [
      { id: 'start', type: 'input', position: { x: 0, y: 0 }, data: { label: 'Start' }, selected: false },
      { id: 'gate', type: 'if', position: { x: 0, y: 100 }, data: { label: 'Big?', condition: 'input.amount > 100' } },
      { id: 'ok', type: 'output', position: { x: 0, y: 200 }, data: { label: 'Done' } },
      { id: 'end', type: 'end', position: { x: 100, y: 200 }, data: { label: 'Stop' } },
    ],
    edges: [
      { id: 'a', source: 'start', target: 'gate', label: 'go' },
      { id: 'b', source: 'gate', target: 'ok', sourceHandle: 'true' },
      { id: 'c', source: 'gate', target: 'end', sourceHandle: 'false' },
    ],
    viewport: { x: 0, y: 0, zoom: 1 },
  },
  'index graph with explicit terminals': {
    nodes: [
      { type: 'start', data: {} },
      { type: 'transform', data: { expression: 'input.a + input.b' } },
      { type: 'output', data: {} },
    ],
    edges: [
      [0, 1],
      [1, 2],
      [2, -1],
    ],
  },
  'approval alias, options as strings and as objects, expiry': {
    nodes: [
      { id: 's', type: 'start' },
      {
        id: 'h',
        type: 'approval',
        data: {
          title: 'Ship?',
          prompt: 'Ship it?',
          options: ['approve', { label: 'No', value: 'reject' }],
          expires_in_s: 3600,
        },
      },
      { id: 'o', type: 'output' },
    ],
    edges: [
      { source: 's', target: 'h' },
      { source: 'h', target: 'o' },
    ],
  },
  'conditions written as JavaScript': {
    nodes: [
      { id: 's', type: 'start' },
      { id: 'c', type: 'if', data: { condition: 'input.flag == true && !input.done || input.n === 3' } },
      { id: 'w', type: 'while', data: { condition: 'last.n != 3', max_iterations: 5 } },
      { id: 't', type: 'transform', data: { expression: '{ "n": last.n + 1 }' } },
      { id: 'o', type: 'output' },
    ],
    edges: [
      { source: 's', target: 'c' },
      { source: 'c', target: 'w', handle: 'true' },
      { source: 'c', target: 'o', handle: 'false' },
      { source: 'w', target: 't', handle: 'body' },
      { source: 't', target: 'w' },
      { source: 'w', target: 'o', handle: 'done' },
    ],
  },
  'neuron, classify, delay and templates': {
    nodes: [
      { id: 's', type: 'start' },
      { id: 'k', type: 'classify', data: { categories: ['billing', 'tech'], input: '{{ input.text }}', neuron_id: N } },
      { id: 'n', type: 'neuron', data: { neuron_id: N, message: 'About {{ input.text }}' } },
      { id: 'd', type: 'delay', data: { seconds: 1 } },
      { id: 'o', type: 'end', data: { value: 'last' } },
    ],
    edges: [
      { source: 's', target: 'k' },
      { source: 'k', target: 'n', handle: 'billing' },
      { source: 'k', target: 'd', handle: 'tech' },
      { source: 'n', target: 'o' },
      { source: 'd', target: 'o' },
    ],
  },
};

describe('graphs in the forms the platform has accepted', () => {
  it.each(Object.entries(forms))('%s validates and compiles', (_, graph) => {
    const v = validateGraph(graph);
    expect(v.errors).toEqual([]);
    const c = compileGraph(graph);
    expect(c.errors).toEqual([]);
    expect(c.compiled.nodes.length).toBeGreaterThan(0);
    expect(c.compiled.nodes.every((n) => typeof n.id === 'string')).toBe(true);
  });
});
