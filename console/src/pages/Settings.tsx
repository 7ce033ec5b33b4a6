import { useState, type FormEvent, type ReactNode } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { useAction } from '../components/ListTable';
import { Badge, Json, Problem, Section, ago, shortId, useTick } from '../components/ui';
import { usePoll } from '../use-poll';
import '../pathways.css';
import '../agents.css';

/*
 * Workspace settings, each part shown only to a credential the API serves it to (docs/roles.md):
 * API keys (/v1/api-keys: a JWT only; a member sees and revokes their own keys, an admin every key;
 * a new key is shown once), budgets (/v1/budgets: workspace admins) and webhook endpoints
 * (/v1/webhook-endpoints: workspace admins; events, the signing secret shown once, the delivery log
 * and replay). The API still decides: a control shown here is one it accepts from this caller.
 */
type ApiKey = ApiSchema<'ApiKey'>;
type Budget = ApiSchema<'Budget'>;
type Endpoint = ApiSchema<'WebhookEndpoint'>;
type Delivery = ApiSchema<'WebhookDelivery'>;

const EVENTS: ApiSchema<'WebhookEvent'>[] = [
  'job.completed',
  'job.failed',
  'job.waiting',
  'intervention.created',
  'intervention.answered',
];

/** A secret the API shows once: shown here until dismissed, with a copy button. */
function Once({ label, value, onDone }: { label: string; value: string; onDone(): void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="secret-once" role="status">
      <p>
        <strong>{label}</strong> It is shown this once: store it now.
      </p>
      <code data-secret>{value}</code>
      <div className="buttons">
        <button
          type="button"
          onClick={() =>
            void navigator.clipboard
              ?.writeText(value)
              .then(() => setCopied(true))
              .catch(() => undefined)
          }
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

/** Runs an action, showing its error; `after` reloads what it changed. */
export default function Settings() {
  const { session, isAdmin } = useAuth();
  const jwt = session.credential === 'jwt';
  const parts: ReactNode[] = [];
  if (jwt) parts.push(<ApiKeys key="keys" />);
  if (isAdmin) parts.push(<Budgets key="budgets" />, <Webhooks key="webhooks" />);
  return (
    <>
      <div className="page-head">
        <h1>Settings</h1>
        <span className="muted">
          {session.workspace.name} · {session.roles.join(', ') || 'member'} · signed in with {session.credential}
        </span>
      </div>
      {!jwt && (
        <p className="muted" data-note="api-keys">
          API keys are managed with a JWT only (docs/roles.md): sign in with a JWT to create or revoke keys.
        </p>
      )}
      {!isAdmin && (
        <p className="muted" data-note="admin">
          Budgets and webhooks are managed by workspace admins.
        </p>
      )}
      {parts}
    </>
  );
}

function ApiKeys() {
  const { api, session, isAdmin } = useAuth();
  const now = useTick(10_000);
  const keys = usePoll(
    (signal) => api.get<{ api_keys: ApiKey[]; total: number | null }>(`/v1/api-keys${qs({ limit: 100 })}`, signal),
    [api],
    0,
    false,
  );
  const { problem, busy, run } = useAction();
  const [name, setName] = useState('');
  const [role, setRole] = useState('member');
  const [shown, setShown] = useState<string | null>(null);
  const roles = [
    'member',
    ...(isAdmin ? ['workspace_admin'] : []),
    ...(session.roles.includes('core_admin') ? ['core_admin'] : []),
  ];
  const create = async (e: FormEvent) => {
    e.preventDefault();
    const r = await run(() =>
      api.post<ApiSchema<'ApiKey'> & { key: string }>('/v1/api-keys', { name: name.trim(), roles: [role] }),
    );
    if (r) {
      setShown(r.key);
      setName('');
      keys.reload();
    }
  };
  return (
    <Section title="API keys">
      <p className="muted small">
        A key acts for the user who created it, with the roles it was given (at most that user&apos;s).
        {isAdmin ? ' As an admin you see every key of the workspace.' : ' You see the keys you created.'}
      </p>
      <form className="settings-form" onSubmit={(e) => void create(e)}>
        <label>
          Key name
          <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Role
          <select value={role} onChange={(e) => setRole(e.target.value)}>
            {roles.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </label>
        <button type="submit" className="primary" disabled={busy || !name.trim()}>
          Create key
        </button>
      </form>
      {shown && <Once label="The new key." value={shown} onDone={() => setShown(null)} />}
      <Problem problem={problem ?? keys.problem} />
      <div className="table-wrap">
        <table className="api-keys">
          <thead>
            <tr>
              <th>Name</th>
              <th>Prefix</th>
              <th>Roles</th>
              <th>Created</th>
              <th>Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.data?.api_keys.map((k) => (
              <tr key={k.id} data-key-id={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.roles.join(', ')}</td>
                <td title={k.created_at}>{ago(k.created_at, now)}</td>
                <td>{k.last_used_at ? ago(k.last_used_at, now) : 'never'}</td>
                <td>
                  {(isAdmin || (k.created_by !== null && k.created_by === session.user_id)) && (
                    <button
                      type="button"
                      className="danger"
                      disabled={busy}
                      onClick={() => {
                        if (!window.confirm(`Revoke the key ${k.name}? Clients using it stop working.`)) return;
                        void run(() => api.raw('DELETE', `/v1/api-keys/${k.id}`)).then(() => keys.reload());
                      }}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
            {keys.data?.api_keys.length === 0 && (
              <tr>
                <td colSpan={6} className="muted">
                  No keys yet: create one for a script or a client.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </Section>
  );
}

function Budgets() {
  const { api, credential } = useAuth();
  const budgets = usePoll(
    (signal) => api.get<ApiSchema<'BudgetList'>>(`/v1/budgets${qs({ limit: 100 })}`, signal),
    [api],
    10_000,
  );
  const neurons = usePoll(
    (signal) =>
      credential.brainId
        ? api.get<ApiSchema<'NeuronList'>>(
            `/v1/neurons${qs({ limit: 100, sortBy: 'name', sortDirection: 'asc' })}`,
            signal,
          )
        : Promise.resolve(null),
    [api, credential.brainId],
    0,
    false,
  );
  const { problem, busy, run } = useAction();
  const [f, setF] = useState({
    name: '',
    scope: 'workspace' as 'workspace' | 'neuron',
    target_id: '',
    measure: 'tokens' as Budget['measure'],
    period: 'month' as Budget['period'],
    limit: '',
    policy: 'pause' as Budget['policy'],
  });
  const names = new Map((neurons.data?.neurons ?? []).map((n) => [n.id, n.name]));
  const create = async (e: FormEvent) => {
    e.preventDefault();
    const r = await run(() =>
      api.post<Budget>('/v1/budgets', {
        scope: f.scope,
        ...(f.scope === 'neuron' ? { target_id: f.target_id } : {}),
        measure: f.measure,
        period: f.period,
        limit: Number(f.limit),
        policy: f.policy,
        ...(f.name.trim() ? { name: f.name.trim() } : {}),
      }),
    );
    if (r) {
      setF((x) => ({ ...x, name: '', limit: '' }));
      budgets.reload();
    }
  };
  const fmt = (b: Budget, v: number) => (b.measure === 'usd' ? `$${v.toFixed(4)}` : `${Math.round(v)} tokens`);
  return (
    <Section title="Budgets">
      <p className="muted small">
        A cap on the tokens or dollars spent per UTC day, month or in all, for the workspace or one agent. Past it, a
        run pauses for an admin&apos;s approval (pause) or fails (fail).
      </p>
      <form className="settings-form" onSubmit={(e) => void create(e)} aria-label="New budget">
        <label>
          Budget name
          <input maxLength={200} value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} />
        </label>
        <label>
          Applies to
          <select value={f.scope} onChange={(e) => setF({ ...f, scope: e.target.value as 'workspace' | 'neuron' })}>
            <option value="workspace">the workspace</option>
            <option value="neuron">one agent</option>
          </select>
        </label>
        {f.scope === 'neuron' && (
          <label>
            Agent
            <select required value={f.target_id} onChange={(e) => setF({ ...f, target_id: e.target.value })}>
              <option value="">choose…</option>
              {neurons.data?.neurons.map((n) => (
                <option key={n.id} value={n.id}>
                  {n.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          Measure
          <select value={f.measure} onChange={(e) => setF({ ...f, measure: e.target.value as Budget['measure'] })}>
            <option value="tokens">tokens</option>
            <option value="usd">USD</option>
          </select>
        </label>
        <label>
          Period
          <select value={f.period} onChange={(e) => setF({ ...f, period: e.target.value as Budget['period'] })}>
            <option value="day">day</option>
            <option value="month">month</option>
            <option value="total">in all</option>
          </select>
        </label>
        <label>
          Limit
          <input
            required
            type="number"
            min={0}
            step="any"
            value={f.limit}
            onChange={(e) => setF({ ...f, limit: e.target.value })}
          />
        </label>
        <label>
          When reached
          <select value={f.policy} onChange={(e) => setF({ ...f, policy: e.target.value as Budget['policy'] })}>
            <option value="pause">pause</option>
            <option value="fail">fail</option>
          </select>
        </label>
        <button type="submit" className="primary" disabled={busy || !f.limit}>
          Set budget
        </button>
      </form>
      <Problem problem={problem ?? budgets.problem} />
      <div className="table-wrap">
        <table className="budgets">
          <thead>
            <tr>
              <th>Name</th>
              <th>Applies to</th>
              <th>Period</th>
              <th>Spent</th>
              <th>Policy</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {budgets.data?.budgets.map((b) => (
              <tr key={b.id} data-budget-id={b.id}>
                <td>{b.name ?? '—'}</td>
                <td>
                  {b.scope === 'workspace'
                    ? 'workspace'
                    : `${b.scope} ${b.target_id ? (names.get(b.target_id) ?? shortId(b.target_id)) : ''}`}
                </td>
                <td>{b.period}</td>
                <td>
                  <meter min={0} max={b.limit} value={Math.min(b.spent, b.limit)} /> {fmt(b, b.spent)} of{' '}
                  {fmt(b, b.limit)} {b.exceeded && <Badge value="exceeded" />}
                </td>
                <td>{b.policy}</td>
                <td>
                  <button
                    type="button"
                    className="danger"
                    disabled={busy}
                    onClick={() =>
                      void run(() => api.raw('DELETE', `/v1/budgets/${b.id}`)).then(() => budgets.reload())
                    }
                  >
                    Remove
                  </button>
                </td>
              </tr>
            ))}
            {budgets.data?.budgets.length === 0 && (
              <tr>
                <td colSpan={6} className="muted">
                  No budgets: nothing caps what runs spend.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </Section>
  );
}

function Webhooks() {
  const { api } = useAuth();
  const now = useTick(10_000);
  const endpoints = usePoll(
    (signal) => api.get<ApiSchema<'WebhookEndpointList'>>(`/v1/webhook-endpoints${qs({ limit: 50 })}`, signal),
    [api],
    0,
    false,
  );
  const { problem, busy, run } = useAction();
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['job.completed', 'job.failed']);
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const create = async (e: FormEvent) => {
    e.preventDefault();
    const r = await run(() =>
      api.post<ApiSchema<'WebhookEndpointWithSecret'>>('/v1/webhook-endpoints', { url: url.trim(), events }),
    );
    if (r) {
      setSecret(r.secret);
      setUrl('');
      endpoints.reload();
    }
  };
  return (
    <Section title="Webhooks">
      <p className="muted small">
        Endpoints receive signed POSTs (Standard Webhooks) when runs end or wait and when approvals are asked or
        answered.
      </p>
      <form className="settings-form" onSubmit={(e) => void create(e)} aria-label="New webhook endpoint">
        <label>
          Endpoint URL
          <input required type="url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://…" />
        </label>
        <fieldset>
          <legend>Events</legend>
          {EVENTS.map((ev) => (
            <label key={ev} className="inline">
              <input
                type="checkbox"
                checked={events.includes(ev)}
                onChange={(e) => setEvents((x) => (e.target.checked ? [...x, ev] : x.filter((y) => y !== ev)))}
              />{' '}
              {ev}
            </label>
          ))}
        </fieldset>
        <button type="submit" className="primary" disabled={busy || !url.trim() || events.length === 0}>
          Add endpoint
        </button>
      </form>
      {secret && <Once label="The endpoint's signing secret." value={secret} onDone={() => setSecret(null)} />}
      <Problem problem={problem ?? endpoints.problem} />
      <div className="table-wrap">
        <table className="webhooks">
          <thead>
            <tr>
              <th>URL</th>
              <th>Events</th>
              <th>State</th>
              <th>Created</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {endpoints.data?.webhook_endpoints.map((w) => (
              <EndpointRow
                key={w.id}
                w={w}
                now={now}
                busy={busy}
                open={open === w.id}
                onOpen={() => setOpen(open === w.id ? null : w.id)}
                onToggle={() =>
                  void run(() => api.raw('PATCH', `/v1/webhook-endpoints/${w.id}`, { enabled: !w.enabled })).then(() =>
                    endpoints.reload(),
                  )
                }
                onEvents={(ev) =>
                  void run(() => api.raw('PATCH', `/v1/webhook-endpoints/${w.id}`, { events: ev })).then(() =>
                    endpoints.reload(),
                  )
                }
                onRotate={() =>
                  void run(() =>
                    api.post<ApiSchema<'WebhookEndpointWithSecret'>>(`/v1/webhook-endpoints/${w.id}/rotate-secret`),
                  ).then((r) => {
                    if (r) setSecret(r.secret);
                    endpoints.reload();
                  })
                }
                onDelete={() => {
                  if (!window.confirm(`Remove the endpoint ${w.url}?`)) return;
                  void run(() => api.raw('DELETE', `/v1/webhook-endpoints/${w.id}`)).then(() => endpoints.reload());
                }}
              />
            ))}
            {endpoints.data?.webhook_endpoints.length === 0 && (
              <tr>
                <td colSpan={5} className="muted">
                  No endpoints: add one to be told when runs end.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </Section>
  );
}

function EndpointRow({
  w,
  now,
  busy,
  open,
  onOpen,
  onToggle,
  onEvents,
  onRotate,
  onDelete,
}: {
  w: Endpoint;
  now: number;
  busy: boolean;
  open: boolean;
  onOpen(): void;
  onToggle(): void;
  onEvents(events: string[]): void;
  onRotate(): void;
  onDelete(): void;
}) {
  const [editing, setEditing] = useState<string[] | null>(null);
  return (
    <>
      <tr data-endpoint-id={w.id}>
        <td>
          <code>{w.url}</code>
        </td>
        <td>
          {editing ? (
            <fieldset className="events-edit" aria-label="Events of this endpoint">
              {EVENTS.map((ev) => (
                <label key={ev} className="inline">
                  <input
                    type="checkbox"
                    checked={editing.includes(ev)}
                    onChange={(e) =>
                      setEditing((x) => (e.target.checked ? [...(x ?? []), ev] : (x ?? []).filter((y) => y !== ev)))
                    }
                  />{' '}
                  {ev}
                </label>
              ))}
              <button
                type="button"
                disabled={busy || editing.length === 0}
                onClick={() => {
                  onEvents(editing);
                  setEditing(null);
                }}
              >
                Save events
              </button>
            </fieldset>
          ) : (
            <>
              {w.events.join(', ')}{' '}
              <button type="button" className="link-button" onClick={() => setEditing(w.events)}>
                Change
              </button>
            </>
          )}
        </td>
        <td>
          <Badge value={w.enabled ? 'active' : 'paused'} />
          {w.previous_secret_expires_at && (
            <div className="muted small">
              previous secret signs until {new Date(w.previous_secret_expires_at).toLocaleString()}
            </div>
          )}
        </td>
        <td title={w.created_at}>{ago(w.created_at, now)}</td>
        <td className="buttons">
          <button type="button" onClick={onOpen} aria-expanded={open}>
            Deliveries
          </button>
          <button type="button" disabled={busy} onClick={onToggle}>
            {w.enabled ? 'Disable' : 'Enable'}
          </button>
          <button type="button" disabled={busy} onClick={onRotate}>
            Rotate secret
          </button>
          <button type="button" className="danger" disabled={busy} onClick={onDelete}>
            Remove
          </button>
        </td>
      </tr>
      {open && (
        <tr>
          <td colSpan={5}>
            <Deliveries endpointId={w.id} />
          </td>
        </tr>
      )}
    </>
  );
}

function Deliveries({ endpointId }: { endpointId: string }) {
  const { api } = useAuth();
  const now = useTick(10_000);
  const list = usePoll(
    (signal) =>
      api.get<ApiSchema<'WebhookDeliveryList'>>(
        `/v1/webhook-endpoints/${endpointId}/deliveries${qs({ limit: 20 })}`,
        signal,
      ),
    [api, endpointId],
    5_000,
  );
  const { problem, busy, run } = useAction();
  return (
    <div className="deliveries" aria-label="Delivery log">
      <Problem problem={problem ?? list.problem} />
      {list.data?.deliveries.length === 0 && <p className="muted">No deliveries yet.</p>}
      <ul className="log">
        {list.data?.deliveries.map((d: Delivery) => {
          const last = d.attempts[d.attempts.length - 1];
          return (
            <li key={d.id} data-delivery-id={d.id} data-status={d.status}>
              <details>
                <summary>
                  <Badge
                    value={d.status === 'delivered' ? 'completed' : d.status === 'failed' ? 'failed' : 'running'}
                  />{' '}
                  {d.event} · {ago(d.created_at, now)} · {d.attempts.length} attempt{d.attempts.length === 1 ? '' : 's'}
                  {last && ` · ${last.status_code ?? last.error ?? '—'}`}
                  {d.replay_of && ' · replay'}
                </summary>
                <Json value={d.payload} />
                {d.failed_reason && <p className="error">{d.failed_reason}</p>}
              </details>
              <button
                type="button"
                disabled={busy}
                onClick={() =>
                  void run(() => api.post(`/v1/webhook-endpoints/${endpointId}/deliveries/${d.id}/replay`)).then(() =>
                    list.reload(),
                  )
                }
              >
                Replay
              </button>
            </li>
          );
        })}
      </ul>
    </div>
  );
}
