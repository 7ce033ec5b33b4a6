/**
 * Compiles a pathway graph (either form) into the index-based graph the workflow interpreter walks. Compilation runs
 * outside the workflow (workflows hold no logic that can change between versions of the code): the API compiles, the workflow receives the result as input. Pure and deterministic.
 */
import {
  applyOverrides,
  branchHandles,
  canonicalType,
  isIndexGraph,
  type CompiledEdge,
  type CompiledGraph,
  type GraphOverrides,
} from './graph.js';
import { checkGraph, resolveGraph, type ValidationContext } from './validate.js';

/** Options of compileGraph: the validation context plus optional per-node data overrides (POST /v1/pathways/compile). */
export interface CompileOptions extends ValidationContext {
  /** Shallow data patches keyed by node id (index for index graphs), applied before validation; see applyOverrides. */
  overrides?: GraphOverrides;
}

/** `errors` are the validation errors (empty means the graph may run); `compiled` is always as complete as possible. */
export interface CompileResult {
  compiled: CompiledGraph;
  errors: string[];
  warnings: string[];
}

/**
 * Validates and compiles a graph of either form. Node index = position in the input node order, except that the
 * entry node (start/input, or the single root) moves to index 0 and the others keep their relative order; the
 * interpreter always starts at 0. Edges come out grouped by source index (input order within a node) as
 * `[source, target, handle?]`, the handle kept only on branching nodes. A non-branching node without an outgoing edge
 * gets `[i, -1]`; a branch without an edge gets `[i, -1, handle]`. Alias types are rewritten to canonical ones.
 * Invalid graphs still compile what they can (missing-node edges are dropped) so editors can preview.
 */
export function compileGraph(input: unknown, options: CompileOptions = {}): CompileResult {
  const resolved = resolveGraph(input);
  const errors = [...resolved.errors];
  let graph = resolved.graph;
  if (options.overrides) {
    const patched = applyOverrides(graph, options.overrides);
    graph = patched.graph;
    errors.push(...patched.errors);
  }
  const checked = checkGraph(graph, options);
  errors.push(...checked.errors);

  const { nodes } = graph;
  const entry = checked.entry;
  const order = nodes.map((_, i) => i);
  if (entry > 0) order.splice(0, order.length, entry, ...order.filter((i) => i !== entry));
  const position = new Array<number>(nodes.length);
  order.forEach((old, i) => (position[old] = i));

  const compiledNodes = order.map((i) => ({
    id: nodes[i].id,
    type: canonicalType(nodes[i].type) ?? nodes[i].type,
    data: { ...nodes[i].data },
  }));
  const buckets: CompiledEdge[][] = compiledNodes.map(() => []);
  for (const e of graph.edges) {
    const s = position[e.source];
    const t = e.target < 0 ? -1 : position[e.target];
    const branching = branchHandles(compiledNodes[s].type, compiledNodes[s].data) !== null;
    const keep = e.handle !== undefined && (branching || e.handle === 'error');
    buckets[s].push(keep ? [s, t, e.handle!] : [s, t]);
  }
  compiledNodes.forEach((node, i) => {
    const handles = branchHandles(node.type, node.data);
    if (handles === null) {
      if (buckets[i].length === 0) buckets[i].push([i, -1]);
      return;
    }
    if (node.type === 'human' && buckets[i].some((edge) => edge[2] === undefined)) return; // continues on any answer
    for (const h of handles) if (!buckets[i].some((edge) => edge[2] === h)) buckets[i].push([i, -1, h]);
  });
  return {
    compiled: { nodes: compiledNodes, edges: buckets.flat() },
    errors,
    warnings: [...resolved.notes, ...checked.warnings],
  };
}

/**
 * Same as compileGraph, for a graph that is already index-based (an inline pathway on POST /v1/jobs): it checks the
 * indices and every graph rule, then normalises (entry to 0, implicit terminals made explicit, canonical types).
 * An id-based input is reported as an error rather than silently accepted.
 */
export function normalizeCompiled(input: unknown, options: CompileOptions = {}): CompileResult {
  if (isIndexGraph(input)) return compileGraph(input, options);
  return {
    compiled: { nodes: [], edges: [] },
    errors: ['expected an index-based graph: nodes without ids, edges as [source, target, handle?]'],
    warnings: [],
  };
}
