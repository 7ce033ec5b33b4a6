/**
 * Pathway graph validation, shared by POST /v1/pathways/validate, /compile, pathway saves and inline job graphs.
 * Pure and deterministic: messages come out in node order, so the same graph always yields the same list.
 *
 * Both graph forms are first resolved to one shape (nodes with ids, edges as index pairs with -1 for terminal) and
 * then go through the same rules, so an inline index graph is held to exactly what a stored pathway is.
 */
import type { z } from 'zod';
import {
  CompiledGraph,
  ENTRY_TYPES,
  IdGraph,
  NODE_DATA,
  NODE_TYPES,
  NeuronId,
  PathwayId,
  branchHandles,
  canonicalType,
  edgeHandle,
  isIndexGraph,
  type NodeType,
} from './graph.js';
import { nodeExpressionErrors, normalizeNodeData } from '../expressions/index.js';

/** Facts only the caller can know (the validator does no I/O). */
export interface ValidationContext {
  /** Neurons that exist in the caller's workspace and brain; when given, any other neuron_id is an error. */
  neuronIds?: ReadonlySet<string>;
  /** Pathways that exist in the caller's workspace (and brain); when given, any other pathway_id is an error. */
  pathwayIds?: ReadonlySet<string>;
  /** The pathway this graph belongs to, when it is a stored one: a pathway or map node must not run it (direct recursion). */
  selfPathwayId?: string | null;
}

/** Result of validateGraph: `valid` is false exactly when `errors` is non-empty; warnings never block a run. */
export interface ValidationResult {
  valid: boolean;
  errors: string[];
  warnings: string[];
}

/** A node after resolution; for index graphs `id` is the index as a string ("0", "1", …). */
interface ResolvedNode {
  id: string;
  type: string;
  data: Record<string, unknown>;
}
/** An edge after resolution: node indices, target -1 for terminal, `name` describes the edge in messages. */
interface ResolvedEdge {
  source: number;
  target: number;
  handle?: string;
  name: string;
}
/** The single shape every rule and the compiler work on. */
export interface ResolvedGraph {
  nodes: ResolvedNode[];
  edges: ResolvedEdge[];
}

const issueText = (issues: readonly z.core.$ZodIssue[], prefix: string, root?: string) =>
  issues.map((i) => {
    const path = [...(root ? [root] : []), ...i.path.map(String)].join('.');
    return `${prefix}${path ? `${path}: ` : ''}${i.message}`;
  });

/**
 * Parses either graph form into a ResolvedGraph. Schema problems, duplicate ids and edges that name missing nodes
 * (or out-of-range indices) are errors; such edges are dropped so later rules only see real edges.
 */
export function resolveGraph(input: unknown): { graph: ResolvedGraph; errors: string[]; notes: string[] } {
  const { graph, errors } = resolveShape(input);
  // Expressions as people write them (`a == 1 && !b`) are read as JSONata; each rewrite is echoed as a warning.
  const notes: string[] = [];
  const nodes = graph.nodes.map((node) => {
    const type = canonicalType(node.type) ?? node.type;
    const n = normalizeNodeData(type, node.data);
    notes.push(...n.notes.map((note) => `node "${node.id}" (${type}): ${note}`));
    return n.notes.length ? { ...node, data: n.data } : node;
  });
  return { graph: { nodes, edges: graph.edges }, errors, notes };
}

