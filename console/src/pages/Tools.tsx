import { useState, type FormEvent } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ListTable, SearchForm, useAction, useListQuery } from '../components/ListTable';
import { ago, Badge, Problem, Section, useTick } from '../components/ui';
import { Link, navigate } from '../router';
import { usePoll } from '../use-poll';
import '../pathways.css';
import '../agents.css';

/*
 * Tools (docs/tools.md): the reflexes of the brain (GET /v1/reflexes, X-Brain-Id), each a bundle of
 * tools (a built-in handler, HTTP tools, an MCP server, or an integration's tool set); "New
 * reflex" (POST /v1/reflexes; a brain reflex needs only a member, a workspace one workspace_admin);
 * and, for workspace admins, the OAuth integrations a reflex's tools connect through
 * (GET/PUT/DELETE /v1/integrations: admins only, so a member is not shown the section).
 */
const LIMIT = 20;
type Reflex = ApiSchema<'Reflex'>;
type Integration = ApiSchema<'Integration'>;

/** How a reflex's tools are run, from its metadata and tool sets. */
export function reflexKind(r: Reflex): string {
  const m = r.metadata;
  const kinds: string[] = [];
  if (typeof m.handler === 'string') kinds.push(`built-in ${m.handler}`);
  if (Array.isArray(m.http_tools))
    kinds.push(`${m.http_tools.length} HTTP tool${m.http_tools.length === 1 ? '' : 's'}`);
  if (typeof m.server_url === 'string') kinds.push('MCP server');
  for (const t of r.tools) kinds.push(`${t.integration_id} tools`);
  return kinds.join(', ') || '—';
}

export default function Tools() {
  const { api, credential, isAdmin } = useAuth();
  const { search, offset } = useListQuery();
  const now = useTick(10_000);
  const [creating, setCreating] = useState(false);
  const { data, problem, loading } = usePoll(
    (signal) =>
      api.get<ApiSchema<'ReflexList'>>(
        `/v1/reflexes${qs({ search, limit: LIMIT, offset, sortBy: 'updated_at' })}`,
        signal,
      ),
    [api, search, offset, credential.brainId],
    10_000,
  );
  return (
    <>
      <div className="page-head">
        <h1>Tools</h1>
        <button type="button" className="primary" onClick={() => setCreating((c) => !c)} aria-expanded={creating}>
          New reflex
        </button>
      </div>
      <p className="muted small">
        A reflex bundles the tools an agent may call: a built-in tool, HTTP tools, the tools an MCP server lists, or an
        integration&apos;s tools called with a connected account. Attach it to an agent on the reflex&apos;s page.
      </p>
      {creating && <NewReflex />}
      <SearchForm />
      <Problem problem={problem} />
      <ListTable<Reflex>
        className="reflexes"
        label="Reflexes"
        rows={data?.reflexes}
        loading={loading}
        rowKey={(r) => r.id}
        rowProps={(r) => ({ 'data-reflex-id': r.id })}
        page={data ? { offset, limit: LIMIT, total: data.total } : undefined}
        empty={
          search
            ? 'No reflex matches this name.'
            : 'No reflexes yet. Create one with "New reflex": an MCP server address is enough to give an agent its tools.'
        }
        columns={[
          {
            title: 'Name',
            className: 'step',
            cell: (r) => (
              <>
                <Link to={`/tools/${r.id}`}>{r.name}</Link>
                {r.description && <div className="muted small">{r.description}</div>}
              </>
            ),
          },
          { title: 'Tools', cell: reflexKind },
          { title: 'Type', cell: (r) => r.type },
          { title: 'State', cell: (r) => <Badge value={r.is_active ? 'active' : 'inactive'} /> },
          { title: 'Scope', cell: (r) => r.scope },
          { title: 'Updated', cell: (r) => <span title={r.updated_at}>{ago(r.updated_at, now)}</span> },
        ]}
      />
      {isAdmin && <Integrations />}
    </>
  );
}

type Kind = 'mcp' | 'http' | 'builtin' | 'integration';

