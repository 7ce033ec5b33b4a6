import type { Graph, GraphEdge, GraphNode } from './graph.js';

/*
 * Pure helpers of the pathway pages (no React, no fetch): the design graph that keeps node
 * positions (`pathway_data`), the graph the API stores and validates, validation messages by node,
 * a start node's input schema, and the difference between two versions.
 */

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
export type Position = { x: number; y: number };

/**
 * `pathway_data`, the design graph: `{ nodes: [{ id, type, position, data }], edges }` (the format
 * the API documents for the visual editor). The execution graph (`pathway_graph`) stays the
 * source of nodes, data and edges; the design graph adds where each node sits (whole pixels).
 */
export function designOf(graph: Graph, positions: Record<string, Position>): Obj {
  const at = (p: Position | undefined) => (p ? { x: Math.round(p.x), y: Math.round(p.y) } : { x: 0, y: 0 });
  return {
    nodes: graph.nodes.map((n) => ({
      id: n.id,
      type: n.type,
      position: at(positions[n.id]),
      data: n.data,
    })),
    edges: graph.edges.map(edgeOut),
  };
}

/** Saved positions from a pathway's design graph, by node id (absent or malformed entries are left out). */
export function positionsOf(pathwayData: unknown): Record<string, Position> {
  const out: Record<string, Position> = {};
  const nodes = isObj(pathwayData) && Array.isArray(pathwayData.nodes) ? pathwayData.nodes : [];
  for (const n of nodes) {
    if (!isObj(n) || typeof n.id !== 'string' || !isObj(n.position)) continue;
    const { x, y } = n.position;
    if (typeof x === 'number' && typeof y === 'number' && Number.isFinite(x) && Number.isFinite(y))
      out[n.id] = { x, y };
  }
  return out;
}

/** The graph with its saved positions, when every node has one (else the page lays it out). */
export function withPositions(graph: Graph, positions: Record<string, Position>): Graph {
  if (graph.nodes.length === 0 || !graph.nodes.every((n) => positions[n.id])) return graph;
  return { ...graph, nodes: graph.nodes.map((n) => ({ ...n, position: positions[n.id] })) };
}

function edgeOut(e: GraphEdge) {
  return { id: e.id, source: e.source, target: e.target, ...(e.handle ? { handle: e.handle } : {}) };
}

/** The id-based graph the API stores and validates: `{ nodes: [{ id, type, data }], edges }`. */
export function apiGraphOf(graph: Graph): { nodes: Obj[]; edges: Obj[] } {
  return {
    nodes: graph.nodes.map((n) => ({ id: n.id, type: n.type, data: n.data })),
    edges: graph.edges.map(edgeOut),
  };
}

/**
 * Validation messages by the node they name (`node "double" (transform): data.expression: …`,
 * `edge …: target node "x" does not exist`); the rest are the graph's own.
 */
export function errorsByNode(messages: string[], ids: string[]): { byNode: Record<string, string[]>; graph: string[] } {
  const known = new Set(ids);
  const byNode: Record<string, string[]> = {};
  const graph: string[] = [];
  for (const m of messages) {
    const named = [...m.matchAll(/node "((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]).filter((id) => known.has(id));
    if (named.length === 0) graph.push(m);
    for (const id of new Set(named)) (byNode[id] ??= []).push(m);
  }
  return { byNode, graph };
}

/** The start node's declared input schema (`data.input_schema`, an object schema), as MCP reads it. */
export function inputSchemaOf(graph: Graph): Obj | null {
  const start = graph.nodes.find((n) => n.type === 'start' || n.type === 'input');
  const s = start?.data.input_schema;
  if (!isObj(s) || (s.type !== undefined && s.type !== 'object')) return null;
  return { ...s, type: 'object' };
}

/** A node id not in use: `<type>`, else `<type>-2`, `<type>-3`… */
export function freshId(type: string, ids: string[]): string {
  const taken = new Set(ids);
  if (!taken.has(type)) return type;
  for (let i = 2; ; i++) if (!taken.has(`${type}-${i}`)) return `${type}-${i}`;
}

/** JSON with sorted keys: two values are the same when these strings are. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObj(v))
    return `{${Object.keys(v)
      .sort()
      .filter((k) => v[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

export type Change = 'added' | 'removed' | 'changed' | 'same';

interface FieldChange {
  field: string;
  from: unknown;
  to: unknown;
}

export interface GraphDiff {
  /** Every node id of either version, with what happened to it from `a` to `b`. */
  nodes: Record<string, Change>;
  /** For changed nodes: the fields that differ (`type`, `data.<key>`). */
  fields: Record<string, FieldChange[]>;
  /** Every edge of either version (by source, target and handle). */
  edges: { key: string; source: string; target: string; handle?: string; change: Exclude<Change, 'changed'> }[];
}

export const edgeKey = (e: Pick<GraphEdge, 'source' | 'target' | 'handle'>): string =>
  `${e.source}→${e.target}${e.handle ? ` [${e.handle}]` : ''}`;

/** What changed from version `a` to version `b` (positions are not part of a version). */
export function diffGraphs(a: Graph, b: Graph): GraphDiff {
  const byId = (g: Graph) => new Map<string, GraphNode>(g.nodes.map((n) => [n.id, n]));
  const A = byId(a);
  const B = byId(b);
  const nodes: GraphDiff['nodes'] = {};
  const fields: GraphDiff['fields'] = {};
  for (const [id, na] of A) {
    const nb = B.get(id);
    if (!nb) {
      nodes[id] = 'removed';
      continue;
    }
    const diffs: FieldChange[] = [];
    if (na.type !== nb.type) diffs.push({ field: 'type', from: na.type, to: nb.type });
    for (const k of [...new Set([...Object.keys(na.data), ...Object.keys(nb.data)])].sort())
      if (canonical(na.data[k]) !== canonical(nb.data[k]))
        diffs.push({ field: `data.${k}`, from: na.data[k], to: nb.data[k] });
    nodes[id] = diffs.length ? 'changed' : 'same';
    if (diffs.length) fields[id] = diffs;
  }
  for (const id of B.keys()) if (!A.has(id)) nodes[id] = 'added';
  const keysOf = (g: Graph) => new Map(g.edges.map((e) => [edgeKey(e), e]));
  const EA = keysOf(a);
  const EB = keysOf(b);
  const edges: GraphDiff['edges'] = [];
  for (const [key, e] of EA)
    edges.push({ key, source: e.source, target: e.target, handle: e.handle, change: EB.has(key) ? 'same' : 'removed' });
  for (const [key, e] of EB)
    if (!EA.has(key)) edges.push({ key, source: e.source, target: e.target, handle: e.handle, change: 'added' });
  return { nodes, fields, edges };
}

/** The union of two versions (b's node where both have it), for one layout both sides share. */
export function unionGraph(a: Graph, b: Graph): Graph {
  const nodes = new Map<string, GraphNode>();
  for (const n of [...a.nodes, ...b.nodes]) nodes.set(n.id, n);
  const edges = new Map<string, GraphEdge>();
  for (const e of [...a.edges, ...b.edges]) edges.set(edgeKey(e), e);
  return { nodes: [...nodes.values()], edges: [...edges.values()] };
}
