import '@xyflow/react/dist/style.css';
import { useCallback, useEffect, useMemo, useState } from 'react';
import {
  addEdge,
  applyEdgeChanges,
  applyNodeChanges,
  Background,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  type Connection,
  type Edge,
  type EdgeChange,
  type Node,
  type NodeChange,
  type NodeProps,
} from '@xyflow/react';
import { toProblem, type ApiProblem, type ApiSchema, type Pathway as PathwayHead } from '../api';
import { useAuth } from '../auth';
import { AutoFit } from '../components/AutoFit';
import { SchemaForm } from '../components/SchemaForm';
import { Problem, Section } from '../components/ui';
import { normalizeGraph, type Graph, type GraphEdge } from '../graph';
import { layout, NODE_H } from '../graph-layout';
import { loadNodeSchemas, type JsonSchema, type NodeSchemas } from '../node-schemas';
import { apiGraphOf, designOf, errorsByNode, freshId, positionsOf, type Position as XY } from '../pathway-edit';
import { Link, navigate } from '../router';
import { useCanEdit } from '../use-can-edit';
import '../pathways.css';

/*
 * The pathway editor: add, connect, move, remove and configure nodes. Each node's settings form is
 * generated from its type's JSON Schema in the API's OpenAPI document (node-schemas.ts,
 * SchemaForm), so the editor knows no node type by heart. Every change is checked by the API's
 * validate route (debounced); its messages are shown on the nodes they name. Save records a new
 * version (PUT /v1/pathways/:id; POST for a new pathway) with the design graph in `pathway_data`,
 * which keeps each node's position. Everything has a keyboard path: the node list selects, the
 * panel connects and removes; in the graph, Enter selects a focused node and arrow keys move it.
 */

type Obj = Record<string, unknown>;
type EdData = { type: string; data: Obj; problems: string[] };
type EdNode = Node<EdData, 'ed'>;
type EdEdge = Edge<{ handle?: string }>;
type Validation = ApiSchema<'PathwayValidation'>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const labelOf = (n: EdNode) =>
  typeof n.data.data.label === 'string' && n.data.data.label.trim() ? n.data.data.label : n.id;

function EdNodeView({ id, data, selected }: NodeProps<EdNode>) {
  const bad = data.problems.length;
  const label = typeof data.data.label === 'string' && data.data.label.trim() ? data.data.label : id;
  return (
    <div
      className={`pw-node ed-node${selected ? ' selected' : ''}${bad ? ' invalid' : ''}`}
      data-node-id={id}
      data-problems={bad}
      title={bad ? data.problems.join('\n') : `${label} (${data.type})`}
    >
      <Handle type="target" position={Position.Top} />
      <div className="pw-node-label">{label}</div>
      <div className="pw-node-meta">
        <span className="pw-node-type">{data.type}</span>
        {bad > 0 && (
          <span className="ed-bad" aria-label={`${bad} problem${bad > 1 ? 's' : ''}`}>
            ⚠ {bad}
          </span>
        )}
      </div>
      <Handle type="source" position={Position.Bottom} />
    </div>
  );
}
const nodeTypes = { ed: EdNodeView };

/** The branch names an edge leaving this node may take (hints only: validation is the API's). */
function branchHints(type: string, data: Obj): string[] {
  const out: string[] = [];
  if (type === 'if') out.push('true', 'false');
  if (type === 'while') out.push('body', 'done');
  if (type === 'classify' && Array.isArray(data.categories))
    out.push(...data.categories.filter((c): c is string => typeof c === 'string'));
  if (type === 'human' || type === 'approval') {
    if (data.pause === true) out.push('resume');
    else if (Array.isArray(data.options))
      for (const o of data.options) {
        if (typeof o === 'string') out.push(o);
        else if (isObj(o)) out.push(String(o.value ?? o.label));
      }
    else out.push('approve', 'reject');
  }
  if (data.on_error === 'branch') out.push('error');
  return out;
}

