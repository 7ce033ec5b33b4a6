import '@xyflow/react/dist/style.css';
import { useEffect, useMemo, useRef } from 'react';
import {
  Background,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  type Edge,
  type Node,
  type NodeProps,
  useReactFlow,
  useStore,
} from '@xyflow/react';
import { nodeLabel, type Graph } from '../graph';
import { layout, NODE_H } from '../graph-layout';
import type { NodeRun, NodeState } from '../run-state';

/*
 * A pathway graph drawn with React Flow, laid out by dagre unless the graph carries saved positions.
 * With `states`, each node is coloured by its run state (the run page folds them from the job
 * stream); a click (or Enter on a focused node) selects it. Read-only here: the editor builds on it.
 */

export interface NodeBadge {
  state: NodeState;
  run?: NodeRun;
}

type CortexNodeData = {
  label: string;
  type: string;
  state?: NodeState;
  run?: NodeRun;
  selected: boolean;
};
type CortexNode = Node<CortexNodeData, 'cortex'>;

function CortexNodeView({ data, id }: NodeProps<CortexNode>) {
  const items = data.run?.items;
  return (
    <div
      className={`pw-node state-${data.state ?? 'none'}${data.selected ? ' selected' : ''}`}
      data-node-id={id}
      data-state={data.state ?? ''}
      title={`${data.label} (${data.type})${data.state ? `: ${data.state}` : ''}`}
    >
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <div className="pw-node-label">{data.label}</div>
      <div className="pw-node-meta">
        <span className="pw-node-type">{data.type}</span>
        {data.state && <span className="pw-node-state">{data.state}</span>}
        {data.run && data.run.visits > 1 && <span className="pw-node-visits">×{data.run.visits}</span>}
      </div>
      {items && items.total > 0 && (
        <div className="pw-items" aria-label={`${items.done} of ${items.total} items`}>
          <div className="pw-items-bar" style={{ width: `${Math.round((items.done * 100) / items.total)}%` }} />
          <span>
            {items.done}/{items.total} items
          </span>
        </div>
      )}
      <Handle type="source" position={Position.Bottom} isConnectable={false} />
    </div>
  );
}

const nodeTypes = { cortex: CortexNodeView };

/** Fits the graph again when its box changes size (a phone turned, the window resized) or its nodes change. */
function FitOnResize({ nodeCount }: { nodeCount: number }) {
  const { fitView } = useReactFlow();
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  useEffect(() => {
    if (width && height) void fitView({ padding: 0.15 });
  }, [fitView, width, height, nodeCount]);
  return null;
}

export interface PathwayGraphProps {
  graph: Graph;
  /** Node id → its run state (run page); absent: the graph alone. */
  states?: (id: string) => NodeBadge | undefined;
  selected?: string | null;
  onSelect?: (id: string | null) => void;
  /** Changes whenever a state changed (the states function is read again). */
  version?: number;
  /** Default: the laid-out graph's height at full size, within 260–640 px. */
  height?: number;
}

export default function PathwayGraph({ graph, states, selected, onSelect, version, height }: PathwayGraphProps) {
  const positions = useMemo(() => layout(graph), [graph]);
  const fit = useMemo(() => {
    const ys = Object.values(positions).map((p) => p.y);
    const tall = ys.length ? Math.max(...ys) - Math.min(...ys) + NODE_H : 0;
    return Math.min(640, Math.max(260, tall + 80));
  }, [positions]);
  // A node keeps its object while what it shows is unchanged, so React Flow re-renders only the
  // nodes an entry changed (a run's view changes in place; `version` says when).
  const made = useRef(new Map<string, { key: string; node: CortexNode }>());
  const nodes = useMemo<CortexNode[]>(
    () =>
      graph.nodes.map((n) => {
        const s = states?.(n.id);
        const run = s?.run ? { ...s.run } : undefined;
        const position = positions[n.id] ?? { x: 0, y: 0 };
        const data = { label: nodeLabel(n), type: n.type, state: s?.state, run, selected: selected === n.id };
        const key = JSON.stringify([data, position]);
        const prev = made.current.get(n.id);
        if (prev?.key === key) return prev.node;
        const node: CortexNode = {
          id: n.id,
          type: 'cortex',
          position,
          data,
          draggable: false,
          connectable: false,
          ariaLabel: `${data.label}, ${n.type}${s ? `, ${s.state}` : ''}`,
        };
        made.current.set(n.id, { key, node });
        return node;
      }),
    // version: the states function reads a view that changes in place
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [graph, positions, states, selected, version],
  );
  const edges = useMemo<Edge[]>(
    () =>
      graph.edges.map((e) => {
        const from = states?.(e.source)?.state;
        const to = states?.(e.target)?.state;
        const taken =
          !!from && !!to && from !== 'pending' && from !== 'skipped' && to !== 'pending' && to !== 'skipped';
        return {
          id: e.id,
          source: e.source,
          target: e.target,
          label: e.handle,
          animated: taken && to === 'running',
          className: taken ? 'taken' : undefined,
          markerEnd: { type: MarkerType.ArrowClosed },
        };
      }),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [graph, states, version],
  );
  return (
    <div className="pw-graph" style={{ height: height ?? fit }}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        fitView
        fitViewOptions={{ padding: 0.15 }}
        minZoom={0.2}
        maxZoom={1.25}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable
        onNodeClick={(_, n) => onSelect?.(n.id)}
        onPaneClick={() => onSelect?.(null)}
        onKeyDown={(e) => {
          // Enter or Space on a focused node selects it (React Flow focuses nodes with Tab).
          const el = (e.target as HTMLElement).closest('[data-id]');
          if ((e.key === 'Enter' || e.key === ' ') && el) {
            e.preventDefault();
            onSelect?.(el.getAttribute('data-id'));
          }
        }}
      >
        <FitOnResize nodeCount={nodes.length} />
        <Background gap={20} size={1} />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
