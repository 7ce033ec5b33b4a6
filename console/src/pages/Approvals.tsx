import { qs, type Intervention } from '../api';
import { useAuth } from '../auth';
import { Answer } from '../components/Answer';
import { ago, Badge, Pager, Problem, shortId, useTick } from '../components/ui';
import { Link, setQuery, useLocation } from '../router';
import { usePoll } from '../use-poll';

/*
 * The approvals inbox: every intervention of the workspace (brain_scope=all), the pending ones
 * first, with the API's summary counts (GET /v1/interventions?summary=1), each with its run's
 * context and the answer buttons (POST /v1/interventions/:id/respond). Polled every 3 s.
 */
interface Summary {
  byStatus: Record<string, number>;
  grouped: { active: number; resolved: number; expired_or_cancelled: number };
  counts_exact: boolean;
}
interface Page {
  interventions: Intervention[];
  total: number;
}
const LIMIT = 20;
const STATUSES = ['pending', 'approved', 'rejected', 'answered', 'expired', 'cancelled'];

export default function Approvals() {
  const { api } = useAuth();
  const { query } = useLocation();
  const now = useTick(5000);
  const filter = query.get('status') ?? '';
  const offset = Number(query.get('offset') ?? 0) || 0;
  const summary = usePoll(
    (signal) => api.get<Summary>(`/v1/interventions${qs({ summary: 1, brain_scope: 'all' })}`, signal),
    [api],
    3000,
  );
  const pending = usePoll(
    (signal) => api.get<Page>(`/v1/interventions${qs({ status: 'pending', brain_scope: 'all', limit: 100 })}`, signal),
    [api],
    3000,
  );
  const others = usePoll(
    (signal) =>
      api.get<Page>(
        `/v1/interventions${qs({ status: filter || undefined, brain_scope: 'all', limit: LIMIT, offset })}`,
        signal,
      ),
    [api, filter, offset],
    3000,
  );
  const reload = () => {
    summary.reload();
    pending.reload();
    others.reload();
  };
  const s = summary.data;
  const all = others.data?.interventions ?? [];

  return (
    <>
      <div className="page-head">
        <h1>Approvals</h1>
        {s && (
          <ul className="counts" aria-label="Counts">
            <li>
              <strong>{s.grouped.active}</strong> pending
            </li>
            <li>
              <strong>{s.grouped.resolved}</strong> answered
            </li>
            <li>
              <strong>{s.grouped.expired_or_cancelled}</strong> expired or cancelled
            </li>
            {!s.counts_exact && <li className="muted">(counts capped at 1,000)</li>}
          </ul>
        )}
      </div>
      <Problem problem={summary.problem ?? pending.problem ?? others.problem} />
      <h2>Pending</h2>
      {pending.data && pending.data.interventions.length === 0 && <p className="muted">Nothing waits for an answer.</p>}
      <ul className="inbox" aria-label="Pending interventions">
        {pending.data?.interventions.map((i) => (
          <Item key={i.id} i={i} now={now} onAnswered={reload} />
        ))}
      </ul>
      <div className="page-head">
        <h2>All interventions</h2>
        <label className="filters">
          Status
          <select value={filter} onChange={(e) => setQuery({ status: e.target.value, offset: undefined })}>
            <option value="">any</option>
            {STATUSES.map((x) => (
              <option key={x}>{x}</option>
            ))}
          </select>
        </label>
      </div>
      <ul className="inbox" aria-label="All interventions">
        {all.map((i) => (
          <Item key={i.id} i={i} now={now} answerable={false} />
        ))}
        {others.data && all.length === 0 && <li className="muted">None.</li>}
      </ul>
      {others.data && (
        <Pager
          offset={offset}
          limit={LIMIT}
          total={others.data.total}
          count={others.data.interventions.length}
          onPage={(o) => setQuery({ offset: o ? String(o) : undefined })}
        />
      )}
    </>
  );
}

/** One intervention; `answerable: false` in the full list (a pending one is answered in the list above). */
function Item({
  i,
  now,
  onAnswered,
  answerable = true,
}: {
  i: Intervention;
  now: number;
  onAnswered?: () => void;
  answerable?: boolean;
}) {
  return (
    <li className="card intervention" data-intervention-id={i.id} data-status={i.status}>
      <header className="card-head">
        <h3>{i.title || 'Approval'}</h3>
        <Badge value={i.status} />
      </header>
      {i.prompt && <p>{i.prompt}</p>}
      <p className="muted context">
        {i.kind} · run <Link to={`/runs/${i.job_id}`}>{shortId(i.job_id)}</Link>
        {i.trace_id && (
          <>
            {' '}
            · <Link to={`/traces/${i.trace_id}`}>trace</Link>
          </>
        )}{' '}
        · asked {ago(i.created_at, now)}
        {i.expires_at && ` · expires ${new Date(i.expires_at).toLocaleString()}`}
        {i.action && ` · answered “${i.action}”${i.responded_by ? ` by ${shortId(i.responded_by)}` : ''}`}
        {i.comment && ` · “${i.comment}”`}
      </p>
      {answerable && <Answer intervention={i} onAnswered={onAnswered} />}
    </li>
  );
}