function toEdges(edges: GraphEdge[]): EdEdge[] {
  return edges.map((e) => ({
    id: e.id,
    source: e.source,
    target: e.target,
    label: e.handle,
    data: { handle: e.handle },
    markerEnd: { type: MarkerType.ArrowClosed },
  }));
}

function graphOf(nodes: EdNode[], edges: EdEdge[]): Graph {
  return {
    nodes: nodes.map((n) => ({ id: n.id, type: n.data.type, data: n.data.data })),
    edges: edges.map((e) => ({
      id: e.id,
      source: e.source,
      target: e.target,
      ...(e.data?.handle?.trim() ? { handle: e.data.handle.trim() } : {}),
    })),
  };
}

function initialNodes(graph: Graph, saved: Record<string, XY>): EdNode[] {
  const all = graph.nodes.every((n) => saved[n.id]);
  const pos = all ? saved : layout(graph);
  return graph.nodes.map((n) => ({
    id: n.id,
    type: 'ed',
    position: pos[n.id] ?? { x: 0, y: 0 },
    data: { type: n.type, data: n.data, problems: [] },
  }));
}

const NEW_GRAPH: Graph = { nodes: [{ id: 'start', type: 'start', data: {} }], edges: [] };

export default function PathwayEditor({ params }: { params: Record<string, string> }) {
  const id = params.id as string | undefined;
  const { api } = useAuth();
  const canEditExisting = useCanEdit(id);
  const canEdit = id ? canEditExisting : true;
  const [schemas, setSchemas] = useState<NodeSchemas | null>(null);
  const [head, setHead] = useState<PathwayHead | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [nodes, setNodes] = useState<EdNode[]>([]);
  const [edges, setEdges] = useState<EdEdge[]>([]);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [selected, setSelected] = useState<string | null>(null);
  const [selectedEdge, setSelectedEdge] = useState<string | null>(null);
  const [dirty, setDirty] = useState(false);
  const [loaded, setLoaded] = useState(!id);
  const [validation, setValidation] = useState<Validation | null>(null);
  const [saving, setSaving] = useState(false);
  const [status, setStatus] = useState<string>('');
  const [addType, setAddType] = useState('transform');

  useEffect(() => {
    loadNodeSchemas()
      .then(setSchemas)
      .catch((e: unknown) => setProblem(toProblem(e)));
  }, []);

  // Load the head (or start a new graph with one start node).
  useEffect(() => {
    if (!id) {
      setNodes(initialNodes(NEW_GRAPH, {}));
      setEdges([]);
      return;
    }
    const abort = new AbortController();
    api
      .get<PathwayHead>(`/v1/pathways/${id}`, abort.signal)
      .then((h) => {
        const g = normalizeGraph(h.pathway_graph);
        setHead(h);
        setName(h.name);
        setDescription(h.description);
        setNodes(initialNodes(g, positionsOf(h.pathway_data)));
        setEdges(toEdges(g.edges));
        setLoaded(true);
      })
      .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, id]);

  // What the API stores: checked by its validate route, 400 ms after the last change.
  const graph = useMemo(() => graphOf(nodes, edges), [nodes, edges]);
  const graphKey = JSON.stringify(apiGraphOf(graph));
  useEffect(() => {
    if (!loaded || nodes.length === 0) return;
    const abort = new AbortController();
    const t = setTimeout(() => {
      api
        .raw<Validation>('POST', '/v1/pathways/validate', JSON.parse(graphKey) as unknown, abort.signal)
        .then(setValidation)
        .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    }, 400);
    return () => {
      clearTimeout(t);
      abort.abort();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, graphKey, loaded]);
  const found = useMemo(
    () =>
      errorsByNode(
        validation?.errors ?? [],
        nodes.map((n) => n.id),
      ),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [validation, graphKey],
  );

  // Leaving with unsaved changes asks first (a reload, closing the tab).
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);

  const change = useCallback(() => {
    setDirty(true);
    setStatus('');
  }, []);
  const onNodesChange = useCallback(
    (changes: NodeChange<EdNode>[]) => {
      setNodes((ns) => applyNodeChanges(changes, ns));
      if (changes.some((c) => c.type === 'position' || c.type === 'remove')) change();
      for (const c of changes) {
        if (c.type === 'select' && c.selected) {
          setSelected(c.id);
          setSelectedEdge(null);
        }
        if ((c.type === 'select' && !c.selected) || c.type === 'remove') setSelected((s) => (s === c.id ? null : s));
      }
    },
    [change],
  );
  const onEdgesChange = useCallback(
    (changes: EdgeChange<EdEdge>[]) => {
      setEdges((es) => applyEdgeChanges(changes, es));
      if (changes.some((c) => c.type === 'remove')) change();
      for (const c of changes) {
        if (c.type === 'select' && c.selected) {
          setSelectedEdge(c.id);
          setSelected(null);
        }
        if ((c.type === 'select' && !c.selected) || c.type === 'remove')
          setSelectedEdge((s) => (s === c.id ? null : s));
      }
    },
    [change],
  );
  const connect = useCallback(
    (c: Connection | { source: string; target: string }, handle?: string) => {
      const h = handle?.trim() || undefined;
      setEdges((es) =>
        addEdge(
          {
            ...c,
            sourceHandle: null,
            targetHandle: null,
            id: `e-${c.source}-${c.target}${h ? `-${h}` : ''}-${Date.now().toString(36)}`,
            label: h,
            data: { handle: h },
            markerEnd: { type: MarkerType.ArrowClosed },
          },
          es,
        ),
      );
      change();
    },
    [change],
  );

  const select = (nodeId: string | null) => {
    setSelected(nodeId);
    setSelectedEdge(null);
    setNodes((ns) => ns.map((n) => (n.selected === (n.id === nodeId) ? n : { ...n, selected: n.id === nodeId })));
  };
  const addNode = () => {
    const newId = freshId(
      addType,
      nodes.map((n) => n.id),
    );
    const from = nodes.find((n) => n.id === selected);
    const lowest = nodes.reduce((m, n) => Math.max(m, n.position.y), -NODE_H * 2);
    const position = from
      ? { x: from.position.x, y: from.position.y + NODE_H * 2 }
      : { x: nodes[0]?.position.x ?? 0, y: lowest + NODE_H * 2 };
    setNodes((ns) => [
      ...ns.map((n) => (n.selected ? { ...n, selected: false } : n)),
      { id: newId, type: 'ed', position, selected: true, data: { type: addType, data: {}, problems: [] } },
    ]);
    if (from) connect({ source: from.id, target: newId });
    setSelected(newId);
    setSelectedEdge(null);
    change();
    setStatus(`Added node ${newId}${from ? `, connected from ${from.id}` : ''}.`);
  };
  const removeNode = (nodeId: string) => {
    setNodes((ns) => ns.filter((n) => n.id !== nodeId));
    setEdges((es) => es.filter((e) => e.source !== nodeId && e.target !== nodeId));
    setSelected(null);
    change();
    setStatus(`Removed node ${nodeId}.`);
  };
  const setNodeData = (nodeId: string, data: Obj) => {
    setNodes((ns) => ns.map((n) => (n.id === nodeId ? { ...n, data: { ...n.data, data } } : n)));
    change();
  };
  const renameNode = (from: string, to: string) => {
    if (!to || to === from || nodes.some((n) => n.id === to)) return false;
    setNodes((ns) => ns.map((n) => (n.id === from ? { ...n, id: to } : n)));
    setEdges((es) =>
      es.map((e) => ({
        ...e,
        source: e.source === from ? to : e.source,
        target: e.target === from ? to : e.target,
      })),
    );
    setSelected(to);
    change();
    return true;
  };
  const setHandle = (edgeId: string, handle: string) => {
    const h = handle || undefined;
    setEdges((es) => es.map((e) => (e.id === edgeId ? { ...e, label: h, data: { handle: h } } : e)));
    change();
  };
  const removeEdge = (edgeId: string) => {
    setEdges((es) => es.filter((e) => e.id !== edgeId));
    setSelectedEdge(null);
    change();
  };

  const save = async () => {
    setSaving(true);
    setProblem(null);
    const positions = Object.fromEntries(nodes.map((n) => [n.id, n.position]));
    const body = {
      name: name.trim(),
      description,
      pathway_graph: apiGraphOf(graph),
      pathway_data: designOf(graph, positions),
    };
    try {
      if (!id) {
        const created = await api.post<PathwayHead>('/v1/pathways', body);
        setDirty(false);
        navigate(`/pathways/${created.id}`);
        return;
      }
      const before = head?.latest_version ?? 0;
      const saved = await api.raw<PathwayHead>('PUT', `/v1/pathways/${id}`, body);
      setHead(saved);
      setDirty(false);
      setStatus(
        saved.latest_version > before
          ? `Saved as version ${saved.latest_version}.`
          : `Saved (positions only: still version ${saved.latest_version}).`,
      );
    } catch (e) {
      setProblem(toProblem(e));
    } finally {
      setSaving(false);
    }
  };

  const shownNodes = useMemo(
    () => nodes.map((n) => ({ ...n, data: { ...n.data, problems: found.byNode[n.id] ?? [] } })),
    [nodes, found],
  );

  if (id && canEdit === false)
    return (
      <section className="card">
        <h1>{head?.name ?? 'Pathway'}</h1>
        <p role="status">
          You can read and run this pathway but not change it: editing needs the pathway role editor (or a workspace
          admin).
        </p>
        <Link to={`/pathways/${id}`}>Back to the pathway</Link>
      </section>
    );
  if ((id && !loaded) || canEdit === null)
    return problem ? <Problem problem={problem} /> : <p className="muted">Loading…</p>;

  const node = nodes.find((n) => n.id === selected);
  const edge = edges.find((e) => e.id === selectedEdge);
  const errors = validation?.errors ?? [];
  return (
    <>
      <div className="page-head">
        <h1>{id ? `Edit ${head?.name ?? ''}` : 'New pathway'}</h1>
        <div className="buttons">
          {id && <Link to={`/pathways/${id}`}>View{head ? ` (v${head.latest_version})` : ''}</Link>}
          <button
            type="button"
            className="primary"
            onClick={() => void save()}
            disabled={saving || !name.trim() || (!dirty && !!id)}
          >
            {saving ? 'Saving…' : id ? 'Save new version' : 'Create pathway'}
          </button>
        </div>
      </div>
      <div className="ed-meta">
        <label>
          Name
          <input
            value={name}
            onChange={(e) => {
              setName(e.target.value);
              change();
            }}
            required
            maxLength={200}
          />
        </label>
        <label>
          Description
          <input
            value={description}
            onChange={(e) => {
              setDescription(e.target.value);
              change();
            }}
            maxLength={5000}
          />
        </label>
      </div>
      <p className="sr-status" role="status" aria-live="polite">
        {status}
      </p>
      <Problem problem={problem} />
      <div className="graph-layout ed-layout">
        <div>
          <div className="ed-toolbar" role="toolbar" aria-label="Graph">
            <label>
              Node type{' '}
              <select value={addType} onChange={(e) => setAddType(e.target.value)}>
                {(schemas?.types ?? ['start', 'transform', 'delay', 'output']).map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            </label>
            <button type="button" onClick={addNode}>
              {node ? `Add after ${node.id}` : 'Add node'}
            </button>
            {node && (
              <button type="button" onClick={() => select(null)}>
                Clear selection
              </button>
            )}
          </div>
          <div className="pw-graph ed-graph">
            <ReactFlow<EdNode, EdEdge>
              nodes={shownNodes}
              edges={edges}
              nodeTypes={nodeTypes}
              onNodesChange={onNodesChange}
              onEdgesChange={onEdgesChange}
              onConnect={(c) => connect(c)}
              onPaneClick={() => select(null)}
              fitView
              fitViewOptions={{ padding: 0.2, maxZoom: 1.2 }}
              minZoom={0.2}
              deleteKeyCode={['Delete', 'Backspace']}
            >
              <Background gap={20} size={1} />
              <Controls showInteractive={false} />
              <AutoFit count={nodes.length} />
            </ReactFlow>
          </div>
          <nav className="node-list" aria-label="Nodes">
            {nodes.map((n) => (
              <button
                key={n.id}
                type="button"
                className={`node-chip${found.byNode[n.id] ? ' invalid' : ''}`}
                aria-pressed={n.id === selected}
                onClick={() => select(n.id === selected ? null : n.id)}
              >
                {labelOf(n)} <span className="muted">{n.data.type}</span>
              </button>
            ))}
          </nav>
        </div>
        <div className="node-panel">
          {node && schemas ? (
            <NodePanel
              key={node.id}
              node={node}
              nodes={nodes}
              edges={edges}
              schemas={schemas}
              problems={found.byNode[node.id] ?? []}
              onData={(d) => setNodeData(node.id, d)}
              onRename={(to) => renameNode(node.id, to)}
              onRemove={() => removeNode(node.id)}
              onConnect={(target, handle) => connect({ source: node.id, target }, handle)}
              onHandle={setHandle}
              onRemoveEdge={removeEdge}
            />
          ) : edge ? (
            <Section title={`Edge ${edge.source} → ${edge.target}`}>
              <EdgeFields
                edge={edge}
                hints={branchHints(
                  nodes.find((n) => n.id === edge.source)?.data.type ?? '',
                  nodes.find((n) => n.id === edge.source)?.data.data ?? {},
                )}
                onHandle={setHandle}
                onRemove={removeEdge}
              />
            </Section>
          ) : (
            <Section title="Settings">
              <p className="muted">
                Select a node (click it, or use the node list) to configure it. Drag from a node&apos;s lower handle to
                another node to connect them, or use the node&apos;s Connect form.
              </p>
            </Section>
          )}
          <Section title="Validation">
            {!validation ? (
              <p className="muted">Checking…</p>
            ) : validation.valid ? (
              <p className="ok" data-valid="true">
                Valid.
              </p>
            ) : (
              <p className="error" data-valid="false">
                {errors.length} problem{errors.length === 1 ? '' : 's'}
                {found.graph.length < errors.length ? ' (on the nodes marked ⚠)' : ''}.
              </p>
            )}
            {found.graph.length > 0 && (
              <ul className="problems">
                {found.graph.map((m) => (
                  <li key={m} className="error">
                    {m}
                  </li>
                ))}
              </ul>
            )}
            {(validation?.warnings ?? []).length > 0 && (
              <ul className="problems">
                {validation!.warnings!.map((m) => (
                  <li key={m} className="muted">
                    {m}
                  </li>
                ))}
              </ul>
            )}
          </Section>
        </div>
      </div>
    </>
  );
}

function NodePanel({
  node,
  nodes,
  edges,
  schemas,
  problems,
  onData,
  onRename,
  onRemove,
  onConnect,
  onHandle,
  onRemoveEdge,
}: {
  node: EdNode;
  nodes: EdNode[];
  edges: EdEdge[];
  schemas: NodeSchemas;
  problems: string[];
  onData(d: Obj): void;
  onRename(to: string): boolean;
  onRemove(): void;
  onConnect(target: string, handle?: string): void;
  onHandle(edgeId: string, handle: string): void;
  onRemoveEdge(edgeId: string): void;
}) {
  const schema: JsonSchema = schemas.data[node.data.type] ?? { type: 'object' };
  const [newId, setNewId] = useState(node.id);
  const [renameBad, setRenameBad] = useState(false);
  const others = nodes.filter((n) => n.id !== node.id);
  const [target, setTarget] = useState(others[0]?.id ?? '');
  const [handle, setHandleText] = useState('');
  const hints = branchHints(node.data.type, node.data.data);
  const outgoing = edges.filter((e) => e.source === node.id);
  const incoming = edges.filter((e) => e.target === node.id);
  const hasCommon = schemas.common.some((k) => k in (schema.properties ?? {}));
  const to = others.some((o) => o.id === target) ? target : (others[0]?.id ?? '');
  return (
    <Section title={`Node ${node.id}`} actions={<span className="pw-node-type">{node.data.type}</span>}>
      {problems.length > 0 && (
        <ul className="problems" aria-label="Problems of this node">
          {problems.map((m) => (
            <li key={m} className="error">
              {m}
            </li>
          ))}
        </ul>
      )}
      <form
        className="ed-rename"
        onSubmit={(e) => {
          e.preventDefault();
          setRenameBad(!onRename(newId.trim()));
        }}
      >
        <label htmlFor="node-id">Node id</label>
        <div className="row">
          <input
            id="node-id"
            value={newId}
            onChange={(e) => setNewId(e.target.value)}
            aria-invalid={renameBad || undefined}
            spellCheck={false}
          />
          <button type="submit" disabled={newId.trim() === node.id || !newId.trim()}>
            Rename
          </button>
        </div>
        {renameBad && <small className="error">That id is taken.</small>}
      </form>
      <SchemaForm
        schema={schema}
        value={node.data.data}
        onChange={onData}
        idPrefix={`node-${node.id}`}
        omit={schemas.common}
      />
      {hasCommon && (
        <details className="ed-common">
          <summary>Label, notes and error policy</summary>
          <SchemaForm
            schema={schema}
            value={node.data.data}
            onChange={onData}
            idPrefix={`node-${node.id}-common`}
            only={schemas.common}
          />
        </details>
      )}
      <h4>Edges out</h4>
      {outgoing.length === 0 && <p className="muted">None.</p>}
      {outgoing.map((e) => (
        <EdgeFields key={e.id} edge={e} hints={hints} onHandle={onHandle} onRemove={onRemoveEdge} />
      ))}
      {incoming.length > 0 && (
        <p className="muted">
          Edges in: {incoming.map((e) => `${e.source}${e.data?.handle ? ` [${e.data.handle}]` : ''}`).join(', ')}
        </p>
      )}
      {others.length > 0 && (
        <form
          className="ed-connect"
          aria-label={`Connect ${node.id}`}
          onSubmit={(e) => {
            e.preventDefault();
            if (!to) return;
            onConnect(to, handle);
            setHandleText('');
          }}
        >
          <label>
            Connect to
            <select value={to} onChange={(e) => setTarget(e.target.value)}>
              {others.map((o) => (
                <option key={o.id} value={o.id}>
                  {labelOf(o)}
                </option>
              ))}
            </select>
          </label>
          <label>
            Branch
            <input
              value={handle}
              onChange={(e) => setHandleText(e.target.value)}
              list={`hints-${node.id}`}
              placeholder={hints.length ? hints.join(' / ') : 'none'}
              spellCheck={false}
            />
          </label>
          <datalist id={`hints-${node.id}`}>
            {hints.map((h) => (
              <option key={h} value={h} />
            ))}
          </datalist>
          <button type="submit">Connect</button>
        </form>
      )}
      <div className="buttons ed-remove">
        <button type="button" className="danger" onClick={onRemove}>
          Remove node
        </button>
      </div>
    </Section>
  );
}

function EdgeFields({
  edge,
  hints,
  onHandle,
  onRemove,
}: {
  edge: EdEdge;
  hints: string[];
  onHandle(edgeId: string, handle: string): void;
  onRemove(edgeId: string): void;
}) {
  const listId = `edge-hints-${edge.id}`;
  return (
    <div className="ed-edge" data-edge={`${edge.source}->${edge.target}`}>
      <span>
        → <strong>{edge.target}</strong>
      </span>
      <label>
        <span className="sr-only">Branch of the edge to {edge.target}</span>
        <input
          value={edge.data?.handle ?? ''}
          onChange={(e) => onHandle(edge.id, e.target.value)}
          list={listId}
          placeholder="branch (none)"
          spellCheck={false}
        />
      </label>
      <datalist id={listId}>
        {hints.map((h) => (
          <option key={h} value={h} />
        ))}
      </datalist>
      <button type="button" onClick={() => onRemove(edge.id)} aria-label={`Remove the edge to ${edge.target}`}>
        Remove
      </button>
    </div>
  );
}
