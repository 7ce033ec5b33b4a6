import { useState, type FormEvent } from 'react';
import { toProblem, type ApiProblem, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { Badge, Problem, Section, ago, shortId, useTick } from '../components/ui';
import { Link, navigate } from '../router';
import { useCanEdit } from '../use-can-edit';
import { usePoll } from '../use-poll';
import { activationOf, inZone, useTargetNames } from './Triggers';
import '../pathways.css';
import '../agents.css';

/*
 * One receptor (GET /v1/receptors/:workspace/:id?preview=5): its target, and for a schedule its
 * state, cron, time zone, overlap policy, the next five fire times (computed by Temporal), recent
 * fires and counters, with Pause/Resume and Fire now (…/schedule/pause|unpause|trigger). Any
 * receptor can be fired with a message (POST /v1/receptors/:id/fire), which opens the run. Its share
 * link (…/share): created with an expiry and limits, its URL shown once, its use, rotate and revoke.
 */
type Receptor = ApiSchema<'Receptor'>;

type Share = ApiSchema<'ShareToken'>;

export default function Trigger({ params }: { params: Record<string, string> }) {
  const { api, session } = useAuth();
  const now = useTick(10_000);
  const base = `/v1/receptors/${encodeURIComponent(session.workspace.slug)}/${params.id}`;
  const r = usePoll((signal) => api.get<Receptor>(`${base}?preview=5`, signal), [api, base], 15_000);
  const names = useTargetNames();
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState('');
  const act = async (f: () => Promise<unknown>) => {
    setBusy(true);
    setProblem(null);
    try {
      await f();
      r.reload();
    } catch (e) {
      setProblem(toProblem(e));
    } finally {
      setBusy(false);
    }
  };
  const rec = r.data;
  // Who may change a receptor (src/services/receptors.ts, docs/roles.md): the role its scope needs,
  // editor of a pathway target, workspace_admin for platform work. Others see no control for it.
  const pathwayCan = useCanEdit(rec?.executable_target.kind === 'pathway' ? rec.executable_target.id : null);
  const admin = session.roles.includes('workspace_admin') || session.roles.includes('core_admin');
  const canChange =
    !!rec &&
    (rec.scope === 'brain' ||
      (rec.scope === 'workspace' && admin) ||
      (rec.scope === 'core' && session.roles.includes('core_admin'))) &&
    (rec.executable_target.kind !== 'pathway' || pathwayCan === true) &&
    (['neuron', 'pathway'].includes(rec.executable_target.kind) || admin);
  if (!rec) return r.problem ? <Problem problem={r.problem} /> : <p className="muted">Loading…</p>;
  const s = rec.schedule;
  const t = rec.executable_target;
  const targetLink = t.id
    ? t.kind === 'neuron'
      ? `/agents/${t.id}`
      : t.kind === 'pathway'
        ? `/pathways/${t.id}`
        : null
    : null;
  return (
    <>
      <div className="page-head">
        <h1>{rec.slug}</h1>
        <Badge value={rec.is_active ? 'active' : 'inactive'} />
        <span className="muted">
          {activationOf(rec)} · {rec.origin}
        </span>
        {canChange && rec.origin === 'subscription' && (
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={() => {
              if (!window.confirm(`Delete the receptor ${rec.slug}?`)) return;
              void act(() => api.raw('DELETE', base)).then(() => navigate('/triggers'));
            }}
          >
            Delete
          </button>
        )}
      </div>
      <Problem problem={problem} />
      <dl className="facts">
        <dt>Runs</dt>
        <dd>
          {t.kind} {targetLink ? <Link to={targetLink}>{names.get(t.id ?? '') ?? shortId(t.id)}</Link> : (t.job ?? '')}
        </dd>
        <dt>Created</dt>
        <dd title={rec.created_at}>{ago(rec.created_at, now)}</dd>
      </dl>
      {s && (
        <Section
          title="Schedule"
          actions={
            canChange && (
              <div className="buttons">
                {s.state === 'paused' ? (
                  <button
                    type="button"
                    disabled={busy}
                    onClick={() => void act(() => api.post(`${base}/schedule/unpause`))}
                  >
                    Resume
                  </button>
                ) : (
                  <button
                    type="button"
                    disabled={busy || s.state === 'missing'}
                    onClick={() =>
                      void act(() => api.post(`${base}/schedule/pause`, { note: 'paused from the console' }))
                    }
                  >
                    Pause
                  </button>
                )}
                <button
                  type="button"
                  disabled={busy}
                  onClick={() => void act(() => api.post(`${base}/schedule/trigger`))}
                >
                  Fire now
                </button>
              </div>
            )
          }
        >
          <dl className="facts">
            <dt>State</dt>
            <dd data-field="schedule-state">
              <Badge value={s.state === 'active' ? 'running' : s.state} /> {s.note}
            </dd>
            <dt>When</dt>
            <dd>
              {[...s.cron, ...s.interval_seconds.map((i) => `every ${i} s`)].join('; ')} ({s.timezone})
            </dd>
            <dt>Overlap</dt>
            <dd>{s.overlap}</dd>
            <dt>Fires</dt>
            <dd>
              {s.fires_taken} taken · {s.skipped_overlap} skipped (overlap) · {s.missed_catchup} missed
            </dd>
          </dl>
          <h3>Next fire times</h3>
          {s.state === 'paused' && <p className="muted">Paused: nothing fires until it is resumed.</p>}
          <ol className="next-fires" aria-label="Next fire times">
            {s.next_fire_times.map((x) => (
              <li key={x} data-at={x}>
                {inZone(x, s.timezone)} <span className="muted small">({x})</span>
              </li>
            ))}
          </ol>
          {s.recent_fires.length > 0 && (
            <>
              <h3>Recent fires</h3>
              <ul className="log" aria-label="Recent fires">
                {s.recent_fires.map((f) => (
                  <li key={f.workflow_id}>
                    scheduled {new Date(f.scheduled_at).toLocaleString()} · started {ago(f.started_at, now)}
                  </li>
                ))}
              </ul>
            </>
          )}
        </Section>
      )}
      <Section title="Fire with a message">
        <form
          className="settings-form"
          onSubmit={(e) => {
            e.preventDefault();
            void act(async () => {
              const j = await api.post<{ job_id: string }>(
                `/v1/receptors/${rec.id}/fire`,
                message.trim() ? { message: message.trim() } : {},
              );
              navigate(`/runs/${j.job_id}`);
            });
          }}
        >
          <label>
            Message
            <input value={message} onChange={(e) => setMessage(e.target.value)} />
          </label>
          <button type="submit" disabled={busy || !rec.is_active}>
            Fire
          </button>
        </form>
      </Section>
      <ShareLink base={base} canChange={canChange} />
    </>
  );
}

function ShareLink({ base, canChange }: { base: string; canChange: boolean }) {
  const { api } = useAuth();
  const now = useTick(10_000);
  const share = usePoll(
    (signal) =>
      api.get<Share>(`${base}/share`, signal).catch((e: unknown) => {
        if (toProblem(e).status === 404) return null;
        throw e;
      }),
    [api, base],
    10_000,
  );
  const [shown, setShown] = useState<string | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  const [f, setF] = useState({ expires: '', max_requests: '', max_tokens: '', allow_files: false });
  const run = async (fn: () => Promise<Share | unknown>) => {
    setBusy(true);
    setProblem(null);
    try {
      const r = (await fn()) as Partial<Share> | undefined;
      if (r && typeof r === 'object' && r.share_url) setShown(new URL(r.share_url, window.location.origin).toString());
      share.reload();
    } catch (e) {
      setProblem(toProblem(e));
    } finally {
      setBusy(false);
    }
  };
  const create = (e: FormEvent) => {
    e.preventDefault();
    void run(() =>
      api.post(`${base}/share`, {
        allow_files: f.allow_files,
        ...(f.expires ? { expires_at: new Date(f.expires).toISOString() } : {}),
        budget: {
          max_requests: f.max_requests ? Number(f.max_requests) : null,
          max_tokens: f.max_tokens ? Number(f.max_tokens) : null,
        },
      }),
    );
  };
  const s = share.data;
  return (
    <Section title="Share link">
      <p className="muted small">
        A link anyone can use to talk to this receptor&apos;s target, without an account, within its limits.
      </p>
      {shown && (
        <div className="secret-once" role="status">
          <p>
            <strong>The share link.</strong> It carries its token and is shown this once: copy it now.
          </p>
          <code data-secret>{shown}</code>
          <div className="buttons">
            <button type="button" onClick={() => void navigator.clipboard?.writeText(shown).catch(() => undefined)}>
              Copy
            </button>
            <button type="button" onClick={() => setShown(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <Problem problem={problem ?? share.problem} />
      {share.data === null && !share.loading && !canChange && (
        <p className="muted" data-note="share">
          No share link. Making one needs the right to change this receptor&apos;s target.
        </p>
      )}
      {share.data === null && !share.loading && canChange && (
        <form className="settings-form" aria-label="New share link" onSubmit={create}>
          <label>
            Expires
            <input type="datetime-local" value={f.expires} onChange={(e) => setF({ ...f, expires: e.target.value })} />
          </label>
          <label>
            Max runs
            <input
              type="number"
              min={1}
              step={1}
              value={f.max_requests}
              onChange={(e) => setF({ ...f, max_requests: e.target.value })}
            />
          </label>
          <label>
            Max tokens
            <input
              type="number"
              min={1}
              step={1}
              value={f.max_tokens}
              onChange={(e) => setF({ ...f, max_tokens: e.target.value })}
            />
          </label>
          <label className="inline">
            <input
              type="checkbox"
              checked={f.allow_files}
              onChange={(e) => setF({ ...f, allow_files: e.target.checked })}
            />{' '}
            Allow file uploads
          </label>
          <button type="submit" className="primary" disabled={busy}>
            Create share link
          </button>
        </form>
      )}
      {s && (
        <>
          <dl className="facts" data-share-id={s.id}>
            <dt>Token</dt>
            <dd>
              <code>{s.token_prefix}…</code>
            </dd>
            <dt>Created</dt>
            <dd>{ago(s.created_at, now)}</dd>
            <dt>Runs</dt>
            <dd data-field="used-requests">
              {s.budget.used_requests}
              {s.budget.max_requests !== null && ` of ${s.budget.max_requests}`}
            </dd>
            <dt>Tokens</dt>
            <dd data-field="used-tokens">
              {s.budget.used_tokens}
              {s.budget.max_tokens !== null && ` of ${s.budget.max_tokens}`}
            </dd>
            <dt>Expires</dt>
            <dd>{s.expires_at ? new Date(s.expires_at).toLocaleString() : 'never'}</dd>
            <dt>Files</dt>
            <dd>{s.allow_files ? 'allowed' : 'no'}</dd>
          </dl>
          {canChange && (
            <div className="buttons">
              <button
                type="button"
                disabled={busy}
                onClick={() => void run(() => api.post(`${base}/share/rotate`, {}))}
              >
                Replace the token
              </button>
              <button
                type="button"
                className="danger"
                disabled={busy}
                onClick={() => {
                  if (!window.confirm('Revoke the share link? It stops working at once.')) return;
                  void run(() => api.raw('DELETE', `${base}/share`));
                }}
              >
                Revoke
              </button>
            </div>
          )}
        </>
      )}
    </Section>
  );
}
