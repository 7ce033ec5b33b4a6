import { useEffect, useMemo, useState } from 'react';
import { qs, toProblem, type Api, type ApiProblem, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { BarList, TimeBars, type Bar, type Point } from '../components/charts';
import { bucketsOf, RANGES, type Range } from '../usage-buckets';
import { Badge, Problem, Section, shortId } from '../components/ui';
import { setQuery, useLocation } from '../router';
import { useTargets } from './Runs';
import '../pathways.css';
import '../usage.css';

/*
 * Usage: tokens and cost over time and by model, neuron, receptor and pathway, read from the usage
 * routes (GET /v1/usage for the caller's own calls; GET /v1/usage/:workspace_id for the whole
 * workspace, admins only), and the workspace's budgets with what each has spent (GET /v1/budgets,
 * admins only). The API has no time-series route: the page asks for one window per bucket (an hour
 * or a UTC day), which the API answers from its hour rollups and counters, and one window for the
 * whole range for the breakdowns (docs/decisions.md, "Console").
 */

type Stats = ApiSchema<'UsageStats'>;
type Budget = ApiSchema<'Budget'>;
type Measure = 'tokens' | 'cost';

/** Runs `fn` over `items`, at most `limit` at a time, keeping their order. */
async function pool<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

const tokens = (v: number) =>
  v >= 1e6
    ? `${(v / 1e6).toFixed(v >= 1e7 ? 0 : 1)}M`
    : v >= 1e4
      ? `${(v / 1e3).toFixed(0)}k`
      : Math.round(v).toLocaleString();
const usd = (v: number) => (v === 0 ? '$0' : v < 0.01 ? `$${v.toFixed(5)}` : `$${v.toFixed(2)}`);

async function loadUsage(api: Api, base: string, range: Range, signal: AbortSignal) {
  const buckets = bucketsOf(range);
  const window = { startDate: buckets[0].start, endDate: buckets[buckets.length - 1].end };
  const [total, series] = await Promise.all([
    api.get<Stats>(`${base}${qs(window)}`, signal),
    pool(buckets, 6, (b) => api.get<Stats>(`${base}${qs({ startDate: b.start, endDate: b.end })}`, signal)),
  ]);
  return { total, buckets, series };
}

export default function Usage() {
  const { api, session, isAdmin } = useAuth();
  const { query } = useLocation();
  const range = (Object.keys(RANGES).includes(query.get('range') ?? '') ? query.get('range') : '7d') as Range;
  const measure: Measure = query.get('measure') === 'cost' ? 'cost' : 'tokens';
  const scope = isAdmin && query.get('scope') !== 'mine' ? 'workspace' : 'mine';
  const base = scope === 'workspace' ? `/v1/usage/${session.workspace.id}` : '/v1/usage';
  const [data, setData] = useState<Awaited<ReturnType<typeof loadUsage>> | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [nonce, setNonce] = useState(0);
  const targets = useTargets();

  useEffect(() => {
    const abort = new AbortController();
    setProblem(null);
    loadUsage(api, base, range, abort.signal)
      .then(setData)
      .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, base, range, nonce]);

  const fmt = measure === 'cost' ? usd : tokens;
  const pick = (s: { tokens: number; cost: number }) => (measure === 'cost' ? s.cost : s.tokens);
  const points = useMemo<Point[]>(
    () =>
      data
        ? data.buckets.map((b, i) => ({
            ...b,
            value: measure === 'cost' ? data.series[i].totalCost : data.series[i].totalTokens,
          }))
        : [],
    [data, measure],
  );
  const nameOf = (kind: 'neuron' | 'pathway' | 'receptor', id: string, slug: string | null) =>
    targets[kind].find((t) => t.id === id)?.name ?? slug ?? shortId(id);
  const facet = (kind: 'neuron' | 'pathway' | 'receptor'): Bar[] =>
    Object.values(data?.total.usageByResource[kind] ?? {}).map((r) => ({
      key: r.resourceId,
      label: nameOf(kind, r.resourceId, r.slug),
      title: `${kind} ${r.resourceId}`,
      value: pick(r),
      note: `${r.invokeCount} run${r.invokeCount === 1 ? '' : 's'}`,
    }));
  const t = data?.total;

  return (
    <>
      <div className="page-head">
        <h1>Usage</h1>
        <form className="filters" aria-label="Usage view" onSubmit={(e) => e.preventDefault()}>
          {isAdmin && (
            <label>
              Whose
              <select
                value={scope}
                onChange={(e) => setQuery({ scope: e.target.value === 'mine' ? 'mine' : undefined })}
              >
                <option value="workspace">Whole workspace</option>
                <option value="mine">My calls</option>
              </select>
            </label>
          )}
          <label>
            Window
            <select
              value={range}
              onChange={(e) => setQuery({ range: e.target.value === '7d' ? undefined : e.target.value })}
            >
              {Object.entries(RANGES).map(([k, v]) => (
                <option key={k} value={k}>
                  {v}
                </option>
              ))}
            </select>
          </label>
          <label>
            Measure
            <select
              value={measure}
              onChange={(e) => setQuery({ measure: e.target.value === 'cost' ? 'cost' : undefined })}
            >
              <option value="tokens">Tokens</option>
              <option value="cost">Cost (USD)</option>
            </select>
          </label>
          <button type="button" onClick={() => setNonce((n) => n + 1)}>
            Refresh
          </button>
        </form>
      </div>
      <Problem problem={problem} />
      {!data && !problem && <p className="muted">Loading…</p>}
      {t && (
        <>
          <dl className="us-totals" aria-label="Totals in the window">
            <div>
              <dt>Tokens</dt>
              <dd data-total="tokens">{t.totalTokens.toLocaleString()}</dd>
            </div>
            <div>
              <dt>Cost</dt>
              <dd data-total="cost">{usd(t.totalCost)}</dd>
            </div>
            <div>
              <dt>Calls</dt>
              <dd>{t.calls.toLocaleString()}</dd>
            </div>
            <div>
              <dt>Input / output / cached</dt>
              <dd>
                {tokens(t.inputTokens)} / {tokens(t.outputTokens)} / {tokens(t.cachedInputTokens)}
              </dd>
            </div>
          </dl>
          <Section title={`${measure === 'cost' ? 'Cost' : 'Tokens'} over time`}>
            <TimeBars
              points={points}
              format={fmt}
              label={`${measure === 'cost' ? 'Cost' : 'Tokens'} per ${range === '24h' ? 'hour' : 'day'}, ${RANGES[range].toLowerCase()}`}
            />
          </Section>
          <div className="two">
            <Section title="By model">
              <BarList
                label="By model"
                format={fmt}
                bars={Object.entries(t.usageByModel).map(([model, s]) => ({
                  key: model,
                  label: model,
                  value: pick(s),
                  note: s.priced ? undefined : 'no price',
                }))}
              />
            </Section>
            <Section title="By neuron">
              <BarList label="By neuron" format={fmt} bars={facet('neuron')} />
            </Section>
            <Section title="By pathway">
              <BarList label="By pathway" format={fmt} bars={facet('pathway')} />
            </Section>
            <Section title="By receptor">
              <BarList label="By receptor" format={fmt} bars={facet('receptor')} />
            </Section>
          </div>
        </>
      )}
      <Budgets />
    </>
  );
}

/** The workspace's budgets with what each has spent in its current period (admins only). */
function Budgets() {
  const { api, isAdmin } = useAuth();
  const [budgets, setBudgets] = useState<Budget[] | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  useEffect(() => {
    if (!isAdmin) return;
    const abort = new AbortController();
    api
      .get<ApiSchema<'BudgetList'>>('/v1/budgets?limit=200', abort.signal)
      .then((b) => setBudgets(b.budgets))
      .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, isAdmin]);
  const amount = (b: Budget, v: number) => (b.measure === 'usd' ? usd(v) : Math.round(v).toLocaleString());
  return (
    <Section title="Budgets">
      {!isAdmin ? (
        <p className="muted">Budgets are set and read by workspace admins.</p>
      ) : (
        <>
          <Problem problem={problem} />
          {budgets && budgets.length === 0 && <p className="muted">No budgets in this workspace.</p>}
          {budgets && budgets.length > 0 && (
            <div className="table-wrap">
              <table className="budgets">
                <thead>
                  <tr>
                    <th>Budget</th>
                    <th>Caps</th>
                    <th>Period</th>
                    <th>Spent</th>
                    <th>Limit</th>
                    <th>On excess</th>
                  </tr>
                </thead>
                <tbody>
                  {budgets.map((b) => (
                    <tr key={b.id} data-budget-id={b.id}>
                      <td>{b.name ?? `${b.measure} per ${b.period}`}</td>
                      <td>
                        {b.scope}
                        {b.target_id ? ` ${shortId(b.target_id)}` : ''}
                      </td>
                      <td>{b.period === 'total' ? 'all time' : b.period}</td>
                      <td className="us-spent">
                        <meter
                          min={0}
                          max={b.limit}
                          value={Math.min(b.spent, b.limit)}
                          high={b.limit * 0.8}
                          optimum={0}
                          aria-label={`${b.name ?? 'budget'} spent`}
                        />{' '}
                        {amount(b, b.spent)} ({Math.round((b.spent / b.limit) * 100)}%)
                        {b.exceeded && (
                          <>
                            {' '}
                            <Badge value="exceeded" />
                          </>
                        )}
                      </td>
                      <td>{amount(b, b.limit)}</td>
                      <td>{b.policy}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </Section>
  );
}