/** Either graph form as a ResolvedGraph, data as given. */
function resolveShape(input: unknown): { graph: ResolvedGraph; errors: string[] } {
  const errors: string[] = [];
  if (isIndexGraph(input)) {
    const parsed = CompiledGraph.safeParse(input);
    if (!parsed.success)
      return { graph: { nodes: [], edges: [] }, errors: issueText(parsed.error.issues, 'invalid graph: ') };
    const n = parsed.data.nodes.length;
    const nodes = parsed.data.nodes.map((node, i) => ({ id: node.id ?? String(i), type: node.type, data: node.data }));
    const seen = new Map<string, number>();
    nodes.forEach((node, i) => {
      const first = seen.get(node.id);
      if (first === undefined) seen.set(node.id, i);
      else errors.push(`duplicate node id "${node.id}" (nodes #${first} and #${i})`);
    });
    const edges: ResolvedEdge[] = [];
    parsed.data.edges.forEach(([source, target, handle], k) => {
      const name = `edge #${k} [${source}, ${target}]`;
      if (source < 0 || source >= n) errors.push(`${name}: source index ${source} is out of range (0..${n - 1})`);
      else if (target >= n)
        errors.push(`${name}: target index ${target} is out of range (-1 for terminal, or 0..${n - 1})`);
      else edges.push({ source, target, name, ...(handle != null && { handle }) });
    });
    return { graph: { nodes, edges }, errors };
  }
  const parsed = IdGraph.safeParse(input ?? {});
  if (!parsed.success)
    return { graph: { nodes: [], edges: [] }, errors: issueText(parsed.error.issues, 'invalid graph: ') };
  const index = new Map<string, number>();
  const nodes = parsed.data.nodes.map((node, i) => {
    const first = index.get(node.id);
    if (first === undefined) index.set(node.id, i);
    else errors.push(`duplicate node id "${node.id}" (nodes #${first} and #${i})`);
    return { id: node.id, type: node.type, data: node.data ?? {} };
  });
  const edges: ResolvedEdge[] = [];
  parsed.data.edges.forEach((e, k) => {
    const name = `${e.id ? `edge "${e.id}"` : `edge #${k}`} ("${e.source}" → "${e.target}")`;
    const source = index.get(e.source);
    const target = index.get(e.target);
    if (source === undefined) errors.push(`${name}: source node "${e.source}" does not exist`);
    if (target === undefined) errors.push(`${name}: target node "${e.target}" does not exist`);
    const handle = edgeHandle(e);
    if (source !== undefined && target !== undefined)
      edges.push({ source, target, name, ...(handle !== undefined && { handle }) });
  });
  return { graph: { nodes, edges }, errors };
}

/** Validates either graph form (id-based or index-based); see checkGraph for the rules. */
export function validateGraph(input: unknown, ctx: ValidationContext = {}): ValidationResult {
  const { graph, errors, notes } = resolveGraph(input);
  const checked = checkGraph(graph, ctx);
  const all = [...errors, ...checked.errors];
  return { valid: all.length === 0, errors: all, warnings: [...notes, ...checked.warnings] };
}

/**
 * Every rule after resolution. Returns the entry node index (-1 when there is none or several) for the compiler.
 * Errors: unknown type; bad node data (per NODE_DATA); foreign neuron; no or several entry nodes; branch edges with a
 * missing, unknown or repeated handle; missing if/while branch; fan-out from a non-branching node; edges out of `end`;
 * a cycle that does not run through a while node's body edge. Warnings: empty graph; unreachable or isolated node;
 * handle on a non-branching edge; classify category without an edge; while body that never returns; no-op node data.
 */
