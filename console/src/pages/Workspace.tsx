import { useState, type FormEvent } from 'react';
import { qs, type ApiSchema, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { ListTable, useAction, useListQuery } from '../components/ListTable';
import { StakeholderEdit } from '../components/StakeholderEdit';
import { StakeholderGraph } from '../components/StakeholderGraph';
import { Badge, Problem, Section, ago, shortId, useTick } from '../components/ui';
import { Link } from '../router';
import { usePoll } from '../use-poll';
import '../pathways.css';
import '../agents.css';

/*
 * The workspace (`?tab=`): who you are and the roles the API gives you (it keeps no member
 * directory: a person is a JWT's `sub`, a credential carries its roles; an admin with a JWT sees the
 * people the workspace's API keys act for), workspace secrets (admins; set and removed, a value is
 * never shown: no route returns it), the brain's memories (list, add a text memory), meetings
 * (list, new; a meeting's page shows its transcript) and the brain's stakeholder map drawn as a graph.
 */
const TABS = [
  ['members', 'Members and roles'],
  ['secrets', 'Secrets'],
  ['memories', 'Memories'],
  ['meetings', 'Meetings'],
  ['stakeholders', 'Stakeholder map'],
] as const;
const LIMIT = 20;

export default function Workspace() {
  const { query } = useListQuery();
  const { isAdmin } = useAuth();
  const tabs = TABS.filter(([t]) => t !== 'secrets' || isAdmin);
  const tab = tabs.find(([t]) => t === query.get('tab'))?.[0] ?? 'members';
  return (
    <>
      <div className="page-head">
        <h1>Workspace</h1>
      </div>
      <nav className="tabs" aria-label="Workspace">
        {tabs.map(([t, title]) => (
          <Link key={t} to={`/workspace?tab=${t}`} aria-current={t === tab ? 'page' : undefined}>
            {title}
          </Link>
        ))}
      </nav>
      {tab === 'members' && <Members />}
      {tab === 'secrets' && <Secrets />}
      {tab === 'memories' && <Memories />}
      {tab === 'meetings' && <Meetings />}
      {tab === 'stakeholders' && <Stakeholders />}
    </>
  );
}

const ROLE_TEXT: Record<string, string> = {
  member:
    'reads and writes traces, brain agents and reflexes, pathways (by pathway role), runs and approvals; its own API keys and usage',
  workspace_admin:
    'everything a member may, and workspace agents and reflexes, brains, every API key, budgets, webhooks, secrets, integrations, owner of every pathway',
  core_admin: 'everything a workspace admin may, and core agents and reflexes',
};

function Members() {
  const { api, session, isAdmin } = useAuth();
  const jwt = session.credential === 'jwt';
  const keys = usePoll(
    (signal) =>
      isAdmin && jwt
        ? api.get<{ api_keys: ApiSchema<'ApiKey'>[] }>(`/v1/api-keys${qs({ limit: 100 })}`, signal)
        : Promise.resolve(null),
    [api, isAdmin, jwt],
    0,
    false,
  );
  // The people the workspace's keys act for, with the roles their keys carry (the API's only list of people).
  const people = new Map<string, { roles: Set<string>; keys: number; last: string | null }>();
  for (const k of keys.data?.api_keys ?? []) {
    const who = k.created_by ?? '(the platform)';
    const p = people.get(who) ?? { roles: new Set<string>(), keys: 0, last: null };
    for (const r of k.roles.length ? k.roles : ['member']) p.roles.add(r);
    p.keys += 1;
    if (k.last_used_at && (!p.last || k.last_used_at > p.last)) p.last = k.last_used_at;
    people.set(who, p);
  }
  const roles = session.roles.length ? session.roles : ['member'];
  return (
    <>
      <Section title="You">
        <dl className="facts">
          <dt>User</dt>
          <dd data-field="user">{session.user_id ?? '— (a key that acts for no user)'}</dd>
          <dt>Signed in with</dt>
          <dd>{session.credential === 'jwt' ? 'a JWT' : 'an API key'}</dd>
          <dt>Roles</dt>
          <dd data-field="roles">
            {roles.map((r) => (
              <Badge key={r} value={r} />
            ))}
          </dd>
          <dt>Workspace</dt>
          <dd>
            {session.workspace.name} <code>{session.workspace.slug}</code>
          </dd>
        </dl>
        <h3>What each role may do</h3>
        <ul className="role-list">
          {Object.entries(ROLE_TEXT).map(([r, t]) => (
            <li key={r}>
              <strong>{r}</strong>: {t}.
            </li>
          ))}
        </ul>
        <p className="muted small">
          The API keeps no member list: a person is the user (<code>sub</code>) of a JWT your identity provider signs,
          and a credential&apos;s roles are its <code>roles</code> claim, or the role an admin gave an API key. A
          pathway adds its own roles (viewer, editor, owner) on its page.
        </p>
      </Section>
      {isAdmin && (
        <Section title="People with API keys">
          {!jwt ? (
            <p className="muted">
              The API lists the workspace&apos;s keys to a JWT only: sign in with one to see them.
            </p>
          ) : (
            <ListTable<[string, { roles: Set<string>; keys: number; last: string | null }]>
              className="people"
              label="People with API keys"
              rows={keys.data ? [...people.entries()] : null}
              loading={keys.loading}
              rowKey={([who]) => who}
              rowProps={([who]) => ({ 'data-user': who })}
              empty="No API keys yet."
              columns={[
                { title: 'User', cell: ([who]) => <code>{who}</code> },
                { title: 'Roles', cell: ([, p]) => [...p.roles].sort().join(', ') },
                { title: 'Keys', cell: ([, p]) => p.keys },
                { title: 'Last used', cell: ([, p]) => ago(p.last) },
              ]}
            />
          )}
          <Problem problem={keys.problem} />
        </Section>
      )}
    </>
  );
}

type Secret = ApiSchema<'Secret'>;

function Secrets() {
  const { api } = useAuth();
  const now = useTick(10_000);
  const list = usePoll((signal) => api.get<{ secrets: Secret[] }>('/v1/secrets', signal), [api], 0, false);
  const { problem, busy, run } = useAction();
  const [f, setF] = useState({ name: '', value: '', allowed_hosts: '', usable_by: 'admins' as Secret['usable_by'] });
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const hosts = f.allowed_hosts.split(/[\s,]+/).filter(Boolean);
    const r = await run(() =>
      api.raw<Secret>('PUT', `/v1/secrets/${encodeURIComponent(f.name.trim())}`, {
        value: f.value,
        usable_by: f.usable_by,
        ...(hosts.length ? { allowed_hosts: hosts } : {}),
      }),
    );
    if (r) {
      // The value leaves the page with the form: it is never shown again.
      setF({ name: '', value: '', allowed_hosts: '', usable_by: 'admins' });
      list.reload();
    }
  };
  return (
    <Section title="Secrets">
      <p className="muted small">
        Values a pathway&apos;s HTTP node sends as <code>{'{{ secrets.NAME }}'}</code>. A value is stored sealed and no
        route returns it: set it again to change it.
      </p>
      <ListTable<Secret>
        className="secrets"
        label="Secrets"
        rows={list.data?.secrets}
        loading={list.loading}
        rowKey={(s) => s.name}
        rowProps={(s) => ({ 'data-secret-name': s.name })}
        empty="No secrets yet."
        columns={[
          { title: 'Name', cell: (s) => <code>{s.name}</code> },
          { title: 'Value', cell: () => <span className="muted">set (never shown)</span> },
          { title: 'Hosts', cell: (s) => s.allowed_hosts?.join(', ') ?? 'any' },
          { title: 'Usable by graphs of', cell: (s) => (s.usable_by === 'admins' ? 'admins' : 'admins and editors') },
          { title: 'Updated', cell: (s) => <span title={s.updated_at}>{ago(s.updated_at, now)}</span> },
          {
            title: '',
            cell: (s) => (
              <button
                type="button"
                className="danger"
                disabled={busy}
                onClick={() =>
                  void run(() => api.raw('DELETE', `/v1/secrets/${encodeURIComponent(s.name)}`)).then(list.reload)
                }
              >
                Remove
              </button>
            ),
          },
        ]}
      />
      <form className="agent-form" aria-label="Set a secret" onSubmit={(e) => void save(e)}>
        <div className="agent-row">
          <label>
            Secret name
            <input
              required
              pattern="[A-Za-z_][A-Za-z0-9_]*"
              value={f.name}
              onChange={(e) => setF({ ...f, name: e.target.value })}
            />
          </label>
          <label>
            Value
            <input
              required
              type="password"
              autoComplete="off"
              value={f.value}
              onChange={(e) => setF({ ...f, value: e.target.value })}
            />
          </label>
        </div>
        <div className="agent-row">
          <label>
            Only to hosts (optional)
            <input
              placeholder="api.example.com *.example.org"
              value={f.allowed_hosts}
              onChange={(e) => setF({ ...f, allowed_hosts: e.target.value })}
            />
          </label>
          <label>
            Usable by graphs saved by
            <select
              value={f.usable_by}
              onChange={(e) => setF({ ...f, usable_by: e.target.value as Secret['usable_by'] })}
            >
              <option value="admins">admins</option>
              <option value="editors">admins and pathway editors</option>
            </select>
          </label>
        </div>
        <Problem problem={problem ?? list.problem} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy}>
            Set secret
          </button>
        </div>
      </form>
    </Section>
  );
}

