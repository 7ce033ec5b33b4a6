import { describe, expect, it } from 'vitest';
import {
  CompiledGraph,
  IdGraph,
  applyOverrides,
  canonicalType,
  edgeHandle,
  isIndexGraph,
  nextEdges,
  toIdGraph,
  whileMaxIterations,
  type IdGraphInput,
} from '../../src/pathways/graph.js';
import { validateGraph } from '../../src/pathways/validate.js';
import { compileGraph, normalizeCompiled } from '../../src/pathways/compile.js';

const N1 = '11111111-1111-4111-8111-111111111111';
const N2 = '22222222-2222-4222-8222-222222222222';

type Node = { id: string; type: string; data?: Record<string, unknown> };
const node = (id: string, type: string, data: Record<string, unknown> = {}): Node => ({ id, type, data });
const e = (source: string, target: string, handle?: string) => ({
  source,
  target,
  ...(handle !== undefined && { handle }),
});
const graph = (nodes: Node[], edges: ReturnType<typeof e>[] = []): IdGraphInput => ({ nodes, edges });
const neuron = (id: string, neuronId = N1) => node(id, 'neuron', { neuron_id: neuronId });

const linear = () => graph([node('s', 'start'), neuron('a'), node('z', 'end')], [e('s', 'a'), e('a', 'z')]);
const ifGraph = (edges = [e('s', 'c'), e('c', 'y', 'true'), e('c', 'n', 'false')]) =>
  graph([node('s', 'start'), node('c', 'if', { condition: 'x > 1' }), node('y', 'output'), node('n', 'output')], edges);
const whileGraph = (edges = [e('s', 'w'), e('w', 'b', 'body'), e('b', 'w'), e('w', 'z', 'done')]) =>
  graph([node('s', 'start'), node('w', 'while', { condition: 'i < 3' }), neuron('b'), node('z', 'end')], edges);
const classifyGraph = (
  edges = [e('s', 'k'), e('k', 'a', 'sales'), e('k', 'b', 'support')],
  categories: unknown = ['sales', 'support'],
) => graph([node('s', 'start'), node('k', 'classify', { categories }), neuron('a'), neuron('b', N2)], edges);

/** Asserts exactly one error containing every fragment (so each rule is seen in isolation). */
function expectError(g: unknown, ...fragments: string[]) {
  const r = validateGraph(g);
  expect(r.valid).toBe(false);
  expect(
    r.errors.filter((m) => fragments.every((f) => m.includes(f))),
    r.errors.join('\n'),
  ).toHaveLength(1);
  return r;
}
function expectWarning(g: unknown, ...fragments: string[]) {
  const r = validateGraph(g);
  expect(
    r.warnings.filter((m) => fragments.every((f) => m.includes(f))),
    r.warnings.join('\n'),
  ).toHaveLength(1);
  return r;
}

describe('graph schemas and helpers', () => {
  it('accepts React Flow sourceHandle as the handle; handle wins when both are set', () => {
    const g = IdGraph.parse({ edges: [{ source: 'a', target: 'b', sourceHandle: 'true', position: 1 }] });
    expect(g.nodes).toEqual([]);
    expect(edgeHandle(g.edges[0])).toBe('true');
    expect(edgeHandle({ handle: 'false', sourceHandle: 'true' })).toBe('false');
    expect(edgeHandle({ sourceHandle: null })).toBeUndefined();
  });

  it('resolves the approval alias and rejects unknown names', () => {
    expect(canonicalType('approval')).toBe('human');
    expect(canonicalType('while')).toBe('while');
    expect(canonicalType('tool')).toBeUndefined();
    expect(canonicalType('toString')).toBeUndefined();
  });

  it('sniffs the index-based form', () => {
    expect(isIndexGraph({ nodes: [{ type: 'start' }], edges: [[0, -1]] })).toBe(true);
    expect(isIndexGraph({ nodes: [{ type: 'start' }] })).toBe(true);
    expect(isIndexGraph(linear())).toBe(false);
    expect(isIndexGraph({ nodes: [{ type: 'start' }], edges: [{ source: 'a', target: 'b' }] })).toBe(false);
    expect(isIndexGraph(null)).toBe(false);
  });

  it('bounds while loops: default 10, cap 100', () => {
    expect(whileMaxIterations({})).toBe(10);
    expect(whileMaxIterations({ max_iterations: 3 })).toBe(3);
    expect(whileMaxIterations({ max_iterations: 1000 })).toBe(100);
    expect(whileMaxIterations({ max_iterations: 0 })).toBe(1);
    expect(whileMaxIterations({ max_iterations: 'x' })).toBe(10);
  });
});

