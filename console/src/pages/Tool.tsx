import { useState } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ListTable, mayChangeScope, useAction } from '../components/ListTable';
import { Badge, Json, Problem, Section, ago, useTick } from '../components/ui';
import { Link, navigate, useLocation } from '../router';
import { usePoll } from '../use-poll';
import { reflexKind } from './Tools';
import '../pathways.css';
import '../agents.css';

/*
 * One reflex (docs/tools.md): its tools as a run finds them (GET /v1/reflexes/:id/tools: the
 * built-in, the HTTP tools, the tools its MCP servers list, with what could not be listed), the
 * connected accounts its integrations need (GET …/connections/check) with Connect (POST …/connect
 * with a callbackUrl back to this page: the browser goes to the provider and comes back here with
 * `success=true`) and Disconnect (DELETE …/connection), the agents it is attached to (POST and
 * DELETE /v1/neurons/:id/reflexes), its name and description edited (PUT /v1/reflexes/:id), activate or
 * deactivate, delete. Changing the reflex needs the
 * role its scope asks; attaching it, the role of the agent's scope; a workspace-wide connection is
 * an admin's. Other controls are hidden, and the API refuses them (403) anyway.
 */
type Reflex = ApiSchema<'Reflex'>;
type Tool = ApiSchema<'ReflexDiscoveredTool'>;
type Status = ApiSchema<'ReflexConnectionStatus'>;
type Neuron = ApiSchema<'NeuronList'>['neurons'][number];