type Memory = ResponseOf<'get', '/v1/memories'>['memories'][number];

function Memories() {
  const { api, credential } = useAuth();
  const { offset } = useListQuery();
  const now = useTick(10_000);
  const list = usePoll(
    (signal) =>
      api.get<ResponseOf<'get', '/v1/memories'>>(
        `/v1/memories${qs({ limit: LIMIT, offset, sortBy: 'updated_at' })}`,
        signal,
      ),
    [api, offset, credential.brainId],
    5_000,
  );
  const { problem, busy, run } = useAction();
  const [f, setF] = useState({ name: '', content: '', tags: '' });
  const add = async (e: FormEvent) => {
    e.preventDefault();
    const tags = f.tags.split(/[\s,]+/).filter(Boolean);
    const r = await run(() =>
      api.post('/v1/memories', {
        name: f.name.trim(),
        source_type: 'text',
        content: f.content,
        ...(tags.length ? { tags } : {}),
      }),
    );
    if (r) {
      setF({ name: '', content: '', tags: '' });
      list.reload();
    }
  };
  return (
    <Section title="Memories">
      <p className="muted small">
        What the brain&apos;s agents remember: text kept, embedded and searched with the knowledge. Bulk ingestion and
        files are in the API (<code>POST /v1/memories/ingest</code>).
      </p>
      <ListTable<Memory>
        className="memories"
        label="Memories"
        rows={list.data?.memories}
        loading={list.loading}
        rowKey={(m) => m.id}
        rowProps={(m) => ({ 'data-memory-id': m.id })}
        page={list.data ? { offset, limit: LIMIT, total: list.data.total } : undefined}
        empty="No memories in this brain yet: add one below."
        columns={[
          {
            title: 'Name',
            cell: (m) => (
              <>
                {m.name}
                {m.description && <div className="muted small">{m.description}</div>}
              </>
            ),
          },
          { title: 'Source', cell: (m) => m.source_type },
          { title: 'Tags', cell: (m) => m.tags.join(', ') || '—' },
          { title: 'Size', cell: (m) => `${m.size} B` },
          { title: 'Owner', cell: (m) => (m.owner_type ? `${m.owner_type} ${shortId(m.owner_id)}` : '—') },
          { title: 'Updated', cell: (m) => <span title={m.updated_at}>{ago(m.updated_at, now)}</span> },
        ]}
      />
      <form className="agent-form" aria-label="Add a memory" onSubmit={(e) => void add(e)}>
        <div className="agent-row">
          <label>
            Memory name
            <input required maxLength={200} value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} />
          </label>
          <label>
            Tags
            <input value={f.tags} onChange={(e) => setF({ ...f, tags: e.target.value })} />
          </label>
        </div>
        <label>
          Text
          <textarea required rows={4} value={f.content} onChange={(e) => setF({ ...f, content: e.target.value })} />
        </label>
        <Problem problem={problem ?? list.problem} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy || !credential.brainId}>
            Add memory
          </button>
        </div>
      </form>
    </Section>
  );
}