describe('validateGraph: valid graphs', () => {
  it.each([
    ['linear', linear()],
    ['if with true/false', ifGraph()],
    ['while with body/done', whileGraph()],
    ['classify with category handles', classifyGraph()],
    [
      'sourceHandle branches',
      graph(ifGraph().nodes as Node[], [
        e('s', 'c'),
        { source: 'c', target: 'y', sourceHandle: 'true' } as never,
        { source: 'c', target: 'n', sourceHandle: 'false' } as never,
      ]),
    ],
    ['input as entry', graph([node('i', 'input'), neuron('a')], [e('i', 'a')])],
    ['single root as entry', graph([neuron('a'), node('z', 'output')], [e('a', 'z')])],
    ['approval alias', graph([node('s', 'start'), node('h', 'approval', { prompt: 'ok?' })], [e('s', 'h')])],
    [
      'every node type',
      graph(
        [
          node('s', 'start'),
          node('t', 'transform', { expression: 'x' }),
          node('d', 'delay', { seconds: 1 }),
          node('h', 'human', { title: 'Check', options: ['yes', { label: 'No', value: false }], expires_in_s: 60 }),
          node('o', 'output', { value: 'x' }),
          node('z', 'end'),
        ],
        [e('s', 't'), e('t', 'd'), e('d', 'h'), e('h', 'o'), e('o', 'z')],
      ),
    ],
  ])('%s', (_name, g) => {
    expect(validateGraph(g)).toEqual({ valid: true, errors: [], warnings: [] });
  });

  it('accepts a neuron that is in the caller set (case-insensitively)', () => {
    expect(validateGraph(linear(), { neuronIds: new Set([N1]) }).valid).toBe(true);
    const upper = graph([node('s', 'start'), neuron('a', N1.toUpperCase())], [e('s', 'a')]);
    expect(validateGraph(upper, { neuronIds: new Set([N1]) }).valid).toBe(true);
  });

  it('treats an empty graph as valid with a warning', () => {
    for (const g of [{}, { nodes: [], edges: [] }, undefined]) {
      const r = validateGraph(g);
      expect(r.valid).toBe(true);
      expect(r.warnings).toEqual(['graph has no nodes; a run of it does nothing']);
    }
  });
});

