import { useEffect, useState, type FormEvent } from 'react';
import { qs, toProblem, type ApiProblem, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ListTable } from '../components/ListTable';
import { Badge, Problem, ago, shortId, useTick } from '../components/ui';
import { Link, navigate, setQuery, useLocation } from '../router';
import { usePoll } from '../use-poll';
import '../pathways.css';
import '../agents.css';

/*
 * Triggers: the brain's receptors (GET /v1/receptors, X-Brain-Id; every agent and pathway has its
 * own, schedules and stimulus subscriptions are made from templates), filtered by target type and
 * paged in the URL; and a new schedule (POST /v1/receptors/subscribe, template schedule): a target
 * agent or pathway, a cron in a time zone, the overlap policy and catch-up window, the payload's
 * message. While the timing is typed, the form shows its next fire times (POST /v1/schedules/preview,
 * computed by Temporal as the saved schedule will fire), before anything is saved. Its page
 * (`/triggers/:id`) shows the next fire times of the saved schedule.
 */
type Receptor = ApiSchema<'Receptor'>;
const LIMIT = 20;
const OVERLAP = ['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'allow_all'] as const;

/** An instant as the schedule's wall clock: "Mon 30 Nov 2026, 09:00 Europe/Berlin". */
export function inZone(iso: string, timeZone: string): string {
  try {
    const text = new Intl.DateTimeFormat(undefined, {
      timeZone,
      weekday: 'short',
      day: 'numeric',
      month: 'short',
      year: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
    }).format(new Date(iso));
    return `${text} ${timeZone}`;
  } catch {
    return new Date(iso).toLocaleString();
  }
}

/** A timing as source_config.timing takes it (the preview and the save send the same one). */
export interface TimingInput {
  /** One cron expression, or several, one a line. */
  cron: string;
  timezone: string;
  overlap?: string;
  catchup_window?: string;
  /** A saved schedule's interval, kept as it is when its cron or time zone is edited. */
  interval?: unknown;
}

/** The cron field as the API takes it: one expression, or a list when several lines were typed. */
export function cronOf(text: string): string | string[] | undefined {
  const lines = text
    .split(/\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  return lines.length === 0 ? undefined : lines.length === 1 ? lines[0] : lines;
}

/**
 * The next fire times of a timing that is not saved (POST /v1/schedules/preview), asked again 400 ms
 * after the last keystroke; a timing the API refuses shows its message instead. The API runs at most
 * 2 previews of a workspace at once and answers 429 past that (docs/receptors.md): the form asks
 * again a second later, up to three times, rather than showing a refusal the user did not cause.
 */
export function NextFires({ timing, count = 5 }: { timing: TimingInput; count?: number }) {
  const { api } = useAuth();
  const [times, setTimes] = useState<string[] | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const cron = timing.cron.trim();
  const timezone = timing.timezone.trim();
  // The interval is an object or a number: a string key keeps the effect from re-running on each render.
  const interval = timing.interval === undefined ? '' : JSON.stringify(timing.interval);
  useEffect(() => {
    if ((!cron && !interval) || !timezone) {
      setTimes(null);
      setProblem(null);
      return;
    }
    let live = true;
    let timer: ReturnType<typeof setTimeout>;
    const body = {
      timing: {
        ...(cron ? { cron: cronOf(cron) } : {}),
        ...(interval ? { interval: JSON.parse(interval) as unknown } : {}),
        timezone,
      },
      count,
    };
    const ask = (tries: number) => {
      api
        .post<{ next_fire_times: string[] }>('/v1/schedules/preview', body)
        .then((r) => {
          if (!live) return;
          setTimes(r.next_fire_times);
          setProblem(null);
        })
        .catch((e: unknown) => {
          if (!live) return;
          const p = toProblem(e);
          if (p.status === 429 && tries < 3) {
            timer = setTimeout(() => ask(tries + 1), 1000);
            return;
          }
          setTimes(null);
          setProblem(p);
        });
    };
    timer = setTimeout(() => ask(0), 400);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [api, cron, interval, timezone, count]);
  return (
    <div className="fire-preview" aria-live="polite">
      <strong>Next fire times</strong> <span className="muted small">(before saving, as Temporal will fire it)</span>
      {problem ? (
        <p className="error small" role="status" aria-label="Timing problem">
          {problem.message}
        </p>
      ) : times === null ? (
        <p className="muted small">…</p>
      ) : times.length === 0 ? (
        <p className="muted small">This timing does not fire in the next two years.</p>
      ) : (
        <ol aria-label="Next fire times" className="small">
          {times.map((t) => (
            <li key={t} data-at={t}>
              <time dateTime={t}>{inZone(t, timezone)}</time>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

export function activationOf(r: Receptor): string {
  const a = (r.source_config as { activation?: unknown }).activation;
  return typeof a === 'string' ? a : r.active_channels.join(', ') || '—';
}

export default function Triggers() {
  const { api, credential } = useAuth();
  const { query } = useLocation();
  const now = useTick(10_000);
  const target = query.get('target_type') ?? '';
  const offset = Number(query.get('offset') ?? 0) || 0;
  const [creating, setCreating] = useState(query.get('new') === 'schedule');
  const list = usePoll(
    (signal) =>
      credential.brainId
        ? api.get<{ receptors: Receptor[]; total: number | null }>(
            `/v1/receptors${qs({ target_type: target, limit: LIMIT, offset, sortBy: 'updated_at' })}`,
            signal,
          )
        : Promise.resolve(null),
    [api, target, offset, credential.brainId],
    10_000,
  );
  const names = useTargetNames();
  return (
    <>
      <div className="page-head">
        <h1>Triggers</h1>
        {credential.brainId && !creating && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New schedule
          </button>
        )}
      </div>
      {creating && <ScheduleForm onCancel={() => setCreating(false)} />}
      <form className="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Target
          <select value={target} onChange={(e) => setQuery({ target_type: e.target.value, offset: undefined })}>
            <option value="">any</option>
            <option value="neuron">agents</option>
            <option value="pathway">pathways</option>
          </select>
        </label>
      </form>
      <Problem problem={list.problem} />
      <ListTable
        className="triggers"
        label="Triggers"
        rows={list.data?.receptors}
        rowKey={(r) => r.id}
        rowProps={(r) => ({ 'data-receptor-id': r.id })}
        loading={!list.problem}
        empty="No receptors yet: every agent and pathway gets one when it is created; a schedule runs one on a clock."
        page={list.data ? { offset, limit: LIMIT, total: list.data.total } : undefined}
        columns={[
          {
            title: 'Receptor',
            cell: (r) => (
              <>
                <Link to={`/triggers/${r.id}`}>{r.slug}</Link>
                <div className="muted small">{r.origin}</div>
              </>
            ),
          },
          { title: 'Fires', cell: (r) => activationOf(r) },
          {
            title: 'Target',
            cell: (r) => (
              <>
                {r.executable_target.kind}{' '}
                {r.executable_target.id ? (names.get(r.executable_target.id) ?? shortId(r.executable_target.id)) : ''}
              </>
            ),
          },
          { title: 'State', cell: (r) => <Badge value={r.is_active ? 'active' : 'inactive'} /> },
          { title: 'Updated', cell: (r) => <span title={r.updated_at}>{ago(r.updated_at, now)}</span> },
        ]}
      />
    </>
  );
}

/** Names of the brain's agents and pathways by id (targets are shown by name). */
export function useTargetNames(): Map<string, string> {
  const { api, credential } = useAuth();
  const [names, setNames] = useState(new Map<string, string>());
  useEffect(() => {
    if (!credential.brainId) return;
    const a = new AbortController();
    Promise.all([
      api.get<ApiSchema<'NeuronList'>>(`/v1/neurons${qs({ limit: 100 })}`, a.signal),
      api.get<ApiSchema<'PathwayList'>>(`/v1/pathways${qs({ limit: 100 })}`, a.signal),
    ])
      .then(([n, p]) =>
        setNames(
          new Map([
            ...n.neurons.map((x) => [x.id, x.name] as const),
            ...p.pathways.map((x) => [x.id, x.name] as const),
          ]),
        ),
      )
      .catch(() => undefined);
    return () => a.abort();
  }, [api, credential.brainId]);
  return names;
}

function ScheduleForm({ onCancel }: { onCancel(): void }) {
  const { api, credential } = useAuth();
  const [targets, setTargets] = useState<{ kind: 'neuron' | 'pathway'; id: string; name: string }[]>([]);
  const [f, setF] = useState({
    name: '',
    target: '',
    cron: '0 9 * * 1-5',
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC',
    overlap: 'skip' as (typeof OVERLAP)[number],
    catchup: '10m',
    message: '',
  });
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    const a = new AbortController();
    Promise.all([
      api.get<ApiSchema<'NeuronList'>>(
        `/v1/neurons${qs({ limit: 100, sortBy: 'name', sortDirection: 'asc' })}`,
        a.signal,
      ),
      api.get<ApiSchema<'PathwayList'>>(`/v1/pathways${qs({ limit: 100 })}`, a.signal),
    ])
      .then(([n, p]) =>
        setTargets([
          ...n.neurons.map((x) => ({ kind: 'neuron' as const, id: x.id, name: x.name })),
          ...p.pathways.map((x) => ({ kind: 'pathway' as const, id: x.id, name: x.name })),
        ]),
      )
      .catch((e: unknown) => !a.signal.aborted && setProblem(toProblem(e)));
    return () => a.abort();
  }, [api]);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const t = targets.find((x) => `${x.kind}:${x.id}` === f.target);
    if (!t) return;
    setBusy(true);
    setProblem(null);
    try {
      const r = await api.post<Receptor>('/v1/receptors/subscribe', {
        template: 'schedule',
        name: f.name.trim(),
        brain_id: credential.brainId,
        target: { kind: t.kind, id: t.id },
        timing: {
          cron: f.cron.trim(),
          timezone: f.timezone.trim(),
          overlap: f.overlap,
          catchup_window: f.catchup.trim(),
        },
        ...(f.message.trim() ? { payload: { message: f.message.trim() } } : {}),
      });
      navigate(`/triggers/${r.id}`);
    } catch (err) {
      setProblem(toProblem(err));
      setBusy(false);
    }
  };
  return (
    <form className="card settings-form" aria-label="New schedule" onSubmit={(e) => void submit(e)}>
      <label>
        Schedule name
        <input required maxLength={100} value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} />
      </label>
      <label>
        Runs
        <select required value={f.target} onChange={(e) => setF({ ...f, target: e.target.value })}>
          <option value="">choose an agent or a pathway…</option>
          {targets.map((t) => (
            <option key={t.id} value={`${t.kind}:${t.id}`}>
              {t.kind === 'neuron' ? 'agent' : 'pathway'} {t.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Cron
        <input required value={f.cron} onChange={(e) => setF({ ...f, cron: e.target.value })} />
      </label>
      <label>
        Time zone
        <input required value={f.timezone} onChange={(e) => setF({ ...f, timezone: e.target.value })} />
      </label>
      <NextFires timing={{ cron: f.cron, timezone: f.timezone }} />
      <label>
        When the last run is still going
        <select value={f.overlap} onChange={(e) => setF({ ...f, overlap: e.target.value as (typeof OVERLAP)[number] })}>
          {OVERLAP.map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
      </label>
      <label>
        Catch-up window
        <input value={f.catchup} onChange={(e) => setF({ ...f, catchup: e.target.value })} />
      </label>
      <label>
        Message
        <input
          value={f.message}
          onChange={(e) => setF({ ...f, message: e.target.value })}
          placeholder="what the agent is told"
        />
      </label>
      <Problem problem={problem} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={busy || !f.name.trim() || !f.target}>
          Create schedule
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