type Meeting = ApiSchema<'Meeting'>;

function Meetings() {
  const { api, credential } = useAuth();
  const { offset } = useListQuery();
  const now = useTick(10_000);
  const list = usePoll(
    (signal) => api.get<ResponseOf<'get', '/v1/meetings'>>(`/v1/meetings${qs({ limit: LIMIT, offset })}`, signal),
    [api, offset, credential.brainId],
    10_000,
  );
  const { problem, busy, run } = useAction();
  const [title, setTitle] = useState('');
  return (
    <Section title="Meetings">
      <ListTable<Meeting>
        className="meetings"
        label="Meetings"
        rows={list.data?.meetings}
        loading={list.loading}
        rowKey={(m) => m.id}
        rowProps={(m) => ({ 'data-meeting-id': m.id })}
        page={list.data ? { offset, limit: LIMIT, total: list.data.total } : undefined}
        empty="No meetings in this brain yet."
        columns={[
          { title: 'Title', cell: (m) => <Link to={`/workspace/meetings/${m.id}`}>{m.title}</Link> },
          { title: 'Transcript', cell: (m) => <Badge value={m.transcription.status} /> },
          {
            title: 'Segments',
            cell: (m) => (Array.isArray(m.body.transcript_segments) ? m.body.transcript_segments.length : 0),
          },
          { title: 'Version', cell: (m) => `v${m.version}` },
          { title: 'Updated', cell: (m) => <span title={m.updated_at}>{ago(m.updated_at, now)}</span> },
        ]}
      />
      <form
        className="filters"
        aria-label="New meeting"
        onSubmit={(e) => {
          e.preventDefault();
          void run(() => api.post<Meeting>('/v1/meetings', { title: title.trim() })).then((m) => {
            if (m) {
              setTitle('');
              list.reload();
            }
          });
        }}
      >
        <label>
          Meeting title
          <input required maxLength={300} value={title} onChange={(e) => setTitle(e.target.value)} />
        </label>
        <button type="submit" disabled={busy || !title.trim() || !credential.brainId}>
          New meeting
        </button>
      </form>
      <Problem problem={problem ?? list.problem} />
    </Section>
  );
}