describe('validateGraph: structural errors', () => {
  it('reports schema problems with their path', () => {
    expectError({ nodes: [{ type: 'start' }], edges: [{ source: 'a', target: 'b' }] }, 'invalid graph: nodes.0.id');
  });

  it('unknown node type', () => {
    expectError(graph([node('s', 'start'), node('x', 'tool')], [e('s', 'x')]), 'node "x"', 'unknown type "tool"');
  });

  it('duplicate node id', () => {
    expectError(
      graph([node('s', 'start'), neuron('a'), neuron('a')], [e('s', 'a')]),
      'duplicate node id "a"',
      '#1 and #2',
    );
  });

  it('edge from or to a missing node', () => {
    const r = validateGraph(
      graph([node('s', 'start'), neuron('a')], [
        e('s', 'a'),
        { id: 'e9', source: 'a', target: 'ghost' },
        e('nope', 'a'),
      ] as never),
    );
    expect(r.errors).toEqual([
      'edge "e9" ("a" → "ghost"): target node "ghost" does not exist',
      'edge #2 ("nope" → "a"): source node "nope" does not exist',
    ]);
  });

  it('neuron node without neuron_id, with a non-UUID, or a foreign one', () => {
    expectError(
      graph([node('s', 'start'), node('a', 'neuron')], [e('s', 'a')]),
      'node "a" (neuron): data.neuron_id: missing',
    );
    expectError(
      graph([node('s', 'start'), neuron('a', 'abc')], [e('s', 'a')]),
      'node "a" (neuron): data.neuron_id: "abc" is not a UUID',
    );
    const r = validateGraph(linear(), { neuronIds: new Set([N2]) });
    expect(r.errors).toEqual([
      `node "a" (neuron): data.neuron_id: foreign or missing neuron "${N1}" (not in this workspace and brain)`,
    ]);
  });

  it('classify neuron_id is checked like a neuron node', () => {
    const g = classifyGraph();
    (g.nodes![1].data as Record<string, unknown>).neuron_id = N2;
    const r = validateGraph(g, { neuronIds: new Set([N1]) });
    expect(r.errors.filter((m) => m.includes('node "k" (classify)') && m.includes('foreign or missing'))).toHaveLength(
      1,
    );
  });

  it('no start node: several roots, or none', () => {
    expectError(graph([neuron('a'), neuron('b')]), 'no start node', 'found 2: "a", "b"');
    expectError(graph([neuron('a'), neuron('b')], [e('a', 'b'), e('b', 'a')]), 'no start node', 'found none');
  });

  it('more than one start node (start and input both count)', () => {
    expectError(graph([node('s', 'start'), node('i', 'input')], [e('s', 'i')]), 'more than one start node: "s", "i"');
  });

  it('a non-branching node with several outgoing edges fans out into parallel branches, joined or not', () => {
    const fan = graph([node('s', 'start'), neuron('a'), neuron('b')], [e('s', 'a'), e('s', 'b')]);
    expect(validateGraph(fan)).toMatchObject({ valid: true, errors: [] });
    expect(compileGraph(fan).compiled.edges).toEqual([
      [0, 1],
      [0, 2],
      [1, -1],
      [2, -1],
    ]);
    const joined = graph(
      [node('s', 'start'), neuron('a'), neuron('b'), node('j', 'join', { mode: 'any' })],
      [e('s', 'a'), e('s', 'b'), e('a', 'j'), e('b', 'j')],
    );
    expect(validateGraph(joined).valid).toBe(true);
    expectError(
      graph([node('s', 'start'), node('j', 'join', { mode: 'some' })], [e('s', 'j')]),
      'node "j" (join)',
      'mode',
    );
  });

  it('an unknown data key is an error naming the node, the key and what the type takes; editor keys are fine', () => {
    const g = (data: Record<string, unknown>) => graph([node('s', 'start'), node('o', 'output', data)], [e('s', 'o')]);
    const v = validateGraph(g({ expression: '1' }));
    expect(v.valid).toBe(false);
    expect(v.errors.join('\n')).toMatch(
      /node "o" \(output\): data: unknown key "expression" \(this node type takes value,/,
    );
    expect(validateGraph(g({ value: '1', label: 'Result', description: 'the answer' })).valid).toBe(true);
    const wrong = validateGraph(g({ value: 1 }));
    expect(wrong.errors.join('\n')).toMatch(/node "o" \(output\): data\.value: /);
  });

  it('an error edge needs on_error "branch", and compile keeps it on any node', () => {
    const g = (data: Record<string, unknown>) =>
      graph(
        [node('s', 'start'), node('t', 'transform', { expression: '1', ...data }), neuron('a'), neuron('b')],
        [e('s', 't'), e('t', 'a'), e('t', 'b', 'error')],
      );
    expectError(g({}), 'node "t" (transform) has an "error" edge but its data.on_error is not "branch"');
    const ok = compileGraph(g({ on_error: 'branch' }));
    expect(ok.errors).toEqual([]);
    expect(ok.compiled.edges).toContainEqual([1, 3, 'error']);
    expect(ok.compiled.edges).toContainEqual([1, 2]);
  });

  it('end node with outgoing edges', () => {
    expectError(
      graph([node('s', 'start'), node('z', 'end'), neuron('a')], [e('s', 'z'), e('z', 'a')]),
      'end node "z" has outgoing edges',
    );
  });

  it('node data contracts', () => {
    expectError(
      graph([node('s', 'start'), node('d', 'delay')], [e('s', 'd')]),
      'node "d" (delay): data: seconds or ms is required',
    );
    expectError(
      graph([node('s', 'start'), node('h', 'human', { prompt: 'p', expires_in_s: -1 })], [e('s', 'h')]),
      'node "h" (human): data.expires_in_s',
    );
  });
});

describe('validateGraph: branch handles', () => {
  it('if needs a condition and both true and false edges', () => {
    expectError(ifGraph([e('s', 'c'), e('c', 'y', 'true')]), 'if node "c" has no "false" edge');
    expectError(ifGraph([e('s', 'c'), e('c', 'n', 'false')]), 'if node "c" has no "true" edge');
    const g = ifGraph();
    g.nodes![1].data = {};
    expectError(g, 'node "c" (if): data.condition: missing');
  });

  it('if edges with an unknown, missing or repeated handle', () => {
    expectError(
      ifGraph([e('s', 'c'), e('c', 'y', 'true'), e('c', 'n', 'false'), e('c', 'n', 'maybe')]),
      'if node "c"',
      'handle "maybe"',
      '"true" or "false"',
    );
    expectError(
      ifGraph([e('s', 'c'), e('c', 'y', 'true'), e('c', 'n', 'false'), e('c', 'n')]),
      'if node "c"',
      'has no handle',
    );
    expectError(
      ifGraph([e('s', 'c'), e('c', 'y', 'true'), e('c', 'n', 'true'), e('c', 'n', 'false')]),
      'if node "c" has 2 "true" edges',
    );
  });

  it('while needs both body and done edges', () => {
    expectError(whileGraph([e('s', 'w'), e('w', 'b', 'body'), e('b', 'w')]), 'while node "w" has no "done" edge');
    const r = expectError(
      whileGraph([e('s', 'w'), e('w', 'z', 'done'), e('b', 'w')]),
      'while node "w" has no "body" edge',
    );
    expect(r.warnings).toContain('node "b" is not reachable from the start node "s" and never runs');
  });

  it('while data: condition required, max_iterations capped at 100', () => {
    const g = whileGraph();
    g.nodes![1].data = { condition: 'x', max_iterations: 101 };
    expectError(g, 'node "w" (while): data.max_iterations');
    g.nodes![1].data = { max_iterations: 5 };
    expectError(g, 'node "w" (while): data.condition');
  });

  it('warns when a while body never leads back', () => {
    const r = expectWarning(
      whileGraph([e('s', 'w'), e('w', 'b', 'body'), e('w', 'z', 'done')]),
      'while node "w": body branch never leads back',
    );
    expect(r.valid).toBe(true);
  });

  it('classify needs categories', () => {
    expectError(
      classifyGraph([e('s', 'k')], []),
      'node "k" (classify): data.categories: must list at least one category',
    );
    const g = classifyGraph([e('s', 'k')]);
    g.nodes![1].data = {};
    expectError(g, 'node "k" (classify): data.categories: missing');
    expectError(
      classifyGraph([e('s', 'k'), e('k', 'a', 'a')], ['a', 'a']),
      'data.categories: category names must be unique',
    );
  });

  it('classify edges must name one of its categories', () => {
    expectError(
      classifyGraph([e('s', 'k'), e('k', 'a', 'sales'), e('k', 'b', 'billing')]),
      'classify node "k"',
      'handle "billing"',
      '"sales", "support"',
    );
    expectError(classifyGraph([e('s', 'k'), e('k', 'a', 'sales'), e('k', 'b')]), 'classify node "k"', 'has no handle');
  });

  it('warns about a category without an edge', () => {
    const r = expectWarning(
      classifyGraph([e('s', 'k'), e('k', 'a', 'sales')]),
      'classify node "k": category "support" has no edge',
    );
    expect(r.valid).toBe(true);
  });

  it('warns about a handle on a non-branching node', () => {
    const r = expectWarning(
      graph([node('s', 'start'), neuron('a')], [e('s', 'a', 'out')]),
      'node "s" (start)',
      'handle "out" is ignored',
    );
    expect(r.valid).toBe(true);
  });
});

describe('validateGraph: reachability and cycles', () => {
  it('warns about isolated and unreachable nodes', () => {
    const r = validateGraph(
      graph(
        [node('s', 'start'), neuron('a'), neuron('lonely'), neuron('x'), node('y', 'end')],
        [e('s', 'a'), e('x', 'y')],
      ),
    );
    expect(r.valid).toBe(true);
    expect(r.warnings).toEqual([
      'node "lonely" is isolated (no edges) and never runs',
      'node "x" is not reachable from the start node "s" and never runs',
      'node "y" is not reachable from the start node "s" and never runs',
    ]);
  });

  it('rejects a cycle that does not pass through a while node', () => {
    expectError(
      graph([node('s', 'start'), neuron('a'), neuron('b')], [e('s', 'a'), e('a', 'b'), e('b', 'a')]),
      'cycle through "a", "b"',
    );
    expectError(graph([node('s', 'start'), neuron('a')], [e('s', 'a'), e('a', 'a')]), 'node "a" has an edge to itself');
  });

  it('accepts a loop through a while body, including nested loops', () => {
    expect(validateGraph(whileGraph()).valid).toBe(true);
    const nested = graph(
      [
        node('s', 'start'),
        node('w1', 'while', { condition: 'a' }),
        node('w2', 'while', { condition: 'b' }),
        neuron('x'),
        node('z', 'end'),
      ],
      [
        e('s', 'w1'),
        e('w1', 'w2', 'body'),
        e('w2', 'x', 'body'),
        e('x', 'w2'),
        e('w2', 'w1', 'done'),
        e('w1', 'z', 'done'),
      ],
    );
    expect(validateGraph(nested)).toEqual({ valid: true, errors: [], warnings: [] });
  });

  it('rejects a cycle that re-enters a while node only through its done branch', () => {
    expectError(
      whileGraph([e('s', 'w'), e('w', 'b', 'body'), e('b', 'w'), e('w', 'z', 'done'), e('z', 'w')]),
      'cycle through "w", "z"',
    );
  });

  it('rejects a cycle inside a while body that bypasses the while node', () => {
    const g = graph(
      [
        node('s', 'start'),
        node('w', 'while', { condition: 'c' }),
        neuron('a'),
        neuron('b'),
        node('c', 'if', { condition: 'x' }),
      ],
      [e('s', 'w'), e('w', 'a', 'body'), e('a', 'c'), e('c', 'b', 'true'), e('c', 'w', 'false'), e('b', 'a')],
    );
    expectError(g, 'cycle through "a", "b", "c"', 'while node');
  });
});

describe('compileGraph', () => {
  it('moves the start node to index 0 and keeps the rest in input order', () => {
    const g = graph([neuron('a'), node('z', 'end'), node('s', 'start')], [e('s', 'a'), e('a', 'z')]);
    const { compiled, errors, warnings } = compileGraph(g);
    expect(errors).toEqual([]);
    expect(warnings).toEqual([]);
    expect(compiled.nodes.map((n) => n.type)).toEqual(['start', 'neuron', 'end']);
    expect(compiled.edges).toEqual([
      [0, 1],
      [1, 2],
      [2, -1],
    ]);
  });

  it('adds -1 terminals, keeps handles only on branches, and canonicalises aliases', () => {
    const g = graph(
      [node('s', 'start'), node('h', 'approval', { prompt: 'go?' }), node('c', 'if', { condition: 'ok' }), neuron('a')],
      [e('s', 'h', 'out'), e('h', 'c'), e('c', 'a', 'true'), e('c', 'a', 'false')],
    );
    const { compiled, errors } = compileGraph(g);
    expect(errors).toEqual([]);
    expect(compiled.nodes[1]).toEqual({ id: 'h', type: 'human', data: { prompt: 'go?' } });
    expect(compiled.edges).toEqual([
      [0, 1],
      [1, 2],
      [2, 3, 'true'],
      [2, 3, 'false'],
      [3, -1],
    ]);
  });

  it('compiles every handle kind and a missing branch to -1', () => {
    expect(compileGraph(whileGraph()).compiled.edges).toEqual([
      [0, 1],
      [1, 2, 'body'],
      [1, 3, 'done'],
      [2, 1],
      [3, -1],
    ]);
    expect(compileGraph(classifyGraph([e('s', 'k'), e('k', 'b', 'support')])).compiled.edges).toEqual([
      [0, 1],
      [1, 3, 'support'],
      [1, -1, 'sales'],
      [2, -1],
      [3, -1],
    ]);
    const missing = compileGraph(ifGraph([e('s', 'c'), e('c', 'y', 'true')]));
    expect(missing.errors).toEqual(['if node "c" has no "false" edge']);
    expect(missing.compiled.edges).toEqual([
      [0, 1],
      [1, 2, 'true'],
      [1, -1, 'false'],
      [2, -1],
      [3, -1],
    ]);
  });

  it('returns what it could for an invalid graph', () => {
    const { compiled, errors } = compileGraph(
      graph([node('s', 'start'), neuron('a', 'bad')], [e('s', 'a'), e('a', 'ghost')]),
    );
    expect(errors).toHaveLength(2);
    expect(compiled.edges).toEqual([
      [0, 1],
      [1, -1],
    ]);
  });

  it('is deterministic and survives JSON (no null handles)', () => {
    const a = compileGraph(classifyGraph()).compiled;
    expect(compileGraph(classifyGraph()).compiled).toEqual(a);
    expect(JSON.parse(JSON.stringify(a))).toEqual(a);
    expect(CompiledGraph.parse(JSON.parse(JSON.stringify(a)))).toEqual(a);
  });

  it('applies overrides by node id before validation', () => {
    const ok = compileGraph(linear(), { overrides: { a: { neuron_id: N2, message: 'hi' } }, neuronIds: new Set([N2]) });
    expect(ok.errors).toEqual([]);
    expect(ok.compiled.nodes[1].data).toEqual({ neuron_id: N2, message: 'hi' });
    const bad = compileGraph(linear(), { overrides: { nope: {}, a: { neuron_id: 'x' } } });
    expect(bad.errors).toEqual(['overrides: no node "nope"', 'node "a" (neuron): data.neuron_id: "x" is not a UUID']);
  });
});

describe('index-based graphs', () => {
  const inline = {
    nodes: [{ type: 'start' }, { type: 'if', data: { condition: 'x' } }, { type: 'neuron', data: { neuron_id: N1 } }],
    edges: [
      [0, 1],
      [1, 2, 'true'],
      [1, 2, 'false'],
      [2, -1],
    ],
  };

  it('validates with the same rules, naming nodes by index', () => {
    expect(validateGraph(inline)).toEqual({ valid: true, errors: [], warnings: [] });
    const r = validateGraph({
      nodes: inline.nodes,
      edges: [
        [0, 1],
        [1, 2, 'true'],
      ],
    });
    expect(r.errors).toEqual(['if node "1" has no "false" edge']);
    expect(validateGraph(inline, { neuronIds: new Set() }).errors[0]).toContain(
      'node "2" (neuron): data.neuron_id: foreign or missing neuron',
    );
  });

  it('rejects out-of-range indices', () => {
    const r = validateGraph({
      nodes: [{ type: 'start' }],
      edges: [
        [0, 3],
        [5, -1],
        [0, -1],
      ],
    });
    expect(r.errors).toEqual([
      'edge #0 [0, 3]: target index 3 is out of range (-1 for terminal, or 0..0)',
      'edge #1 [5, -1]: source index 5 is out of range (0..0)',
    ]);
    expect(validateGraph({ nodes: [{ type: 'start' }], edges: [[0, 'x']] }).errors[0]).toContain(
      'invalid graph: edges.0.1',
    );
  });

  it('accepts an explicit -1 branch and a null handle', () => {
    const g = {
      nodes: inline.nodes,
      edges: [
        [0, 1, null],
        [1, 2, 'true'],
        [1, -1, 'false'],
        [2, -1],
      ],
    };
    expect(validateGraph(g).valid).toBe(true);
    expect(normalizeCompiled(g).compiled.edges).toEqual([
      [0, 1],
      [1, 2, 'true'],
      [1, -1, 'false'],
      [2, -1],
    ]);
  });

  it('normalizes: entry to 0, implicit terminals made explicit', () => {
    const g = { nodes: [{ type: 'neuron', data: { neuron_id: N1 } }, { type: 'start' }], edges: [[1, 0]] };
    const { compiled, errors } = normalizeCompiled(g);
    expect(errors).toEqual([]);
    expect(compiled).toEqual({
      // Each node keeps its id: an index graph's is its position in the input.
      nodes: [
        { id: '1', type: 'start', data: {} },
        { id: '0', type: 'neuron', data: { neuron_id: N1 } },
      ],
      edges: [
        [0, 1],
        [1, -1],
      ],
    });
  });

  it('normalizeCompiled refuses an id-based graph', () => {
    expect(normalizeCompiled(linear()).errors[0]).toContain('expected an index-based graph');
  });

  it('round-trips through toIdGraph', () => {
    const compiled = compileGraph(linear()).compiled;
    const ids = toIdGraph(compiled);
    expect(ids.nodes.map((n) => n.id)).toEqual(compileGraph(linear()).compiled.nodes.map((n) => n.id));
    expect(validateGraph(ids).valid).toBe(true);
    expect(compileGraph(ids).compiled).toEqual(compiled);
    expect(normalizeCompiled(compiled).compiled).toEqual(compiled);
  });

  it('toIdGraph points an explicit -1 branch at an added end node', () => {
    const compiled = normalizeCompiled({
      nodes: inline.nodes,
      edges: [
        [0, 1],
        [1, 2, 'true'],
        [1, -1, 'false'],
      ],
    }).compiled;
    const ids = toIdGraph(compiled);
    expect(ids.nodes.at(-1)).toEqual({ id: 'end', type: 'end', data: {} });
    expect(ids.edges).toContainEqual({ id: 'e2', source: '1', target: 'end', handle: 'false' });
    expect(validateGraph(ids)).toEqual({ valid: true, errors: [], warnings: [] });
  });
});

describe('run-time helpers', () => {
  it('nextEdges follows single edges, branch handles and terminals', () => {
    const linearC = compileGraph(linear()).compiled;
    expect([0, 1, 2].map((i) => nextEdges(linearC, i))).toEqual([1, 2, -1]);
    const ifC = compileGraph(ifGraph()).compiled;
    expect(nextEdges(ifC, 1, true)).toBe(2);
    expect(nextEdges(ifC, 1, 'false')).toBe(3);
    const whileC = compileGraph(whileGraph()).compiled;
    expect(nextEdges(whileC, 1, 'body')).toBe(2);
    expect(nextEdges(whileC, 1, 'done')).toBe(3);
    const classifyC = compileGraph(classifyGraph([e('s', 'k'), e('k', 'b', 'support')])).compiled;
    expect(nextEdges(classifyC, 1, 'support')).toBe(3);
    expect(nextEdges(classifyC, 1, 'sales')).toBe(-1);
    expect(nextEdges(classifyC, 1, 'unknown')).toBe(-1);
    expect(nextEdges(linearC, 0, 'ignored')).toBe(1);
    expect(() => nextEdges(linearC, 9)).toThrow(RangeError);
  });

  it('applyOverrides merges by id, or by index for index graphs, and reports unknown keys', () => {
    const byId = applyOverrides(IdGraph.parse(linear()), { a: { message: 'hi' } });
    expect(byId.errors).toEqual([]);
    expect(byId.graph.nodes[1].data).toEqual({ neuron_id: N1, message: 'hi' });
    const compiled = compileGraph(linear()).compiled;
    // A compiled graph keeps the designer's ids: its nodes are addressed by them.
    const byIndex = applyOverrides(compiled, { [compiled.nodes[1].id!]: { neuron_id: N2 }, 7: {} });
    expect(byIndex.graph.nodes[1].data).toEqual({ neuron_id: N2 });
    expect(compiled.nodes[1].data).toEqual({ neuron_id: N1 });
    expect(byIndex.errors).toEqual(['overrides: no node "7"']);
  });
});

describe('human nodes branch on their answers', () => {
  const base = (edges: { source: string; target: string; handle?: string }[], data: Record<string, unknown> = {}) => ({
    nodes: [
      { id: 's', type: 'start' },
      { id: 'h', type: 'human', data },
      { id: 'a', type: 'output' },
      { id: 'b', type: 'output' },
    ],
    edges: [{ source: 's', target: 'h' }, ...edges],
  });

  it('approve/reject by default, each taking its own edge', () => {
    const { compiled, errors } = compileGraph(
      base([
        { source: 'h', target: 'a', handle: 'approve' },
        { source: 'h', target: 'b', handle: 'reject' },
      ]),
    );
    expect(errors).toEqual([]);
    expect(nextEdges(compiled, 1, 'approve')).toBe(2);
    expect(nextEdges(compiled, 1, 'reject')).toBe(3);
  });

  it('a single plain edge continues on any answer', () => {
    const g = base([{ source: 'h', target: 'a' }], { title: 'Go on?' });
    g.nodes.pop();
    const { compiled, errors, warnings } = compileGraph(g);
    expect(errors).toEqual([]);
    expect(warnings).toEqual([]);
    expect(nextEdges(compiled, 1, 'approve')).toBe(2);
    expect(nextEdges(compiled, 1, 'anything')).toBe(2);
  });

  it('custom options are the handles; an option without an edge ends the run (warning); an unknown handle is an error', () => {
    const data = { options: ['ship', { label: 'hold' }, 'escalate'] };
    const { compiled, errors, warnings } = compileGraph(
      base(
        [
          { source: 'h', target: 'a', handle: 'ship' },
          { source: 'h', target: 'b', handle: 'hold' },
        ],
        data,
      ),
    );
    expect(errors).toEqual([]);
    expect(warnings.some((w) => w.includes('"escalate"'))).toBe(true);
    expect(nextEdges(compiled, 1, 'escalate')).toBe(-1);
    expect(
      validateGraph(
        base([
          { source: 'h', target: 'a', handle: 'maybe' },
          { source: 'h', target: 'b', handle: 'approve' },
        ]),
      ).errors.some((e) => e.includes('"maybe"')),
    ).toBe(true);
  });
});

describe('http nodes', () => {
  const http = (data: Record<string, unknown>) => graph([node('s', 'start'), node('h', 'http', data)], [e('s', 'h')]);

  it('accepts a request with templates, a JSON body and the per-node policy keys', () => {
    const r = validateGraph(
      http({
        method: 'POST',
        url: 'https://api.example.com/items/{{ input.id }}',
        headers: { Authorization: 'Bearer {{ secrets.TOKEN }}' },
        body: { name: '{{ input.name }}', tags: ['a', '{{ last.tag }}'], n: 1 },
        timeout_ms: 5000,
        expect: [200, 201],
        retry: { max_attempts: 3, initial_interval_ms: 100, backoff: 2 },
        on_error: 'continue',
      }),
    );
    expect(r.errors).toEqual([]);
    expect(r.valid).toBe(true);
  });

  it('refuses unknown keys, naming the field, and bad values', () => {
    expectError(http({ url: 'https://x.test', verb: 'GET' }), 'node "h" (http)', 'unknown key "verb"');
    expectError(http({}), 'data.url', 'missing');
    expectError(http({ url: 'https://x.test', method: 'TRACE' }), 'data.method');
    expectError(http({ url: 'https://x.test', timeout_ms: 500_000 }), 'data.timeout_ms');
    expectError(http({ url: 'https://x.test', body: 'x' }), 'data.body', 'GET or HEAD');
    expectError(http({ url: 'https://x.test', retry: { max_attempts: 11 } }), 'data.retry.max_attempts');
    expectError(http({ url: 'https://x.test', retry: { attempts: 2 } }), 'data.retry', '"attempts"');
    expectError(http({ url: 'https://x.test', on_error: 'ignore' }), 'data.on_error');
    expectError(http({ url: 'https://x.test', headers: { 'Bad Name': 'v' } }), 'data.headers', 'not a header name');
  });

  it('checks the syntax of the url, every header value and every string of the body', () => {
    expectError(http({ url: 'https://x.test/{{ input. }}' }), 'data.url: in {{');
    expectError(http({ url: 'https://x.test', headers: { 'X-A': '{{ ( }}' } }), 'data.headers.X-A: in {{');
    expectError(http({ method: 'POST', url: 'https://x.test', body: { a: ['{{ ] }}'] } }), 'data.body.a.0: in {{');
    expectError(http({ method: 'POST', url: 'https://x.test', body: '{{ ] }}' }), 'data.body: in {{');
  });
});
