import { useState } from 'react';
import { qs, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { ListTable } from '../components/ListTable';
import { ago, Problem, shortId, useTick } from '../components/ui';
import { Link, setQuery, useLocation } from '../router';
import { usePoll } from '../use-poll';
import { useTargets } from './Runs';

/*
 * Traces (GET /v1/traces) with the API's filters: search (a trace id or title substring), type,
 * neuron (within the chosen brain), receptor, creation window, sort and order; paged. Refreshed every 5 s.
 */
const LIMIT = 20;

export default function Traces() {
  const { api } = useAuth();
  const { query } = useLocation();
  const now = useTick(5000);
  const f = {
    search: query.get('search') ?? '',
    trace_type: query.get('trace_type') ?? 'thread',
    sort: query.get('sort') ?? 'updated_at',
    order: query.get('order') ?? 'desc',
    created_after: query.get('created_after') ?? '',
    created_before: query.get('created_before') ?? '',
    neuron_id: query.get('neuron_id') ?? '',
    receptor_id: query.get('receptor_id') ?? '',
  };
  const targets = useTargets();
  const offset = Number(query.get('offset') ?? 0) || 0;
  const [search, setSearch] = useState(f.search);
  const { data, problem } = usePoll(
    (signal) =>
      api.get<ResponseOf<'get', '/v1/traces'>>(
        `/v1/traces${qs({
          ...f,
          created_after: f.created_after ? new Date(f.created_after).toISOString() : undefined,
          created_before: f.created_before ? new Date(f.created_before).toISOString() : undefined,
          limit: LIMIT,
          offset,
        })}`,
        signal,
      ),
    [api, JSON.stringify(f), offset],
    5000,
  );
  const set = (k: string, v: string) => setQuery({ [k]: v, offset: undefined });

  return (
    <>
      <div className="page-head">
        <h1>Traces</h1>
      </div>
      <form
        className="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          set('search', search.trim());
        }}
      >
        <label>
          Search
          <input
            type="search"
            value={search}
            placeholder="title or trace id"
            onChange={(e) => setSearch(e.target.value)}
          />
        </label>
        <button type="submit">Search</button>
        <label>
          Type
          <select value={f.trace_type} onChange={(e) => set('trace_type', e.target.value)}>
            <option value="thread">threads</option>
            <option value="system">system</option>
            <option value="all">all</option>
          </select>
        </label>
        <label>
          Sort
          <select value={f.sort} onChange={(e) => set('sort', e.target.value)}>
            <option value="updated_at">last activity</option>
            <option value="created_at">created</option>
            <option value="message_count">messages</option>
          </select>
        </label>
        <label>
          Order
          <select value={f.order} onChange={(e) => set('order', e.target.value)}>
            <option value="desc">descending</option>
            <option value="asc">ascending</option>
          </select>
        </label>
        <label>
          Neuron
          <select value={f.neuron_id} onChange={(e) => set('neuron_id', e.target.value)}>
            <option value="">any</option>
            {targets.neuron.map((n) => (
              <option key={n.id} value={n.id}>
                {n.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Receptor
          <select value={f.receptor_id} onChange={(e) => set('receptor_id', e.target.value)}>
            <option value="">any</option>
            {targets.receptor.map((r) => (
              <option key={r.id} value={r.id}>
                {r.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          After
          <input type="date" value={f.created_after} onChange={(e) => set('created_after', e.target.value)} />
        </label>
        <label>
          Before
          <input type="date" value={f.created_before} onChange={(e) => set('created_before', e.target.value)} />
        </label>
      </form>
      <Problem problem={problem} />
      <ListTable
        className="traces cards"
        label="Traces"
        rows={data?.traces}
        rowKey={(t) => t.id}
        rowProps={(t) => ({ 'data-trace-id': t.trace_id })}
        loading={!problem}
        empty="No traces match."
        page={data ? { offset, limit: LIMIT, total: data.total } : undefined}
        columns={[
          {
            title: 'Title',
            cell: (t) => (
              <>
                <Link to={`/traces/${t.trace_id}`}>{t.title || `Trace ${shortId(t.trace_id)}`}</Link>
                {t.trace_type === 'system' && <span className="muted"> (system)</span>}
              </>
            ),
          },
          { title: 'Messages', cell: (t) => t.message_count },
          {
            title: 'Cost',
            cell: (t) => `$${t.cost_summary.total_cost_usd.toFixed(4)} · ${t.cost_summary.total_tokens} tokens`,
          },
          { title: 'Last activity', cell: (t) => <span title={t.updated_at}>{ago(t.updated_at, now)}</span> },
        ]}
      />
    </>
  );
}