function Stakeholders() {
  const { api, credential } = useAuth();
  const map = usePoll(
    (signal) =>
      credential.brainId
        ? api.get<ApiSchema<'StakeholderMapLive'>>('/v1/stakeholder-map?stakeholder_limit=200', signal)
        : Promise.resolve(null),
    [api, credential.brainId],
    10_000,
  );
  const m = map.data;
  return (
    <Section title="Stakeholder map">
      {m && (
        <p className="muted small">
          {m.counts.stakeholders} stakeholders, {m.counts.edges} relations, {m.counts.interactions} interactions,{' '}
          {m.counts.risks} risks; revision {m.revision}
          {m.truncated.stakeholders ? ' (the first 200 stakeholders are drawn)' : ''}.
        </p>
      )}
      {m?.summary && <p>{m.summary}</p>}
      {m && m.stakeholders.length === 0 && (
        <p className="muted">
          No stakeholders yet: a meeting&apos;s transcript or notes are read into the map (
          <code>POST /v1/stakeholder-map/extract</code>), an agent adds them, or add the first one below.
        </p>
      )}
      {m && m.stakeholders.length > 0 && <StakeholderGraph map={m} />}
      {m && <StakeholderEdit map={m} onChanged={map.reload} />}
      {m && m.risks.length > 0 && (
        <>
          <h3>Risks</h3>
          <ul>
            {m.risks.map((r) => (
              <li key={r.id}>
                <Badge value={r.severity} /> {r.title} <span className="muted">({r.status})</span>
              </li>
            ))}
          </ul>
        </>
      )}
      <Problem problem={map.problem} />
      {map.loading && !m && <p className="muted">Loading…</p>}
    </Section>
  );
}