/** The new-reflex form: one way of running its tools, and optionally the integration whose account they use. */
function NewReflex() {
  const { api, session, credential } = useAuth();
  const { problem, busy, run } = useAction();
  const [f, setF] = useState({
    name: '',
    description: '',
    type: 'effector' as Reflex['type'],
    kind: 'mcp' as Kind,
    server_url: '',
    http_tools: '[\n  { "name": "lookup", "method": "GET", "url": "https://example.com/items/{id}" }\n]',
    handler: 'calculator',
    integration_id: '',
    set_tools: '',
    scope: 'brain' as Reflex['scope'],
  });
  const scopes: Reflex['scope'][] = [
    ...(credential.brainId ? (['brain'] as const) : []),
    ...(session.roles.includes('workspace_admin') || session.roles.includes('core_admin')
      ? (['workspace'] as const)
      : []),
    ...(session.roles.includes('core_admin') ? (['core'] as const) : []),
  ];
  const [jsonProblem, setJsonProblem] = useState('');
  const create = async (e: FormEvent) => {
    e.preventDefault();
    setJsonProblem('');
    const metadata: Record<string, unknown> = {};
    let tools: { integration_id: string; tools: string[] }[] = [];
    if (f.kind === 'mcp') metadata.server_url = f.server_url.trim();
    if (f.kind === 'builtin') metadata.handler = f.handler;
    if (f.kind === 'http') {
      try {
        metadata.http_tools = JSON.parse(f.http_tools) as unknown;
      } catch (err) {
        setJsonProblem(`HTTP tools: not JSON (${(err as Error).message})`);
        return;
      }
    }
    if (f.kind === 'integration')
      tools = [
        {
          integration_id: f.integration_id.trim(),
          tools: f.set_tools
            .split(/[\s,]+/)
            .map((s) => s.trim())
            .filter(Boolean),
        },
      ];
    else if (f.integration_id.trim()) metadata.integration_id = f.integration_id.trim();
    const r = await run(() =>
      api.post<Reflex>('/v1/reflexes', {
        name: f.name.trim(),
        description: f.description,
        type: f.type,
        scope: f.scope,
        tools,
        metadata,
      }),
    );
    if (r) navigate(`/tools/${r.id}`);
  };
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  return (
    <Section title="New reflex">
      <form className="agent-form" aria-label="New reflex" onSubmit={(e) => void create(e)}>
        <div className="agent-row">
          <label>
            Reflex name
            <input required maxLength={200} value={f.name} onChange={set('name')} />
          </label>
          <label>
            Scope
            <select value={f.scope} onChange={set('scope')}>
              {scopes.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <label>
            Type
            <select value={f.type} onChange={set('type')}>
              <option value="effector">effector (acts)</option>
              <option value="sensory">sensory (reads)</option>
            </select>
          </label>
        </div>
        <label>
          Description
          <input maxLength={5000} value={f.description} onChange={set('description')} />
        </label>
        <label>
          Tools from
          <select value={f.kind} onChange={set('kind')}>
            <option value="mcp">an MCP server</option>
            <option value="http">HTTP tools</option>
            <option value="builtin">a built-in tool</option>
            <option value="integration">an integration&apos;s tool server</option>
          </select>
        </label>
        {f.kind === 'mcp' && (
          <label>
            MCP server URL
            <input
              required
              type="url"
              placeholder="https://tools.example.com/mcp"
              value={f.server_url}
              onChange={set('server_url')}
            />
          </label>
        )}
        {f.kind === 'http' && (
          <label>
            HTTP tools (JSON: name, description, method, url with {'{placeholders}'}, parameters)
            <textarea rows={6} spellCheck={false} value={f.http_tools} onChange={set('http_tools')} />
          </label>
        )}
        {f.kind === 'builtin' && (
          <label>
            Built-in tool
            <select value={f.handler} onChange={set('handler')}>
              <option value="calculator">calculator</option>
              <option value="current_time">current_time</option>
            </select>
          </label>
        )}
        {f.kind !== 'builtin' && (
          <label>
            {f.kind === 'integration' ? 'Integration' : 'Connected account (integration id, optional)'}
            <input
              required={f.kind === 'integration'}
              pattern="[a-z0-9][a-z0-9_\-]*"
              value={f.integration_id}
              onChange={set('integration_id')}
            />
          </label>
        )}
        {f.kind === 'integration' && (
          <label>
            Tool names (empty: every tool the integration&apos;s server lists)
            <input value={f.set_tools} onChange={set('set_tools')} />
          </label>
        )}
        {jsonProblem && (
          <p className="error" role="alert">
            {jsonProblem}
          </p>
        )}
        <Problem problem={problem} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy || !f.name.trim() || !scopes.length}>
            Create reflex
          </button>
        </div>
      </form>
    </Section>
  );
}

