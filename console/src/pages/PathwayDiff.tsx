import '@xyflow/react/dist/style.css';
import { useEffect, useMemo, useState } from 'react';
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
} from '@xyflow/react';
import { toProblem, type ApiProblem, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { AutoFit } from '../components/AutoFit';
import { Problem, Section } from '../components/ui';
import { normalizeGraph, nodeLabel, type Graph } from '../graph';
import { layout } from '../graph-layout';
import { diffGraphs, edgeKey, unionGraph, type Change, type GraphDiff } from '../pathway-edit';
import { Link, setQuery, useLocation } from '../router';
import '../pathways.css';

/*
 * Two versions of a pathway side by side (?from=N&to=M, default the two newest): nodes and edges
 * added (green, on the right), removed (red, on the left) and changed (amber, both sides), laid out
 * once over both versions so a node sits in the same place on each side, and the same as a list
 * that names every changed field.
 */

type Versions = ApiSchema<'PathwayVersionList'>;
type Version = ApiSchema<'PathwayVersion'>;
type DiffData = { label: string; type: string; change: Change };
type DiffNode = Node<DiffData, 'diff'>;

const MARK: Record<Change, string> = { added: '+ added', removed: '− removed', changed: '~ changed', same: '' };

function DiffNodeView({ id, data }: NodeProps<DiffNode>) {
  return (
    <div className={`pw-node diff-${data.change}`} data-node-id={id} data-change={data.change}>
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <div className="pw-node-label">{data.label}</div>
      <div className="pw-node-meta">
        <span className="pw-node-type">{data.type}</span>
        {data.change !== 'same' && <span className="diff-mark">{MARK[data.change]}</span>}
      </div>
      <Handle type="source" position={Position.Bottom} isConnectable={false} />
    </div>
  );
}
const nodeTypes = { diff: DiffNodeView };

function Side({
  graph,
  diff,
  side,
  positions,
}: {
  graph: Graph;
  diff: GraphDiff;
  side: 'from' | 'to';
  positions: Record<string, { x: number; y: number }>;
}) {
  const nodes = useMemo<DiffNode[]>(
    () =>
      graph.nodes.map((n) => ({
        id: n.id,
        type: 'diff',
        position: positions[n.id] ?? { x: 0, y: 0 },
        data: { label: nodeLabel(n), type: n.type, change: diff.nodes[n.id] ?? 'same' },
        draggable: false,
        connectable: false,
        ariaLabel: `${nodeLabel(n)}, ${n.type}${diff.nodes[n.id] !== 'same' ? `, ${diff.nodes[n.id]}` : ''}`,
      })),
    [graph, diff, positions],
  );
  const edges = useMemo<Edge[]>(
    () =>
      graph.edges.map((e) => {
        const change = diff.edges.find((d) => d.key === edgeKey(e))?.change ?? 'same';
        const shown = (side === 'from' && change === 'removed') || (side === 'to' && change === 'added');
        return {
          id: e.id,
          source: e.source,
          target: e.target,
          label: e.handle,
          className: shown ? `diff-edge-${change}` : undefined,
          markerEnd: { type: MarkerType.ArrowClosed },
        };
      }),
    [graph, diff, side],
  );
  return (
    <div className="pw-graph diff-graph" data-side={side}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        fitView
        fitViewOptions={{ padding: 0.15 }}
        minZoom={0.2}
        nodesDraggable={false}
        nodesConnectable={false}
      >
        <Background gap={20} size={1} />
        <Controls showInteractive={false} />
        <AutoFit count={nodes.length} maxZoom={1} />
      </ReactFlow>
    </div>
  );
}

const show = (v: unknown) => (v === undefined ? '—' : JSON.stringify(v));

export default function PathwayDiff({ params }: { params: Record<string, string> }) {
  const id = params.id;
  const { api } = useAuth();
  const { query } = useLocation();
  const [versions, setVersions] = useState<Versions | null>(null);
  const [pair, setPair] = useState<{ a: Version; b: Version } | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const latest = versions?.latest_version ?? 0;
  const to = Number(query.get('to') ?? 0) || latest;
  const from = Number(query.get('from') ?? 0) || Math.max(1, to - 1);

  useEffect(() => {
    const abort = new AbortController();
    api
      .get<Versions>(`/v1/pathways/${id}/versions`, abort.signal)
      .then(setVersions)
      .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, id]);
  useEffect(() => {
    if (!from || !to) return;
    const abort = new AbortController();
    setPair(null);
    Promise.all([
      api.get<Version>(`/v1/pathways/${id}/versions/${from}`, abort.signal),
      api.get<Version>(`/v1/pathways/${id}/versions/${to}`, abort.signal),
    ])
      .then(([a, b]) => setPair({ a, b }))
      .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, id, from, to]);

  const view = useMemo(() => {
    if (!pair) return null;
    const a = normalizeGraph(pair.a.pathway_graph);
    const b = normalizeGraph(pair.b.pathway_graph);
    return { a, b, diff: diffGraphs(a, b), positions: layout(unionGraph(a, b)) };
  }, [pair]);

  const pick = (
    <form className="filters" aria-label="Versions to compare" onSubmit={(e) => e.preventDefault()}>
      {(['from', 'to'] as const).map((k) => (
        <label key={k}>
          {k === 'from' ? 'From' : 'To'}
          <select value={String(k === 'from' ? from : to)} onChange={(e) => setQuery({ [k]: e.target.value })}>
            {versions?.versions.map((v) => (
              <option key={v.version} value={v.version}>
                v{v.version}
                {v.version === latest ? ' (head)' : ''}
              </option>
            ))}
          </select>
        </label>
      ))}
    </form>
  );
  const counts = view
    ? (['added', 'removed', 'changed'] as const).map(
        (c) => [c, Object.values(view.diff.nodes).filter((x) => x === c).length] as const,
      )
    : [];
  const edgeChanges = view ? view.diff.edges.filter((e) => e.change !== 'same') : [];

  return (
    <>
      <div className="page-head">
        <h1>
          {pair ? pair.b.name : 'Pathway'}: v{from} → v{to}
        </h1>
        <Link to={`/pathways/${id}`}>Back to the pathway</Link>
      </div>
      {pick}
      <Problem problem={problem} />
      {view && pair && (
        <>
          <p className="diff-summary" role="status">
            {counts.map(([c, n]) => `${n} node${n === 1 ? '' : 's'} ${c}`).join(', ')};{' '}
            {edgeChanges.filter((e) => e.change === 'added').length} edge(s) added,{' '}
            {edgeChanges.filter((e) => e.change === 'removed').length} removed.
          </p>
          <div className="two diff-sides">
            <Section title={`v${from}`}>
              <p className="muted small">{pair.a.note ?? ''}</p>
              <Side graph={view.a} diff={view.diff} side="from" positions={view.positions} />
            </Section>
            <Section title={`v${to}`}>
              <p className="muted small">{pair.b.note ?? ''}</p>
              <Side graph={view.b} diff={view.diff} side="to" positions={view.positions} />
            </Section>
          </div>
          <Section title="Changes">
            <ul className="diff-list">
              {Object.entries(view.diff.nodes)
                .filter(([, c]) => c !== 'same')
                .map(([nodeId, c]) => (
                  <li key={nodeId} className={`diff-${c}`} data-node={nodeId} data-change={c}>
                    <strong>{MARK[c]}</strong> node <code>{nodeId}</code>
                    {view.diff.fields[nodeId] && (
                      <ul>
                        {view.diff.fields[nodeId].map((f) => (
                          <li key={f.field}>
                            <code>{f.field}</code>: <code>{show(f.from)}</code> → <code>{show(f.to)}</code>
                          </li>
                        ))}
                      </ul>
                    )}
                  </li>
                ))}
              {edgeChanges.map((e) => (
                <li
                  key={`${e.change}-${e.key}`}
                  className={`diff-${e.change}`}
                  data-edge={e.key}
                  data-change={e.change}
                >
                  <strong>{MARK[e.change]}</strong> edge <code>{e.key}</code>
                </li>
              ))}
              {counts.every(([, n]) => n === 0) && edgeChanges.length === 0 && (
                <li className="muted">The graphs are the same (name or description may differ).</li>
              )}
            </ul>
          </Section>
        </>
      )}
      {!view && !problem && <p className="muted">Loading…</p>}
    </>
  );
}
