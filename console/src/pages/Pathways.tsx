import { useState } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ago, Badge, Pager, Problem, useTick } from '../components/ui';
import { Link, setQuery, useLocation } from '../router';
import { usePoll } from '../use-poll';
import '../pathways.css';

/*
 * The brain's pathways (GET /v1/pathways, X-Brain-Id): a name search and paging in the URL, the
 * head version of each, and "New pathway" (POST /v1/pathways needs only a member's rights: the
 * creator may edit what they create).
 */
const LIMIT = 20;

export default function Pathways() {
  const { api, credential } = useAuth();
  const { query } = useLocation();
  const now = useTick(10_000);
  const search = query.get('search') ?? '';
  const offset = Number(query.get('offset') ?? 0) || 0;
  const [text, setText] = useState(search);
  const { data, problem, loading } = usePoll(
    (signal) =>
      api.get<ApiSchema<'PathwayList'>>(
        `/v1/pathways${qs({ search, limit: LIMIT, offset, sortBy: 'updated_at' })}`,
        signal,
      ),
    [api, search, offset],
    10_000,
  );

  return (
    <>
      <div className="page-head">
        <h1>Pathways</h1>
        {credential.brainId && (
          <Link to="/pathways/new" className="button primary-link">
            New pathway
          </Link>
        )}
      </div>
      <form
        className="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery({ search: text.trim(), offset: undefined });
        }}
      >
        <label>
          Name contains
          <input type="search" value={text} onChange={(e) => setText(e.target.value)} />
        </label>
        <button type="submit">Search</button>
      </form>
      <Problem problem={problem} />
      <div className="table-wrap">
        <table className="pathways">
          <thead>
            <tr>
              <th>Name</th>
              <th>Version</th>
              <th>State</th>
              <th>Nodes</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {data?.pathways.map((p) => {
              const nodes = (p.pathway_graph as { nodes?: unknown[] }).nodes;
              return (
                <tr key={p.id} data-pathway-id={p.id}>
                  <td className="step">
                    <Link to={`/pathways/${p.id}`}>{p.name}</Link>
                    {p.description && <div className="muted small">{p.description}</div>}
                  </td>
                  <td>v{p.latest_version}</td>
                  <td>
                    <Badge value={p.is_active ? 'active' : 'inactive'} />
                  </td>
                  <td>{Array.isArray(nodes) ? nodes.length : '—'}</td>
                  <td title={p.updated_at}>{ago(p.updated_at, now)}</td>
                </tr>
              );
            })}
            {data && data.pathways.length === 0 && (
              <tr>
                <td colSpan={5} className="muted">
                  {search ? 'No pathway matches this name.' : 'No pathways in this brain yet.'}
                </td>
              </tr>
            )}
            {!data && loading && (
              <tr>
                <td colSpan={5} className="muted">
                  Loading…
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {data && (
        <Pager
          offset={offset}
          limit={LIMIT}
          total={data.total}
          count={data.pathways.length}
          onPage={(o) => setQuery({ offset: o ? String(o) : undefined })}
        />
      )}
    </>
  );
}