export function checkGraph(
  graph: ResolvedGraph,
  ctx: ValidationContext = {},
): { entry: number; errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  const { nodes, edges } = graph;
  if (nodes.length === 0) {
    warnings.push('graph has no nodes; a run of it does nothing');
    return { entry: -1, errors, warnings };
  }
  const label = (i: number) => `"${nodes[i].id}"`;
  const out: ResolvedEdge[][] = nodes.map(() => []);
  const incoming = nodes.map(() => 0);
  for (const e of edges) {
    out[e.source].push(e);
    if (e.target >= 0) incoming[e.target]++;
  }

  nodes.forEach((node, i) => {
    const type = canonicalType(node.type);
    const at = `node ${label(i)}`;
    if (!type) {
      errors.push(`${at}: unknown type "${node.type}" (expected one of ${NODE_TYPES.join(', ')}; alias: approval)`);
      return;
    }
    const parsed = NODE_DATA[type].safeParse(node.data);
    if (!parsed.success) errors.push(...issueText(parsed.error.issues, `${at} (${type}): `, 'data'));
    const neuronId = node.data.neuron_id;
    const hasNeuron =
      (type === 'neuron' || type === 'classify' || type === 'map') &&
      typeof neuronId === 'string' &&
      NeuronId.safeParse(neuronId).success;
    if (hasNeuron && ctx.neuronIds && !ctx.neuronIds.has(neuronId) && !ctx.neuronIds.has(neuronId.toLowerCase())) {
      errors.push(
        `${at} (${type}): data.neuron_id: foreign or missing neuron "${neuronId}" (not in this workspace and brain)`,
      );
    }
    errors.push(...pathwayRefErrors(type, node.data, at, ctx));
    if (type === 'human' && !node.data.prompt && !node.data.title)
      warnings.push(`${at} (human): no data.prompt or data.title; the reviewer sees no question`);
    if (type === 'transform' && node.data.expression === undefined && node.data.template === undefined) {
      warnings.push(`${at} (transform): no data.expression or data.template; the value passes through unchanged`);
    }
    errors.push(...nodeExpressionErrors(type, node.data, at));
    checkOutgoing(type, node.data, at, out[i], label, errors, warnings);
  });

  const isEntry = (t: NodeType | undefined) => t !== undefined && ENTRY_TYPES.includes(t);
  const entries = nodes.flatMap((n, i) => (isEntry(canonicalType(n.type)) ? [i] : []));
  const roots = nodes.flatMap((_, i) => (incoming[i] === 0 ? [i] : []));
  let entry = -1;
  if (entries.length > 1) errors.push(`more than one start node: ${entries.map(label).join(', ')}`);
  else if (entries.length === 1) entry = entries[0];
  else if (roots.length === 1) entry = roots[0];
  else {
    const found = roots.length ? `found ${roots.length}: ${roots.map(label).join(', ')}` : 'found none';
    errors.push(`no start node: add a "start" node, or leave exactly one node without incoming edges (${found})`);
  }

  if (entry >= 0) {
    const seen = reach(entry, out);
    nodes.forEach((_, i) => {
      if (seen.has(i)) return;
      if (out[i].length === 0 && incoming[i] === 0)
        warnings.push(`node ${label(i)} is isolated (no edges) and never runs`);
      else warnings.push(`node ${label(i)} is not reachable from the start node ${label(entry)} and never runs`);
    });
  }

  // A loop is legal only through a while node's body edge: drop those edges and any cycle left is an error.
  const isBody = (e: ResolvedEdge) => canonicalType(nodes[e.source].type) === 'while' && e.handle === 'body';
  const acyclicOut = out.map((list) => list.filter((e) => !isBody(e)));
  for (const scc of cycles(acyclicOut)) {
    errors.push(
      scc.length === 1
        ? `node ${label(scc[0])} has an edge to itself; loops must go through a while node's body branch`
        : `cycle through ${scc.map(label).join(', ')} does not pass through a while node's body branch; loops must use a while node`,
    );
  }

  nodes.forEach((node, i) => {
    if (canonicalType(node.type) !== 'while') return;
    const body = out[i].find((e) => e.handle === 'body');
    if (body && (body.target < 0 || !reach(body.target, out).has(i))) {
      warnings.push(
        `while node ${label(i)}: body branch never leads back to ${label(i)}, so the loop body runs at most once`,
      );
    }
  });
  return { entry, errors, warnings };
}

/** A pathway or map node's pathway_id: in the caller's workspace (when known) and not the graph's own pathway. */
function pathwayRefErrors(type: string, data: Record<string, unknown>, at: string, ctx: ValidationContext): string[] {
  const id = data.pathway_id;
  if ((type !== 'pathway' && type !== 'map') || typeof id !== 'string' || !PathwayId.safeParse(id).success) return [];
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  if (ctx.selfPathwayId && same(id, ctx.selfPathwayId))
    return [`${at} (${type}): data.pathway_id: a pathway must not run itself ("${id}" is this pathway)`];
  if (ctx.pathwayIds && !ctx.pathwayIds.has(id) && !ctx.pathwayIds.has(id.toLowerCase()))
    return [`${at} (${type}): data.pathway_id: foreign or missing pathway "${id}" (not in this workspace and brain)`];
  return [];
}

