import { useEffect, useState } from 'react';
import { toProblem, type ApiProblem, type ApiSchema, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { Playground } from '../components/Playground';
import { Badge, Json, Problem, Section, ago, useTick } from '../components/ui';
import { diffNeurons, type FieldChange } from '../neuron-diff';
import { Link, navigate, setQuery, useLocation } from '../router';
import { usePoll } from '../use-poll';
import '../pathways.css';
import '../agents.css';

/*
 * One agent (a neuron): its settings, the playground, its versions (GET /v1/neurons/:id/versions)
 * with a field-by-field diff of any two (`?from=N&to=M`, each read with GET …/versions/:v), promote
 * (POST …/versions/:v/promote: a new head with that version's body), activate or deactivate
 * (PUT is_active), and delete (DELETE /v1/neurons/:id, with its versions). Changing it needs the
 * role its scope asks (brain: any member; workspace: workspace_admin; core: core_admin): the other
 * controls are hidden, and the API refuses them (403) anyway.
 */
type Neuron = ApiSchema<'Neuron'>;
type Version = ApiSchema<'NeuronVersion'>;

export default function Agent({ params }: { params: Record<string, string> }) {
  const id = params.id;
  const { api, session } = useAuth();
  const { query } = useLocation();
  const now = useTick(10_000);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState('');
  const neuron = usePoll((signal) => api.get<Neuron>(`/v1/neurons/${id}`, signal), [api, id], 0, false);
  const versions = usePoll(
    (signal) => api.get<ApiSchema<'NeuronVersionList'>>(`/v1/neurons/${id}/versions`, signal),
    [api, id],
    0,
    false,
  );
  const n = neuron.data;
  // The agent's own receptor (every neuron gets one): its share link and schedules live there.
  const receptor = usePoll(
    (signal) =>
      api
        .get<ResponseOf<'get', '/v1/receptors'>>(`/v1/receptors?target_type=neuron&limit=100&sortBy=updated_at`, signal)
        .then((r) => r.receptors.find((x) => x.executable_target.id === id && x.origin !== 'subscription') ?? null),
    [api, id],
    0,
    false,
  );
  // Its reflexes (the tools attached on a reflex's page under Tools).
  const reflexes = usePoll(
    (signal) => api.get<ApiSchema<'NeuronReflexSummary'>[]>(`/v1/neurons/${id}/reflexes`, signal),
    [api, id],
    0,
    false,
  );
  const roles = session.roles;
  const canEdit =
    !!n &&
    (n.scope === 'brain' ||
      (n.scope === 'workspace' && (roles.includes('workspace_admin') || roles.includes('core_admin'))) ||
      (n.scope === 'core' && roles.includes('core_admin')));

  const act = async (what: string, f: () => Promise<unknown>, done: string) => {
    setBusy(true);
    setProblem(null);
    try {
      await f();
      setStatus(done);
      neuron.reload();
      versions.reload();
    } catch (e) {
      setProblem(toProblem(e));
    } finally {
      setBusy(false);
    }
    return what;
  };

  if (!n) return neuron.problem ? <Problem problem={neuron.problem} /> : <p className="muted">Loading…</p>;
  const c = n.neuron_config;
  const latest = versions.data?.latest_version ?? n.latest_version;
  const from = Number(query.get('from')) || (latest > 1 ? latest - 1 : 0);
  const to = Number(query.get('to')) || latest;
  return (
    <>
      <div className="page-head">
        <h1>{n.name}</h1>
        <Badge value={n.is_active ? 'active' : 'inactive'} />
        <span className="muted">
          v{n.version} · {n.scope} · updated {ago(n.updated_at, now)}
        </span>
        {canEdit && (
          <div className="buttons">
            <Link to={`/agents/${n.id}/edit`} className="button">
              Edit
            </Link>
            <button
              type="button"
              disabled={busy}
              onClick={() =>
                void act(
                  'active',
                  () => api.raw('PUT', `/v1/neurons/${n.id}`, { is_active: !n.is_active }),
                  n.is_active ? 'Deactivated' : 'Activated',
                )
              }
            >
              {n.is_active ? 'Deactivate' : 'Activate'}
            </button>
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() => {
                if (!window.confirm(`Delete ${n.name} and all its versions? This cannot be undone.`)) return;
                setBusy(true);
                api
                  .raw('DELETE', `/v1/neurons/${n.id}`)
                  .then(() => navigate('/agents'))
                  .catch((e: unknown) => {
                    setProblem(toProblem(e));
                    setBusy(false);
                  });
              }}
            >
              Delete
            </button>
          </div>
        )}
      </div>
      {status && (
        <p role="status" className="muted">
          {status}
        </p>
      )}
      <Problem problem={problem} />
      {n.description && <p>{n.description}</p>}
      {receptor.data && (
        <p className="muted">
          Triggered by its receptor <Link to={`/triggers/${receptor.data.id}`}>{receptor.data.slug}</Link>: fire it,
          share it with a link, or <Link to="/triggers?new=schedule">put it on a schedule</Link>.
        </p>
      )}
      <div className="agent-layout">
        <Playground
          neuronId={n.id}
          active={n.is_active}
          versions={versions.data?.versions.map((v) => v.version) ?? []}
          latest={latest}
        />
        <Section title="Settings">
          <dl className="facts">
            <dt>Model</dt>
            <dd data-field="model">{c.model ?? 'the platform default'}</dd>
            <dt>Temperature</dt>
            <dd data-field="temperature">{c.temperature ?? '—'}</dd>
            <dt>Max tokens</dt>
            <dd data-field="max_tokens">{c.max_tokens ?? '—'}</dd>
            <dt>Knowledge</dt>
            <dd>{c.resource_ids?.length ?? 0} resources</dd>
            <dt>Sub-agents</dt>
            <dd>
              {c.sub_neuron_ids?.length
                ? c.sub_neuron_ids.map((s) => (
                    <Link key={s} to={`/agents/${s}`} className="chip-link">
                      {s.slice(0, 8)}
                    </Link>
                  ))
                : '—'}
            </dd>
            <dt>Tools</dt>
            <dd>{c.tools?.join(', ') || '—'}</dd>
            <dt>Reflexes</dt>
            <dd data-field="reflexes">
              {reflexes.data?.length ? (
                reflexes.data.map((x) => (
                  <Link key={x.id} to={`/tools/${x.id}`} className="chip-link">
                    {x.name}
                  </Link>
                ))
              ) : (
                <>
                  none: <Link to="/tools">attach one from Tools</Link>
                </>
              )}
            </dd>
          </dl>
          <h3>Instructions</h3>
          <pre className="json charter" data-field="system_prompt">
            {c.system_prompt || '(none)'}
          </pre>
        </Section>
      </div>
      <Section title="Versions">
        <div className="table-wrap">
          <table className="agent-versions">
            <thead>
              <tr>
                <th>Version</th>
                <th>Name</th>
                <th>State</th>
                <th>Saved</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {versions.data?.versions.map((v) => (
                <tr key={v.version} data-version={v.version}>
                  <td>
                    v{v.version}
                    {v.version === latest && ' (head)'}
                  </td>
                  <td>{v.name}</td>
                  <td>
                    <Badge value={v.is_active ? 'active' : 'inactive'} />
                  </td>
                  <td title={v.created_at}>{ago(v.created_at, now)}</td>
                  <td className="buttons">
                    {v.version > 1 && (
                      <button
                        type="button"
                        onClick={() => setQuery({ from: String(v.version - 1), to: String(v.version) })}
                      >
                        Diff with v{v.version - 1}
                      </button>
                    )}
                    {canEdit && v.version !== latest && (
                      <button
                        type="button"
                        disabled={busy}
                        onClick={() =>
                          void act(
                            'promote',
                            () => api.post(`/v1/neurons/${n.id}/versions/${v.version}/promote`),
                            `Promoted v${v.version}: it is the head as v${latest + 1}`,
                          )
                        }
                      >
                        Promote
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {latest > 1 && from > 0 && to > 0 && from !== to && (
          <VersionDiff neuronId={n.id} from={from} to={to} latest={latest} />
        )}
      </Section>
    </>
  );
}

function VersionDiff({ neuronId, from, to, latest }: { neuronId: string; from: number; to: number; latest: number }) {
  const { api } = useAuth();
  const [changes, setChanges] = useState<FieldChange[] | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  useEffect(() => {
    const a = new AbortController();
    setChanges(null);
    Promise.all([
      api.get<Version>(`/v1/neurons/${neuronId}/versions/${from}`, a.signal),
      api.get<Version>(`/v1/neurons/${neuronId}/versions/${to}`, a.signal),
    ])
      .then(([x, y]) => setChanges(diffNeurons(x.snapshot, y.snapshot)))
      .catch((e: unknown) => !a.signal.aborted && setProblem(toProblem(e)));
    return () => a.abort();
  }, [api, neuronId, from, to]);
  const pick = (k: 'from' | 'to', v: number) => setQuery({ [k]: String(v) });
  const options = Array.from({ length: latest }, (_, i) => i + 1);
  return (
    <div className="agent-diff" aria-label="Version diff">
      <div className="filters">
        <label>
          From
          <select value={from} onChange={(e) => pick('from', Number(e.target.value))}>
            {options.map((v) => (
              <option key={v} value={v}>
                v{v}
              </option>
            ))}
          </select>
        </label>
        <label>
          To
          <select value={to} onChange={(e) => pick('to', Number(e.target.value))}>
            {options.map((v) => (
              <option key={v} value={v}>
                v{v}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Problem problem={problem} />
      {changes && changes.length === 0 && (
        <p className="muted">
          v{from} and v{to} have the same settings.
        </p>
      )}
      {changes && changes.length > 0 && (
        <table className="diff-table">
          <thead>
            <tr>
              <th>Field</th>
              <th>v{from}</th>
              <th>v{to}</th>
            </tr>
          </thead>
          <tbody>
            {changes.map((ch) => (
              <tr key={ch.field} data-field={ch.field}>
                <th scope="row">{ch.field}</th>
                <td className="diff-from">
                  <Json value={ch.from === undefined ? '(unset)' : ch.from} />
                </td>
                <td className="diff-to">
                  <Json value={ch.to === undefined ? '(unset)' : ch.to} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
