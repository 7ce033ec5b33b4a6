import { useState, type FormEvent } from 'react';
import { toProblem, type ApiProblem, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { Badge, Problem, Section, ago, shortId, useTick } from '../components/ui';
import { Link, navigate } from '../router';
import { useCanEdit } from '../use-can-edit';
import { usePoll } from '../use-poll';
import { NextFires, activationOf, cronOf, inZone, useTargetNames } from './Triggers';
import '../pathways.css';
import '../agents.css';

/*
 * One receptor (GET /v1/receptors/:workspace/:id?preview=5): its target, and for a schedule its
 * state, cron, time zone, overlap policy, the next five fire times (computed by Temporal), recent
 * fires and counters, with Pause/Resume and Fire now (…/schedule/pause|unpause|trigger). Any
 * receptor can be fired with a message (POST /v1/receptors/:id/fire), which opens the run. Its share
 * link (…/share): created with an expiry and limits, its URL shown once, its use, rotate and revoke.
 * Whoever may change it edits a saved schedule's timing (cron, time zone, overlap, catch-up window)
 * with the next fire times of what is typed shown before saving (POST /v1/schedules/preview), saved
 * as the receptor's source_config (PATCH, which updates the Temporal schedule), and backfills a past
 * range (…/schedule/backfill).
 */
type Receptor = ApiSchema<'Receptor'>;

type Share = ApiSchema<'ShareToken'>;
const OVERLAP = ['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'allow_all'] as const;
/** source_config.timing as the API presents it (src/services/receptor-timing.ts, fromTiming). */
interface SavedTiming {
  cron?: string | string[];
  interval?: unknown;
  timezone?: string;
  overlap?: string;
  catchup_window?: number;
  [k: string]: unknown;
}
const timingOf = (r: Receptor): SavedTiming => (r.source_config as { timing?: SavedTiming }).timing ?? {};

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
            <dd data-field="overlap">{s.overlap}</dd>
            <dt>Catch-up window</dt>
            <dd data-field="catchup">{timingOf(rec).catchup_window ?? '—'} s</dd>
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
          {canChange && <EditTiming key={rec.updated_at} base={base} rec={rec} onSaved={r.reload} />}
          {canChange && <Backfill base={base} onDone={r.reload} />}
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

/**
 * A saved schedule's timing, changed in place: the next fire times of what is typed are shown before
 * saving (the preview is Temporal's, as for a new schedule). Saving sends the whole source_config
 * back (PATCH replaces it; its payload and keys are kept as read), with the saved timing's other
 * fields (interval, jitter, start and end) unchanged; a timing the API refuses is its 400, shown here.
 */
function EditTiming({ base, rec, onSaved }: { base: string; rec: Receptor; onSaved(): void }) {
  const { api } = useAuth();
  const saved = timingOf(rec);
  const [open, setOpen] = useState(false);
  const [f, setF] = useState({
    cron: Array.isArray(saved.cron) ? saved.cron.join('\n') : (saved.cron ?? ''),
    timezone: saved.timezone ?? 'UTC',
    overlap: saved.overlap ?? 'skip',
    catchup: String(saved.catchup_window ?? 600),
  });
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  if (!open)
    return (
      <div className="buttons">
        <button type="button" onClick={() => setOpen(true)}>
          Change timing
        </button>
      </div>
    );
  const save = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    const { cron: _cron, ...rest } = saved;
    const cron = cronOf(f.cron);
    const catchup = f.catchup.trim();
    try {
      await api.raw('PATCH', base, {
        source_config: {
          ...rec.source_config,
          timing: {
            ...rest,
            ...(cron ? { cron } : {}),
            timezone: f.timezone.trim(),
            overlap: f.overlap,
            // Seconds as a number, or a duration such as 15m (the API reads both).
            catchup_window: /^\d+(\.\d+)?$/.test(catchup) ? Number(catchup) : catchup,
          },
        },
      });
      onSaved();
    } catch (err) {
      setProblem(toProblem(err));
      setBusy(false);
    }
  };
  return (
    <form className="card settings-form" aria-label="Change timing" onSubmit={(e) => void save(e)}>
      <label>
        Cron <span className="muted small">(one a line)</span>
        <textarea
          rows={Math.max(1, f.cron.split('\n').length)}
          value={f.cron}
          onChange={(e) => setF({ ...f, cron: e.target.value })}
        />
      </label>
      {saved.interval !== undefined && (
        <p className="muted small">Its interval ({JSON.stringify(saved.interval)} s) is kept.</p>
      )}
      <label>
        Time zone
        <input required value={f.timezone} onChange={(e) => setF({ ...f, timezone: e.target.value })} />
      </label>
      <NextFires timing={{ cron: f.cron, timezone: f.timezone, interval: saved.interval }} />
      <label>
        When the last run is still going
        <select value={f.overlap} onChange={(e) => setF({ ...f, overlap: e.target.value })}>
          {OVERLAP.map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
      </label>
      <label>
        Catch-up window <span className="muted small">(seconds, or 15m, 2h)</span>
        <input value={f.catchup} onChange={(e) => setF({ ...f, catchup: e.target.value })} />
      </label>
      <Problem problem={problem} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={busy}>
          Save timing
        </button>
        <button type="button" disabled={busy} onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** Starts the fires a past range would have had (…/schedule/backfill, at most 500), with an overlap policy. */
function Backfill({ base, onDone }: { base: string; onDone(): void }) {
  const { api } = useAuth();
  const [open, setOpen] = useState(false);
  const [f, setF] = useState({ start: '', end: '', overlap: 'allow_all' });
  const [done, setDone] = useState<number | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  if (!open)
    return (
      <div className="buttons">
        <button type="button" onClick={() => setOpen(true)}>
          Backfill…
        </button>
      </div>
    );
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    setDone(null);
    try {
      const r = await api.post<{ backfill: { runs: number } }>(`${base}/schedule/backfill`, {
        start_at: new Date(f.start).toISOString(),
        end_at: new Date(f.end).toISOString(),
        overlap: f.overlap,
      });
      setDone(r.backfill.runs);
      onDone();
    } catch (err) {
      setProblem(toProblem(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card settings-form" aria-label="Backfill" onSubmit={(e) => void submit(e)}>
      <p className="muted small">Starts the fires a past range would have had (at most 500).</p>
      <label>
        From
        <input type="datetime-local" required value={f.start} onChange={(e) => setF({ ...f, start: e.target.value })} />
      </label>
      <label>
        To
        <input type="datetime-local" required value={f.end} onChange={(e) => setF({ ...f, end: e.target.value })} />
      </label>
      <label>
        Overlap of the backfilled runs
        <select value={f.overlap} onChange={(e) => setF({ ...f, overlap: e.target.value })}>
          {OVERLAP.map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
      </label>
      <Problem problem={problem} />
      {done !== null && (
        <p role="status" data-field="backfilled">
          {done} {done === 1 ? 'run' : 'runs'} started.
        </p>
      )}
      <div className="buttons">
        <button type="submit" className="primary" disabled={busy}>
          Start backfill
        </button>
        <button type="button" disabled={busy} onClick={() => setOpen(false)}>
          Close
        </button>
      </div>
    </form>
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