/** Handle and fan-out rules for one node's outgoing edges. */
function checkOutgoing(
  type: string,
  data: Record<string, unknown>,
  at: string,
  edges: ResolvedEdge[],
  label: (i: number) => string,
  errors: string[],
  warnings: string[],
): void {
  // `error` edges: where a failed node goes when its error policy is `branch` (any node type).
  let list = edges;
  const errorEdges = list.filter((e) => e.handle === 'error');
  if (errorEdges.length > 0 && data.on_error !== 'branch')
    errors.push(`${at} (${type}) has an "error" edge but its data.on_error is not "branch"`);
  if (data.on_error === 'branch' && errorEdges.length === 0)
    warnings.push(
      `${at} (${type}): data.on_error is "branch" but no "error" edge leaves it; a failure ends its branch`,
    );
  list = list.filter((e) => e.handle !== 'error');
  const handles = branchHandles(type, data);
  if (handles === null) {
    if (type === 'end' && list.length > 0) errors.push(`end ${at} has outgoing edges; end stops the run`);
    for (const e of list) {
      if (e.handle !== undefined)
        warnings.push(
          `${at} (${type}): ${e.name} handle "${e.handle}" is ignored; only if, while, classify and human nodes branch (and "error" edges)`,
        );
    }
    // Several plain edges are parallel branches: each runs side by side (a join waits for them).
    return;
  }
  if (type === 'classify' && handles.length === 0) return; // categories are missing: already reported by the data rule
  // A human node with one plain edge continues whatever the answer; with handles it branches like classify.
  if (type === 'human' && list.length <= 1 && list.every((e) => e.handle === undefined)) return;
  const expected = handles.map((h) => `"${h}"`).join(type === 'classify' ? ', ' : ' or ');
  const what = type === 'classify' ? `one of its categories (${expected})` : expected;
  const counts = new Map<string, number>();
  for (const e of list) {
    if (e.handle === undefined) errors.push(`${type} ${at}: ${e.name} has no handle; expected ${what}`);
    else if (!handles.includes(e.handle))
      errors.push(`${type} ${at}: ${e.name} has handle "${e.handle}", which is not ${what}`);
    else counts.set(e.handle, (counts.get(e.handle) ?? 0) + 1);
  }
  for (const h of handles) {
    const n = counts.get(h) ?? 0;
    if (n > 1) errors.push(`${type} ${at} has ${n} "${h}" edges; a branch leads to exactly one node`);
    else if (n === 0 && type === 'classify')
      warnings.push(`classify ${at}: category "${h}" has no edge; that branch ends the run`);
    else if (n === 0 && type === 'human')
      warnings.push(`human ${at}: answer "${h}" has no edge; that answer ends the run`);
    else if (n === 0) errors.push(`${type} ${at} has no "${h}" edge`);
  }
}

/** Node indices reachable from `start` (inclusive) along non-terminal edges. */
function reach(start: number, out: ResolvedEdge[][]): Set<number> {
  const seen = new Set<number>([start]);
  const stack = [start];
  while (stack.length) {
    for (const e of out[stack.pop() as number]) {
      if (e.target >= 0 && !seen.has(e.target)) {
        seen.add(e.target);
        stack.push(e.target);
      }
    }
  }
  return seen;
}

/** Strongly connected components that form a cycle (size > 1, or a self-loop), members sorted, in node order (Tarjan, iterative). */
function cycles(out: ResolvedEdge[][]): number[][] {
  const n = out.length;
  const index = new Array<number>(n).fill(-1);
  const low = new Array<number>(n).fill(0);
  const onStack = new Array<boolean>(n).fill(false);
  const stack: number[] = [];
  const found: number[][] = [];
  let counter = 0;
  for (let root = 0; root < n; root++) {
    if (index[root] >= 0) continue;
    const work: [number, number][] = [[root, 0]];
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = true;
    while (work.length) {
      const frame = work[work.length - 1];
      const [v, k] = frame;
      if (k < out[v].length) {
        frame[1]++;
        const w = out[v][k].target;
        if (w < 0) continue;
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = true;
          work.push([w, 0]);
        } else if (onStack[w]) low[v] = Math.min(low[v], index[w]);
        continue;
      }
      work.pop();
      if (work.length) low[work[work.length - 1][0]] = Math.min(low[work[work.length - 1][0]], low[v]);
      if (low[v] !== index[v]) continue;
      const scc: number[] = [];
      let w: number;
      do {
        w = stack.pop() as number;
        onStack[w] = false;
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || out[v].some((e) => e.target === v)) found.push(scc.sort((a, b) => a - b));
    }
  }
  return found.sort((a, b) => a[0] - b[0]);
}
