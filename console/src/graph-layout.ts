import dagre from '@dagrejs/dagre';
import type { Graph } from './graph';

/** Node box size the layout reserves (the node's CSS keeps within it). */
const NODE_W = 170;
export const NODE_H = 64;

/**
 * Positions for a graph without saved ones: dagre's layered layout, top to bottom, so parallel
 * branches sit side by side and a join below them (docs/decisions.md, "Console").
 */
export function layout(g: Graph): Record<string, { x: number; y: number }> {
  if (g.nodes.every((n) => n.position)) return Object.fromEntries(g.nodes.map((n) => [n.id, n.position!]));
  const d = new dagre.graphlib.Graph();
  d.setGraph({ rankdir: 'TB', nodesep: 36, ranksep: 56, marginx: 8, marginy: 8 });
  d.setDefaultEdgeLabel(() => ({}));
  for (const n of g.nodes) d.setNode(n.id, { width: NODE_W, height: NODE_H });
  for (const e of g.edges) if (d.hasNode(e.source) && d.hasNode(e.target)) d.setEdge(e.source, e.target);
  dagre.layout(d);
  return Object.fromEntries(
    g.nodes.map((n) => {
      const p = d.node(n.id);
      return [n.id, { x: p.x - NODE_W / 2, y: p.y - NODE_H / 2 }];
    }),
  );
}
