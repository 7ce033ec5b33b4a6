import { describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../api/openapi.js';
import { allRoutes } from '../../api/routes/index.js';
import { niceMax } from '../../console/src/chart-axis.js';
import { normalizeGraph } from '../../console/src/graph.js';
import { kindOf, nodeSchemasOf } from '../../console/src/node-schemas.js';
import {
  designOf,
  diffGraphs,
  errorsByNode,
  freshId,
  inputSchemaOf,
  positionsOf,
  unionGraph,
  withPositions,
} from '../../console/src/pathway-edit.js';
import { bucketsOf } from '../../console/src/usage-buckets.js';
import { validateGraph } from '../../src/pathways/validate.js';

/**
 * The console's pure pathway and usage helpers, against the server's own artefacts where they read
 * them: the node schemas from the OpenAPI document the API serves, validation messages from the
 * validator the API runs.
 */
const doc = buildOpenApi(allRoutes()) as Parameters<typeof nodeSchemasOf>[0];

describe('node schemas from the OpenAPI document', () => {
  const s = nodeSchemasOf(doc);

  it('lists every node type with its data schema, and the fields every typed node shares', () => {
    for (const t of ['start', 'input', 'transform', 'if', 'while', 'delay', 'neuron', 'classify', 'human'])
      expect(s.types).toContain(t);
    for (const t of ['approval', 'output', 'end', 'join', 'map', 'http', 'pathway']) expect(s.types).toContain(t);
    expect(Object.keys(s.data.transform.properties!)).toEqual(expect.arrayContaining(['expression', 'template']));
    expect(s.data.http.required).toContain('url');
    expect(s.common).toEqual(expect.arrayContaining(['label', 'description', 'notes', 'retry', 'on_error']));
    expect(s.common).not.toContain('expression');
    // start's data is free-form: no declared properties, any extra key.
    expect(Object.keys(s.data.start.properties ?? {})).toEqual([]);
  });

  it('chooses a control per field from the schema alone', () => {
    const f = (type: string, key: string) => kindOf(s.data[type].properties![key]);
    expect(f('delay', 'seconds')).toBe('number');
    expect(f('while', 'max_iterations')).toBe('number');
    expect(f('join', 'mode')).toBe('enum');
    expect(f('http', 'method')).toBe('enum');
    expect(f('transform', 'expression')).toBe('string');
    expect(f('human', 'pause')).toBe('boolean');
    expect(f('classify', 'categories')).toBe('lines');
    expect(f('transform', 'retry')).toBe('object');
    expect(f('http', 'headers')).toBe('json');
    expect(f('http', 'body')).toBe('json');
    expect(f('human', 'options')).toBe('json');
    expect(f('http', 'expect')).toBe('json');
  });
});

describe('validation messages by node', () => {
  it('puts each message of the real validator on the nodes it names, the rest on the graph', () => {
    const graph = {
      nodes: [
        { id: 'start', type: 'start' },
        { id: 'wait', type: 'delay', data: {} },
        { id: 'out', type: 'output', data: { expression: 'x' } },
      ],
      edges: [
        { source: 'start', target: 'wait' },
        { source: 'wait', target: 'out' },
        { source: 'out', target: 'ghost' },
      ],
    };
    const { errors } = validateGraph(graph);
    expect(errors.length).toBeGreaterThanOrEqual(3);
    const { byNode, graph: rest } = errorsByNode(errors, ['start', 'wait', 'out']);
    expect(byNode.wait.join('\n')).toContain('seconds or ms is required');
    expect(byNode.out.join('\n')).toContain('unknown key "expression"');
    expect(rest.join('\n')).toContain('"ghost"');
    expect(byNode.start).toBeUndefined();
  });
});

describe('design graph and positions', () => {
  const graph = normalizeGraph({
    nodes: [
      { id: 'start', type: 'start', data: { input_schema: { type: 'object', properties: { n: { type: 'number' } } } } },
      { id: 'double', type: 'transform', data: { expression: 'input.n * 2' } },
    ],
    edges: [{ source: 'start', target: 'double' }],
  });

  it('keeps each node at its whole-pixel position through pathway_data', () => {
    const design = designOf(graph, { start: { x: 10.4, y: 20.6 }, double: { x: 10, y: 140 } });
    expect(design.nodes).toEqual([
      { id: 'start', type: 'start', position: { x: 10, y: 21 }, data: graph.nodes[0].data },
      { id: 'double', type: 'transform', position: { x: 10, y: 140 }, data: graph.nodes[1].data },
    ]);
    const positions = positionsOf(JSON.parse(JSON.stringify(design)));
    expect(withPositions(graph, positions).nodes.map((n) => n.position)).toEqual([
      { x: 10, y: 21 },
      { x: 10, y: 140 },
    ]);
    // A node without a saved position (added by an API client) makes the page lay the graph out.
    expect(withPositions(graph, { start: { x: 0, y: 0 } }).nodes[0].position).toBeUndefined();
    expect(positionsOf({ nodes: [{ id: 'a', position: { x: 'no', y: 1 } }, 'junk'] })).toEqual({});
  });

  it("reads the start node's input schema as MCP does, and names new nodes uniquely", () => {
    expect(inputSchemaOf(graph)).toEqual({ type: 'object', properties: { n: { type: 'number' } } });
    expect(inputSchemaOf(normalizeGraph({ nodes: [{ id: 's', type: 'start', data: { input_schema: 'x' } }] }))).toBe(
      null,
    );
    expect(freshId('delay', ['start'])).toBe('delay');
    expect(freshId('delay', ['delay', 'delay-2'])).toBe('delay-3');
  });
});

describe('diff of two versions', () => {
  it('names added, removed and changed nodes, the fields that changed, and edges by source, target and handle', () => {
    const a = normalizeGraph({
      nodes: [
        { id: 'start', type: 'start' },
        { id: 't', type: 'transform', data: { expression: 'input.n', label: 'T' } },
        { id: 'gone', type: 'delay', data: { seconds: 1 } },
        { id: 'out', type: 'output' },
      ],
      edges: [
        { source: 'start', target: 't' },
        { source: 't', target: 'gone' },
        { source: 'gone', target: 'out' },
      ],
    });
    const b = normalizeGraph({
      nodes: [
        { id: 'start', type: 'start' },
        { id: 't', type: 'transform', data: { label: 'T', expression: 'input.n * 2' } },
        { id: 'ask', type: 'if', data: { condition: 'last > 1' } },
        { id: 'out', type: 'output' },
      ],
      edges: [
        { source: 'start', target: 't' },
        { source: 't', target: 'ask' },
        { source: 'ask', target: 'out', handle: 'true' },
      ],
    });
    const d = diffGraphs(a, b);
    expect(d.nodes).toEqual({ start: 'same', t: 'changed', gone: 'removed', out: 'same', ask: 'added' });
    expect(d.fields).toEqual({ t: [{ field: 'data.expression', from: 'input.n', to: 'input.n * 2' }] });
    const byChange = (c: string) =>
      d.edges
        .filter((e) => e.change === c)
        .map((e) => e.key)
        .sort();
    expect(byChange('same')).toEqual(['start→t']);
    expect(byChange('removed')).toEqual(['gone→out', 't→gone']);
    expect(byChange('added')).toEqual(['ask→out [true]', 't→ask']);
    expect(unionGraph(a, b).nodes.map((n) => n.id)).toEqual(['start', 't', 'gone', 'out', 'ask']);
  });
});

describe('usage buckets', () => {
  const now = Date.parse('2026-03-07T14:25:00Z');

  it('cuts the last 24 hours into whole UTC hours whose inclusive windows meet without overlap', () => {
    const b = bucketsOf('24h', now);
    expect(b).toHaveLength(24);
    expect(b[23]).toMatchObject({ start: '2026-03-07T14:00:00.000Z', end: '2026-03-07T14:59:59.999Z', label: '14:00' });
    expect(b[0].start).toBe('2026-03-06T15:00:00.000Z');
    for (let i = 1; i < b.length; i++) expect(Date.parse(b[i].start) - Date.parse(b[i - 1].end)).toBe(1);
  });

  it('cuts days as whole UTC dates, today last', () => {
    const b = bucketsOf('7d', now);
    expect(b.map((x) => x.start)).toEqual([
      '2026-03-01',
      '2026-03-02',
      '2026-03-03',
      '2026-03-04',
      '2026-03-05',
      '2026-03-06',
      '2026-03-07',
    ]);
    expect(b.every((x) => x.start === x.end)).toBe(true);
    expect(bucketsOf('30d', now)[0].start).toBe('2026-02-06');
  });

  it('rounds an axis up to 1, 2 or 5 × 10^n', () => {
    expect([0, 0.3, 1, 28, 120, 501, 9_999].map(niceMax)).toEqual([1, 0.5, 1, 50, 200, 1000, 10_000]);
  });
});