/** OAuth integrations (workspace admins): what a reflex's connected account is made with. The secret is never shown. */
function Integrations() {
  const { api } = useAuth();
  const list = usePoll(
    (signal) => api.get<{ integrations: Integration[] }>('/v1/integrations', signal),
    [api],
    0,
    false,
  );
  const { problem, busy, run } = useAction();
  const empty = {
    integration_id: '',
    name: '',
    authorization_endpoint: '',
    token_endpoint: '',
    scopes: '',
    client_id: '',
    client_secret: '',
    per: 'user' as Integration['per'],
    mcp_server_url: '',
  };
  const [f, setF] = useState(empty);
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const r = await run(() =>
      api.raw<Integration>('PUT', `/v1/integrations/${encodeURIComponent(f.integration_id.trim())}`, {
        ...(f.name.trim() ? { name: f.name.trim() } : {}),
        authorization_endpoint: f.authorization_endpoint.trim(),
        token_endpoint: f.token_endpoint.trim(),
        scopes: f.scopes.split(/\s+/).filter(Boolean),
        client_id: f.client_id.trim(),
        ...(f.client_secret ? { client_secret: f.client_secret } : {}),
        per: f.per,
        ...(f.mcp_server_url.trim() ? { mcp_server_url: f.mcp_server_url.trim() } : {}),
      }),
    );
    if (r) {
      setF(empty);
      list.reload();
    }
  };
  return (
    <Section title="Integrations">
      <p className="muted small">
        An OAuth 2 provider a reflex&apos;s tools connect to: each person connects their own account (or an admin one
        account for the workspace) from the reflex&apos;s page. Register{' '}
        <code>{window.location.origin}/v1/reflexes/&lt;reflex id&gt;/callback</code> with the provider. The client
        secret is stored sealed and never shown again.
      </p>
      <ListTable<Integration>
        className="integrations"
        label="Integrations"
        rows={list.data?.integrations}
        loading={list.loading}
        rowKey={(i) => i.integration_id}
        rowProps={(i) => ({ 'data-integration-id': i.integration_id })}
        empty="No integrations yet."
        columns={[
          { title: 'Integration', cell: (i) => <code>{i.integration_id}</code> },
          { title: 'Name', cell: (i) => i.name },
          { title: 'Connection', cell: (i) => (i.per === 'user' ? 'each person' : 'one for the workspace') },
          { title: 'Scopes', cell: (i) => i.scopes.join(' ') || '—' },
          { title: 'Client secret', cell: (i) => (i.has_client_secret ? 'set' : 'none') },
          { title: 'Tool server', cell: (i) => i.mcp_server_url ?? '—' },
          {
            title: '',
            cell: (i) => (
              <button
                type="button"
                className="danger"
                disabled={busy}
                onClick={() =>
                  void run(() => api.raw('DELETE', `/v1/integrations/${encodeURIComponent(i.integration_id)}`)).then(
                    list.reload,
                  )
                }
              >
                Remove
              </button>
            ),
          },
        ]}
      />
      <form className="agent-form" aria-label="Add an integration" onSubmit={(e) => void save(e)}>
        <h3>Add or replace an integration</h3>
        <div className="agent-row">
          <label>
            Integration id
            <input required pattern="[a-z0-9][a-z0-9_\-]*" value={f.integration_id} onChange={set('integration_id')} />
          </label>
          <label>
            Display name
            <input value={f.name} onChange={set('name')} />
          </label>
          <label>
            Connected
            <select value={f.per} onChange={set('per')}>
              <option value="user">by each person</option>
              <option value="workspace">once for the workspace</option>
            </select>
          </label>
        </div>
        <label>
          Authorization endpoint
          <input required type="url" value={f.authorization_endpoint} onChange={set('authorization_endpoint')} />
        </label>
        <label>
          Token endpoint
          <input required type="url" value={f.token_endpoint} onChange={set('token_endpoint')} />
        </label>
        <div className="agent-row">
          <label>
            Client id
            <input required value={f.client_id} onChange={set('client_id')} />
          </label>
          <label>
            Client secret
            <input type="password" autoComplete="off" value={f.client_secret} onChange={set('client_secret')} />
          </label>
          <label>
            Scopes (space separated)
            <input value={f.scopes} onChange={set('scopes')} />
          </label>
        </div>
        <label>
          Tool server (MCP URL, optional)
          <input type="url" value={f.mcp_server_url} onChange={set('mcp_server_url')} />
        </label>
        <Problem problem={problem ?? list.problem} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy}>
            Save integration
          </button>
        </div>
      </form>
    </Section>
  );
}