export default function ToolPage({ params }: { params: Record<string, string> }) {
  const id = params.id;
  const { api, session, isAdmin } = useAuth();
  const { query } = useLocation();
  const now = useTick(10_000);
  const { problem, busy, run } = useAction();
  const [editing, setEditing] = useState<{ name: string; description: string } | null>(null);
  const reflex = usePoll((signal) => api.get<Reflex>(`/v1/reflexes/${id}`, signal), [api, id], 0, false);
  const tools = usePoll(
    (signal) => api.get<ApiSchema<'ReflexToolList'>>(`/v1/reflexes/${id}/tools`, signal),
    [api, id],
    0,
    false,
  );
  const status = usePoll(
    (signal) => api.get<Status>(`/v1/reflexes/${id}/connections/check`, signal),
    [api, id],
    0,
    false,
  );
  const r = reflex.data;
  if (!r)
    return (
      <>
        <p>
          <Link to="/tools">← Tools</Link>
        </p>
        {reflex.loading ? <p className="muted">Loading…</p> : <Problem problem={reflex.problem} />}
      </>
    );
  const canChange = mayChangeScope(session.roles, r.scope);
  const returned = query.get('success') === 'true';

  const connect = async (integrationId: string) => {
    const back = `${window.location.origin}/console/tools/${id}?integration=${encodeURIComponent(integrationId)}`;
    const started = await run(() =>
      api.post<{ redirectUrl: string }>(`/v1/reflexes/${id}/connect`, {
        integration_id: integrationId,
        callbackUrl: back,
      }),
    );
    // Out to the provider's consent screen; it sends the browser back to the callback, which sends it here.
    if (started) window.location.assign(started.redirectUrl);
  };

  return (
    <>
      <p>
        <Link to="/tools">← Tools</Link>
      </p>
      <div className="page-head">
        <h1>{r.name}</h1>
        <Badge value={r.is_active ? 'active' : 'inactive'} />
        {canChange && (
          <div className="buttons">
            <button
              type="button"
              disabled={busy || editing !== null}
              onClick={() => setEditing({ name: r.name, description: r.description })}
            >
              Edit
            </button>
            <button
              type="button"
              disabled={busy}
              onClick={() =>
                void run(() => api.raw<Reflex>('PUT', `/v1/reflexes/${id}`, { is_active: !r.is_active })).then(
                  (x) => x && reflex.setData(x),
                )
              }
            >
              {r.is_active ? 'Deactivate' : 'Activate'}
            </button>
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() => {
                if (!window.confirm(`Delete reflex ${r.name}? It is removed from every agent.`)) return;
                void run(() => api.raw('DELETE', `/v1/reflexes/${id}`)).then((x) => x && navigate('/tools'));
              }}
            >
              Delete
            </button>
          </div>
        )}
      </div>
      {returned && (
        <p className="note" role="status" data-note="connected">
          Connected{query.get('integration') ? ` to ${query.get('integration')}` : ''}: account{' '}
          <code>{query.get('connectedAccountId')}</code>.
        </p>
      )}
      <Problem problem={problem} />
      {editing && (
        <form
          className="card settings-form"
          aria-label="Edit reflex"
          onSubmit={(e) => {
            e.preventDefault();
            void run(() =>
              api.raw<Reflex>('PUT', `/v1/reflexes/${id}`, {
                name: editing.name.trim(),
                description: editing.description,
              }),
            ).then((x) => {
              if (!x) return;
              reflex.setData(x);
              setEditing(null);
            });
          }}
        >
          <label>
            Name
            <input
              required
              maxLength={200}
              value={editing.name}
              onChange={(e) => setEditing({ ...editing, name: e.target.value })}
            />
          </label>
          <label>
            Description
            <textarea
              rows={2}
              maxLength={5000}
              value={editing.description}
              onChange={(e) => setEditing({ ...editing, description: e.target.value })}
            />
          </label>
          <div className="buttons">
            <button type="submit" className="primary" disabled={busy || !editing.name.trim()}>
              Save
            </button>
            <button type="button" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <Section title="Reflex">
        <dl className="facts">
          <dt>Tools from</dt>
          <dd>{reflexKind(r)}</dd>
          <dt>Type</dt>
          <dd>{r.type}</dd>
          <dt>Scope</dt>
          <dd>{r.scope}</dd>
          <dt>Updated</dt>
          <dd title={r.updated_at}>{ago(r.updated_at, now)}</dd>
          {r.description && (
            <>
              <dt>Description</dt>
              <dd>{r.description}</dd>
            </>
          )}
          {typeof r.metadata.server_url === 'string' && (
            <>
              <dt>MCP server</dt>
              <dd>
                <code>{r.metadata.server_url}</code>
              </dd>
            </>
          )}
        </dl>
      </Section>
      <Section
        title="Its tools"
        actions={
          <button type="button" onClick={tools.reload} disabled={tools.loading}>
            List again
          </button>
        }
      >
        <p className="muted small">
          As a run finds them, for you: an MCP server&apos;s list is read with your connected account when the reflex
          names one, and kept five minutes.
        </p>
        <ListTable<Tool>
          className="reflex-tools"
          label="Tools"
          rows={tools.data?.tools}
          loading={tools.loading}
          rowKey={(t) => t.name}
          rowProps={(t) => ({ 'data-tool': t.name })}
          empty="This reflex offers no tool to you now."
          columns={[
            { title: 'Tool', cell: (t) => <code>{t.name}</code> },
            { title: 'Run by', cell: (t) => (t.kind === 'builtin' ? 'the platform' : t.kind.toUpperCase()) },
            { title: 'Account', cell: (t) => t.integration_id ?? '—' },
            {
              title: 'Description',
              cell: (t) => (
                <details>
                  <summary>{t.description || 'arguments'}</summary>
                  <Json value={t.parameters} label={`${t.name} arguments`} />
                </details>
              ),
            },
          ]}
        />
        {tools.data?.errors.map((e) => (
          <p key={e} className="error" data-tool-error>
            {e}
          </p>
        ))}
        <Problem problem={tools.problem} />
      </Section>
      <Connections
        status={status.data}
        isAdmin={isAdmin}
        busy={busy}
        onConnect={(i) => void connect(i)}
        onDisconnect={() =>
          void run(() => api.raw('DELETE', `/v1/reflexes/${id}/connection`)).then(() => {
            status.reload();
            tools.reload();
          })
        }
      />
      <Problem problem={status.problem} />
      <Attached reflexId={id} />
    </>
  );
}

function Connections({
  status,
  isAdmin,
  busy,
  onConnect,
  onDisconnect,
}: {
  status: Status | null;
  isAdmin: boolean;
  busy: boolean;
  onConnect(integrationId: string): void;
  onDisconnect(): void;
}) {
  if (!status || !status.integrations.length) return null;
  // A workspace-wide account is connected and removed by an admin only (the API's rule).
  const mayConnect = (per: string | null) => per !== 'workspace' || isAdmin;
  return (
    <Section title="Connected accounts">
      <ListTable<Status['integrations'][number]>
        className="connections"
        label="Connected accounts"
        rows={status.integrations}
        rowKey={(i) => i.integration_id}
        rowProps={(i) => ({ 'data-integration': i.integration_id, 'data-connected': String(i.connected) })}
        empty="—"
        columns={[
          { title: 'Integration', cell: (i) => <code>{i.integration_id}</code> },
          {
            title: 'State',
            cell: (i) => (
              <Badge value={i.connected ? 'connected' : i.configured ? 'not connected' : 'not configured'} />
            ),
          },
          { title: 'Account', cell: (i) => i.connectedAccountId ?? '—' },
          { title: 'For', cell: (i) => (i.per === 'workspace' ? 'the workspace' : i.per ? 'you' : '—') },
          { title: 'Expires', cell: (i) => (i.expires_at ? new Date(i.expires_at).toLocaleString() : '—') },
          {
            title: '',
            cell: (i) =>
              i.action === 'configure' ? (
                <span className="muted small">an admin adds this integration under Tools</span>
              ) : !mayConnect(i.per) ? (
                <span className="muted small">connected by an admin</span>
              ) : i.connected ? (
                <button type="button" disabled={busy} onClick={onDisconnect}>
                  Disconnect
                </button>
              ) : (
                <button type="button" className="primary" disabled={busy} onClick={() => onConnect(i.integration_id)}>
                  Connect {i.integration_id}
                </button>
              ),
          },
        ]}
      />
    </Section>
  );
}

/**
 * The brain's agents this reflex is attached to (each agent's GET /v1/neurons/:id/reflexes; the API
 * has no reverse list), with Attach and Remove for the agents the caller may change.
 */
function Attached({ reflexId }: { reflexId: string }) {
  const { api, session } = useAuth();
  const { problem, busy, run } = useAction();
  const [pick, setPick] = useState('');
  const agents = usePoll(
    async (signal) => {
      const list = await api.get<ApiSchema<'NeuronList'>>(`/v1/neurons${qs({ limit: 50, sortBy: 'name' })}`, signal);
      const withIt = await Promise.all(
        list.neurons.map(async (n) => {
          const rs = await api.get<{ id: string }[]>(`/v1/neurons/${n.id}/reflexes`, signal);
          return { neuron: n, attached: rs.some((x) => x.id === reflexId) };
        }),
      );
      return withIt;
    },
    [api, reflexId],
    0,
    false,
  );
  const attached = (agents.data ?? []).filter((a) => a.attached).map((a) => a.neuron);
  const attachable = (agents.data ?? []).filter((a) => !a.attached && mayChangeScope(session.roles, a.neuron.scope));
  return (
    <Section title="Agents with this reflex">
      <ListTable<Neuron>
        className="attached"
        label="Agents with this reflex"
        rows={agents.data ? attached : null}
        loading={agents.loading}
        rowKey={(n) => n.id}
        rowProps={(n) => ({ 'data-neuron-id': n.id })}
        empty="No agent has this reflex yet."
        columns={[
          { title: 'Agent', cell: (n) => <Link to={`/agents/${n.id}`}>{n.name}</Link> },
          { title: 'Scope', cell: (n) => n.scope },
          {
            title: '',
            cell: (n) =>
              mayChangeScope(session.roles, n.scope) && (
                <button
                  type="button"
                  disabled={busy}
                  onClick={() =>
                    void run(() => api.raw('DELETE', `/v1/neurons/${n.id}/reflexes/${reflexId}`)).then(agents.reload)
                  }
                >
                  Remove
                </button>
              ),
          },
        ]}
      />
      {attachable.length > 0 && (
        <form
          className="filters"
          aria-label="Attach to an agent"
          onSubmit={(e) => {
            e.preventDefault();
            void run(() => api.post(`/v1/neurons/${pick}/reflexes`, { reflex_id: reflexId })).then(() => {
              setPick('');
              agents.reload();
            });
          }}
        >
          <label>
            Attach to agent
            <select required value={pick} onChange={(e) => setPick(e.target.value)}>
              <option value="">choose…</option>
              {attachable.map((a) => (
                <option key={a.neuron.id} value={a.neuron.id}>
                  {a.neuron.name}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" disabled={busy || !pick}>
            Attach
          </button>
        </form>
      )}
      <Problem problem={problem ?? agents.problem} />
    </Section>
  );
}
