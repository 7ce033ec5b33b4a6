import { useEffect, useMemo, useState } from 'react';
import { toProblem, type ApiProblem, type ApiSchema, type Pathway as PathwayHead } from '../api';
import { useAuth } from '../auth';
import PathwayGraph from '../components/PathwayGraph';
import { JsonField, SchemaForm } from '../components/SchemaForm';
import { ago, Badge, Json, Problem, Section, useTick } from '../components/ui';
import { normalizeGraph, nodeLabel, type Graph } from '../graph';
import type { JsonSchema } from '../node-schemas';
import { inputSchemaOf, positionsOf, withPositions } from '../pathway-edit';
import { Link, navigate, setQuery, useLocation } from '../router';
import { useCanEdit } from '../use-can-edit';
import { useWidth } from '../use-width';
import '../pathways.css';

/*
 * One pathway: the graph of its head or of any kept version (?version=N), the version history with
 * links to a side-by-side diff, and Execute: an input form generated from the start node's
 * `data.input_schema` (or raw JSON), which starts a run of the version shown and opens its run page.
 * Edit is offered to pathway editors (useCanEdit); anyone who may read the pathway may run it.
 */

type Versions = ApiSchema<'PathwayVersionList'>;
type Version = ApiSchema<'PathwayVersion'>;

