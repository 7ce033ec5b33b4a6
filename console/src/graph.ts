/*
 * A pathway graph as the console draws it, from either form the API stores (docs/pathways.md):
 * nodes with ids and edges { source, target, handle }, or the index form (nodes without ids, edges
 * [source, target, handle?]) where a node's id is its position. Pure and dependency-free.
 */

export interface GraphNode {
  id: string;
  type: string;
  data: Record<string, unknown>;
  /** An editor's saved position, when every node has one. */
  position?: { x: number; y: number };
}

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  /** The branch label of a branching node's edge (if: true/false, classify: a category, human: an answer). */
  handle?: string;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const idOf = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;

/** The graph in one shape; anything unreadable becomes an empty graph (a page shows "no graph"). */
export function normalizeGraph(raw: unknown): Graph {
  if (!isObject(raw) || !Array.isArray(raw.nodes)) return { nodes: [], edges: [] };
  const nodes: GraphNode[] = raw.nodes.filter(isObject).map((n, i) => {
    const p = n.position;
    const position = isObject(p) && typeof p.x === 'number' && typeof p.y === 'number' ? { x: p.x, y: p.y } : undefined;
    return {
      id: idOf(n.id) ?? String(i),
      type: typeof n.type === 'string' ? n.type : 'unknown',
      data: isObject(n.data) ? n.data : {},
      ...(position ? { position } : {}),
    };
  });
  const edges: GraphEdge[] = [];
  for (const [i, e] of (Array.isArray(raw.edges) ? raw.edges : []).entries()) {
    const [source, target, handle] = Array.isArray(e)
      ? [idOf(e[0]), idOf(e[1]), idOf(e[2])]
      : isObject(e)
        ? [idOf(e.source), idOf(e.target), idOf(e.handle) ?? idOf(e.sourceHandle)]
        : [undefined, undefined, undefined];
    if (source !== undefined && target !== undefined)
      edges.push({ id: `e${i}-${source}-${target}`, source, target, ...(handle ? { handle } : {}) });
  }
  // Saved positions are used only when every node has one; otherwise the page lays the graph out.
  if (!nodes.every((n) => n.position)) for (const n of nodes) delete n.position;
  return { nodes, edges };
}

/** The label a node shows: its data.label, else its id. */
export const nodeLabel = (n: GraphNode): string =>
  typeof n.data.label === 'string' && n.data.label.trim() ? n.data.label : n.id;

/** The ids of the nodes with an edge into `id`. */
export const predecessors = (g: Graph, id: string): string[] =>
  g.edges.filter((e) => e.target === id).map((e) => e.source);
