import { useCallback, useEffect, useMemo, useState } from 'react';
import { qs, toProblem, type ApiProblem, type ApiSchema, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { AddToDataset } from '../components/AddToDataset';
import { Answer } from '../components/Answer';
import PathwayGraph, { type NodeBadge } from '../components/PathwayGraph';
import { StreamView } from '../components/StreamView';
import { Badge, duration, Json, Problem, Section, ago, shortId, useTick } from '../components/ui';
import { normalizeGraph, nodeLabel, predecessors, type Graph } from '../graph';
import { Link, navigate } from '../router';
import { entryNode, stateOf, type RunView } from '../run-state';
import { usePoll } from '../use-poll';
import { useJobStream } from '../use-stream';
import { targetOf, useTargets } from './Runs';

/*
 * A run: its stream as it happens (use-stream.ts), the job polled while it runs (status, step,
 * waiting intervention), input, result and cost (the result's usage: a sum over the usage ledger),
 * cancel and resume, the workflow in the Temporal UI, and for a pathway run the graph of the version
 * it runs with each node coloured from the stream alone (run-state.ts).
 */
const TERMINAL = ['completed', 'failed'];

interface Usage {
  totalTokens?: number;
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
}

function usageOf(result: unknown): Usage | null {
  const u = (result as { usage?: unknown } | null | undefined)?.usage;
  return u && typeof u === 'object' ? (u as Usage) : null;
}

/** The values a finished pathway run reports per node (`result.nodes`, by id). */
function nodeValues(result: unknown): Record<string, unknown> | null {
  const n = (result as { nodes?: unknown } | null | undefined)?.nodes;
  return n && typeof n === 'object' ? (n as Record<string, unknown>) : null;
}

export default function Run({ params }: { params: Record<string, string> }) {
  const id = params.id;
  const { api, session, credential } = useAuth();
  const stream = useJobStream(api, id);
  const { view } = stream;
  const ended = view.terminal !== null || stream.phase === 'ended';
  const [jobLive, setJobLive] = useState(true);
  const job = usePoll(
    (signal) => api.get<ResponseOf<'get', '/v1/jobs/{jobId}'>>(`/v1/jobs/${id}`, signal),
    [api, id, ended],
    1500,
    jobLive,
  );
  const j = job.data;
  useEffect(() => {
    if (j && TERMINAL.includes(j.status)) setJobLive(false);
  }, [j]);
  const targets = useTargets();
  const now = useTick(1000);

  // The graph of the version the run runs (pinned at its start; the head for runs recorded before pins).
  const [graph, setGraph] = useState<Graph | null>(null);
  const [graphProblem, setGraphProblem] = useState<ApiProblem | null>(null);
  const pathwayId = j?.pathway_id ?? null;
  const version = j?.pathway_version ?? null;
  useEffect(() => {
    if (!pathwayId) return;
    const abort = new AbortController();
    const path = version ? `/v1/pathways/${pathwayId}/versions/${version}` : `/v1/pathways/${pathwayId}`;
    api
      .get<ResponseOf<'get', '/v1/pathways/{id}/versions/{version}'>>(path, abort.signal)
      .then((p) => setGraph(normalizeGraph(p.pathway_graph)))
      .catch((e: unknown) => !abort.signal.aborted && setGraphProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, pathwayId, version]);

  const [selected, setSelected] = useState<string | null>(null);
  const states = useCallback(
    (nodeId: string): NodeBadge => ({ state: stateOf(view, nodeId), run: view.nodes[nodeId] }),
    // the view changes in place; the stream's version says when
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [view, stream.version],
  );

  // Child runs (map items, sub-pathways, neuron nodes): GET /v1/jobs?parent_job_id=…
  const children = usePoll(
    (signal) => api.get<ResponseOf<'get', '/v1/jobs'>>(`/v1/jobs${qs({ parent_job_id: id, limit: 100 })}`, signal),
    [api, id, ended],
    3000,
    !!pathwayId && jobLive,
  );

  const [action, setAction] = useState<{ busy: string | null; problem: ApiProblem | null }>({
    busy: null,
    problem: null,
  });
  const act = async (name: 'cancel' | 'resume') => {
    setAction({ busy: name, problem: null });
    try {
      await api.post(`/v1/jobs/${id}/${name}`, {});
      setJobLive(true);
      job.reload();
      setAction({ busy: null, problem: null });
    } catch (e) {
      setAction({ busy: null, problem: toProblem(e) });
    }
  };

  // POST /v1/jobs/:id/replay: a new run that takes the values of the nodes before this one (docs/pathways.md).
  const replayFrom = async (fromNode: string) => {
    setAction({ busy: 'replay', problem: null });
    try {
      const res = await api.post<ApiSchema<'JobAccepted'>>(`/v1/jobs/${id}/replay`, { from_node: fromNode });
      setAction({ busy: null, problem: null });
      navigate(`/runs/${res.job_id}`);
    } catch (e) {
      setAction({ busy: null, problem: toProblem(e) });
    }
  };

  if (!j && job.problem) return <Problem problem={job.problem} />;
  if (!j) return <p className="muted">Loading…</p>;
  const status = j.status;
  const running = !TERMINAL.includes(status);
  const usage = usageOf(j.result);
  const waiting = j.waitingFor as
    { interventionId?: string; title?: string; prompt?: string; options?: string[]; kind?: string } | undefined;
  const t = targetOf(j, targets);
  const ui = session.temporal.ui_url;

  return (
    <>
      <div className="page-head">
        <h1>
          Run <code title={j.job_id}>{shortId(j.job_id)}</code> <Badge value={status} />
        </h1>
        <div className="actions">
          {running && (
            <button type="button" className="danger" disabled={action.busy !== null} onClick={() => void act('cancel')}>
              {action.busy === 'cancel' ? 'Cancelling…' : 'Cancel'}
            </button>
          )}
          {status === 'paused' && (
            <button
              type="button"
              className="primary"
              disabled={action.busy !== null}
              onClick={() => void act('resume')}
            >
              {action.busy === 'resume' ? 'Resuming…' : 'Resume'}
            </button>
          )}
          {ui && (
            <a
              className="button"
              href={`${ui}/namespaces/${encodeURIComponent(session.temporal.namespace)}/workflows/${encodeURIComponent(j.job_id)}`}
              target="_blank"
              rel="noopener noreferrer"
            >
              Temporal UI ↗
            </a>
          )}
          {j.trace_id && (
            <Link className="button" to={`/traces/${j.trace_id}`}>
              Trace
            </Link>
          )}
          {/* A completed run can become a dataset item (the API refuses any other: 409). */}
          {status === 'completed' && credential.brainId && <AddToDataset jobId={j.job_id} />}
        </div>
      </div>
      <Problem problem={action.problem} />
      <dl className="facts">
        <dt>Kind</dt>
        <dd>{j.kind}</dd>
        <dt>Target</dt>
        <dd title={t.title}>
          {j.pathway_id ? (
            <span>
              {t.label}
              {!j.pathway_version && ' (head)'}
            </span>
          ) : (
            t.label
          )}
        </dd>
        <dt>Step</dt>
        <dd className="step">{j.current_step ?? '—'}</dd>
        <dt>Progress</dt>
        <dd>
          <progress max={100} value={j.progress} /> {Math.round(j.progress)}%
        </dd>
        <dt>Started</dt>
        <dd title={j.processed_at ?? j.created_at}>{ago(j.processed_at ?? j.created_at, now)}</dd>
        <dt>Duration</dt>
        <dd>{duration(j.processed_at ?? j.created_at, j.finished_at, now)}</dd>
        <dt>Cost</dt>
        <dd>
          {usage
            ? `$${(usage.costUsd ?? 0).toFixed(6)} · ${usage.totalTokens ?? (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0)} tokens`
            : running
              ? 'when the run ends'
              : '—'}
        </dd>
        {j.replay_of && (
          <>
            <dt>Replay of</dt>
            <dd>
              <Link to={`/runs/${j.replay_of}`}>{shortId(j.replay_of)}</Link> from node <code>{j.from_node}</code>
            </dd>
          </>
        )}
        {j.parent_job_id && (
          <>
            <dt>Parent</dt>
            <dd>
              <Link to={`/runs/${j.parent_job_id}`}>{shortId(j.parent_job_id)}</Link>
            </dd>
          </>
        )}
      </dl>
      {waiting?.interventionId && (status === 'waiting' || status === 'paused') && (
        <Section title={`Waiting: ${waiting.title ?? 'an answer'}`}>
          {waiting.prompt && <p>{waiting.prompt}</p>}
          <Answer
            intervention={{
              id: waiting.interventionId,
              title: waiting.title ?? '',
              options: waiting.options ?? [],
              kind: waiting.kind ?? 'approval',
              status: 'pending',
            }}
            onAnswered={() => job.reload()}
          />
        </Section>
      )}
      {pathwayId && (
        <Section title="Graph" actions={<Legend />}>
          <Problem problem={graphProblem} />
          {graph ? (
            <div className="graph-layout">
              <PathwayGraph
                graph={graph}
                states={states}
                version={stream.version}
                selected={selected}
                onSelect={setSelected}
              />
              <NodePanel
                graph={graph}
                view={view}
                selected={selected}
                onSelect={setSelected}
                input={j.input}
                result={j.result}
                entries={stream.entries}
                onReplay={running ? null : replayFrom}
              />
            </div>
          ) : (
            !graphProblem && <p className="muted">Loading the graph…</p>
          )}
        </Section>
      )}
      <Section title="Stream" actions={<span className="muted">{stream.phase}</span>}>
        <Problem problem={stream.problem} />
        <StreamView view={view} phase={stream.phase} entries={stream.entries} />
      </Section>
      {children.data && children.data.jobs.length > 0 && (
        <Section title={`Child runs (${children.data.total})`}>
          <ul className="children">
            {children.data.jobs.map((c) => (
              <li key={c.job_id}>
                <Link to={`/runs/${c.job_id}`}>
                  <Badge value={c.status} /> {c.kind} {shortId(c.job_id)}
                </Link>{' '}
                <span className="muted">{c.current_step ?? ''}</span>
              </li>
            ))}
          </ul>
        </Section>
      )}
      <div className="two">
        <Section title="Input">
          {j.input !== undefined ? <Json value={j.input} label="Input" /> : <p className="muted">See the trace.</p>}
        </Section>
        <Section title="Result">
          {j.result !== undefined ? (
            <Json value={j.result} label="Result" />
          ) : (
            <p className="muted">{j.failedReason ?? (running ? 'Not yet.' : '—')}</p>
          )}
        </Section>
      </div>
    </>
  );
}

const STATES = ['pending', 'running', 'waiting', 'done', 'failed', 'skipped'] as const;

function Legend() {
  return (
    <ul className="legend" aria-label="Node states">
      {STATES.map((s) => (
        <li key={s} className={`state-${s}`}>
          {s}
        </li>
      ))}
    </ul>
  );
}

/**
 * The nodes as a list (keyboard and phone friendly) and the selected node: its state and entries
 * from the stream, its settings, and its input and output (from its entries while the run goes on, from the result at its end).
 */
function NodePanel({
  graph,
  view,
  selected,
  onSelect,
  input,
  result,
  entries,
  onReplay,
}: {
  graph: Graph;
  view: RunView;
  selected: string | null;
  onSelect(id: string | null): void;
  input: unknown;
  result: unknown;
  entries: { id: string; data: { type: string; [k: string]: unknown } }[];
  /** Replays the ended run from a node (null while the run goes on). */
  onReplay: ((nodeId: string) => Promise<void>) | null;
}) {
  const node = graph.nodes.find((n) => n.id === selected);
  const values = nodeValues(result);
  const mine = useMemo(
    () => (node ? entries.filter((e) => entryNode(e.data) === node.id) : []),
    // entries grows in place
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [node, entries, entries.length],
  );
  const run = node ? view.nodes[node.id] : undefined;
  const preds = node ? predecessors(graph, node.id) : [];
  // A node's value: the result's (whole, at the end), else what its node_finish entry carried (live).
  const valueOf = (id: string): { known: boolean; value?: unknown } =>
    values && id in values
      ? { known: true, value: values[id] }
      : view.nodes[id] && 'output' in view.nodes[id]
        ? { known: true, value: view.nodes[id].output }
        : { known: false };
  const known = preds.filter((p) => valueOf(p).known);
  const nodeInput =
    node && preds.length === 0
      ? input
      : known.length
        ? Object.fromEntries(known.map((p) => [p, valueOf(p).value]))
        : undefined;
  const output = node ? valueOf(node.id) : { known: false };
  return (
    <div className="node-panel">
      <ul className="node-list" aria-label="Nodes">
        {graph.nodes.map((n) => {
          const s = stateOf(view, n.id);
          return (
            <li key={n.id}>
              <button
                type="button"
                className={`node-chip state-${s}`}
                aria-pressed={selected === n.id}
                data-node-id={n.id}
                data-state={s}
                onClick={() => onSelect(selected === n.id ? null : n.id)}
              >
                {nodeLabel(n)} <span className="muted">{s}</span>
              </button>
            </li>
          );
        })}
      </ul>
      {node && (
        <div className="node-detail" aria-label={`Node ${node.id}`}>
          <h3>
            {nodeLabel(node)} <span className="muted">({node.type})</span>
          </h3>
          <p>
            <Badge value={stateOf(view, node.id)} />
            {run && run.visits > 1 && ` visited ${run.visits} times`}
            {run?.handle && ` · took “${run.handle}”`}
            {run?.items && ` · ${run.items.done}/${run.items.total} items`}
            {onReplay && run && (
              <>
                {' '}
                <button
                  type="button"
                  className="small"
                  title="A new run that keeps the values of the nodes before this one and runs from here"
                  onClick={() => void onReplay(node.id)}
                >
                  Replay from here
                </button>
              </>
            )}
          </p>
          {run?.error && <p className="error">{run.error}</p>}
          <h4>Input</h4>
          {nodeInput !== undefined ? (
            <Json value={nodeInput} label="Node input" />
          ) : (
            <p className="muted">Shown once the nodes before it have finished.</p>
          )}
          <h4>Output</h4>
          {output.known ? (
            <Json value={output.value} label="Node output" />
          ) : (
            <p className="muted">{view.terminal ? 'No value.' : 'Shown once the node has finished.'}</p>
          )}
          <h4>Settings</h4>
          <Json value={node.data} label="Node settings" />
          <h4>Entries</h4>
          {mine.length ? (
            <Json value={mine.map((e) => e.data)} label="Node entries" />
          ) : (
            <p className="muted">None yet.</p>
          )}
        </div>
      )}
    </div>
  );
}