export default function Pathway({ params }: { params: Record<string, string> }) {
  const id = params.id;
  const { api } = useAuth();
  const { query } = useLocation();
  const now = useTick(10_000);
  const canEdit = useCanEdit(id);
  const [head, setHead] = useState<PathwayHead | null>(null);
  const [versions, setVersions] = useState<Versions | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const wanted = Number(query.get('version') ?? 0) || null;
  const [shown, setShown] = useState<{ version: number; graph: Graph } | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  // The read-only graph fits itself once, when drawn: drawn again when its card's width changes much.
  const [graphBox, graphWidth] = useWidth<HTMLDivElement>();

  useEffect(() => {
    const abort = new AbortController();
    Promise.all([
      api.get<PathwayHead>(`/v1/pathways/${id}`, abort.signal),
      api.get<Versions>(`/v1/pathways/${id}/versions`, abort.signal),
    ])
      .then(([h, v]) => {
        setHead(h);
        setVersions(v);
      })
      .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, id]);

  // The graph shown: the head's (with the editor's saved positions) or a kept version's (laid out).
  useEffect(() => {
    if (!head) return;
    const version = wanted ?? head.latest_version;
    if (version === head.latest_version) {
      setShown({
        version,
        graph: withPositions(normalizeGraph(head.pathway_graph), positionsOf(head.pathway_data)),
      });
      return;
    }
    const abort = new AbortController();
    api
      .get<Version>(`/v1/pathways/${id}/versions/${version}`, abort.signal)
      .then((v) => setShown({ version, graph: normalizeGraph(v.pathway_graph) }))
      .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, id, head, wanted]);

  if (!head) return problem ? <Problem problem={problem} /> : <p className="muted">Loading…</p>;
  const node = shown?.graph.nodes.find((n) => n.id === selected);
  const latest = head.latest_version;
  return (
    <>
      <div className="page-head">
        <div>
          <h1>{head.name}</h1>
          {head.description && <p className="muted">{head.description}</p>}
        </div>
        <div className="buttons">
          <Badge value={head.is_active ? 'active' : 'inactive'} />
          {canEdit && (
            <Link to={`/pathways/${id}/edit`} className="button primary-link">
              Edit
            </Link>
          )}
          {latest > 1 && (
            <Link to={`/pathways/${id}/diff?from=${latest - 1}&to=${latest}`} className="button">
              Compare versions
            </Link>
          )}
        </div>
      </div>
      <Problem problem={problem} />
      <div className="graph-layout">
        <Section
          title={shown ? `Graph, version ${shown.version}${shown.version === latest ? ' (head)' : ''}` : 'Graph'}
          actions={
            versions && versions.versions.length > 1 ? (
              <label className="inline">
                Version{' '}
                <select
                  value={String(shown?.version ?? latest)}
                  onChange={(e) =>
                    setQuery({ version: Number(e.target.value) === latest ? undefined : e.target.value })
                  }
                >
                  {versions.versions.map((v) => (
                    <option key={v.version} value={v.version}>
                      v{v.version}
                      {v.version === latest ? ' (head)' : ''}
                    </option>
                  ))}
                </select>
              </label>
            ) : undefined
          }
        >
          <div ref={graphBox}>
            {shown && shown.graph.nodes.length > 0 ? (
              <PathwayGraph
                key={Math.round(graphWidth / 120)}
                graph={shown.graph}
                selected={selected}
                onSelect={setSelected}
                height={440}
              />
            ) : (
              <p className="muted">{shown ? 'This version has no nodes.' : 'Loading…'}</p>
            )}
          </div>
          {node && (
            <div className="node-panel">
              <h3>
                {nodeLabel(node)} <span className="muted">({node.type})</span>
              </h3>
              <Json value={node.data} label={`data of node ${node.id}`} />
            </div>
          )}
        </Section>
        {shown && (
          <Execute
            pathwayId={id}
            version={shown.version}
            latest={latest}
            graph={shown.graph}
            key={`${shown.version}`}
          />
        )}
      </div>
      <Section title="Versions">
        <div className="table-wrap">
          <table className="versions">
            <thead>
              <tr>
                <th>Version</th>
                <th>Note</th>
                <th>Nodes</th>
                <th>Saved</th>
                <th>Compare</th>
              </tr>
            </thead>
            <tbody>
              {versions?.versions.map((v) => (
                <tr key={v.version} data-version={v.version}>
                  <td>
                    <Link to={`/pathways/${id}${v.version === latest ? '' : `?version=${v.version}`}`}>
                      v{v.version}
                      {v.version === latest ? ' (head)' : ''}
                    </Link>
                  </td>
                  <td className="step">{v.note ?? '—'}</td>
                  <td>{v.node_count}</td>
                  <td title={v.created_at}>{ago(v.created_at, now)}</td>
                  <td>
                    {v.version > 1 && versions.versions.some((o) => o.version === v.version - 1) ? (
                      <Link to={`/pathways/${id}/diff?from=${v.version - 1}&to=${v.version}`}>
                        v{v.version - 1} → v{v.version}
                      </Link>
                    ) : (
                      '—'
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
    </>
  );
}

/** Runs the version shown with an input from the start node's schema (or raw JSON), then opens the run. */
function Execute({
  pathwayId,
  version,
  latest,
  graph,
}: {
  pathwayId: string;
  version: number;
  latest: number;
  graph: Graph;
}) {
  const { api } = useAuth();
  const schema = useMemo(() => inputSchemaOf(graph) as JsonSchema | null, [graph]);
  const [mode, setMode] = useState<'form' | 'json'>(schema ? 'form' : 'json');
  const [input, setInput] = useState<Record<string, unknown>>({});
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const run = async () => {
    setBusy(true);
    setProblem(null);
    try {
      const res = await api.post<ApiSchema<'JobAccepted'>>(`/v1/pathways/${pathwayId}/execute`, {
        input,
        ...(version !== latest ? { pathway_version: version } : {}),
      });
      navigate(`/runs/${res.job_id}`);
    } catch (e) {
      setProblem(toProblem(e));
      setBusy(false);
    }
  };
  return (
    <Section title={`Execute v${version}`}>
      <form
        className="execute"
        aria-label="Execute"
        onSubmit={(e) => {
          e.preventDefault();
          void run();
        }}
      >
        {schema && (
          <fieldset className="segmented">
            <legend className="sr-only">Input as</legend>
            <label>
              <input type="radio" name="input-mode" checked={mode === 'form'} onChange={() => setMode('form')} /> Form
            </label>
            <label>
              <input type="radio" name="input-mode" checked={mode === 'json'} onChange={() => setMode('json')} /> JSON
            </label>
          </fieldset>
        )}
        {schema && mode === 'form' ? (
          <SchemaForm schema={schema} value={input} onChange={setInput} idPrefix="input" />
        ) : (
          <JsonField
            id="input-json"
            label="Input"
            value={input}
            onChange={(v) =>
              setInput(v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {})
            }
            description={schema ? 'the run input' : 'the run input; the start node declares no input_schema'}
            rows={6}
          />
        )}
        <Problem problem={problem} />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Starting…' : 'Execute'}
        </button>
      </form>
    </Section>
  );
}
