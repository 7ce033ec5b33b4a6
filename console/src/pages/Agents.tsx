import { useState } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ago, Badge, Pager, Problem, useTick } from '../components/ui';
import { Link, setQuery, useLocation } from '../router';
import { usePoll } from '../use-poll';
import '../pathways.css';
import '../agents.css';

/*
 * The brain's agents: its neurons (GET /v1/neurons, X-Brain-Id: the brain's own and the workspace and
 * core neurons visible there), a name search and paging in the URL, and "New agent" (creating a
 * brain-scoped neuron needs only a member's rights).
 */
const LIMIT = 20;

export default function Agents() {
  const { api, credential } = useAuth();
  const { query } = useLocation();
  const now = useTick(10_000);
  const search = query.get('search') ?? '';
  const offset = Number(query.get('offset') ?? 0) || 0;
  const [text, setText] = useState(search);
  const { data, problem, loading } = usePoll(
    (signal) =>
      credential.brainId
        ? api.get<ApiSchema<'NeuronList'>>(
            `/v1/neurons${qs({ search, limit: LIMIT, offset, sortBy: 'updated_at' })}`,
            signal,
          )
        : Promise.resolve(null),
    [api, search, offset, credential.brainId],
    10_000,
  );

  return (
    <>
      <div className="page-head">
        <h1>Agents</h1>
        {credential.brainId && (
          <Link to="/agents/new" className="button primary-link">
            New agent
          </Link>
        )}
      </div>
      {!credential.brainId && <p className="muted">This workspace has no brain yet: agents live in a brain.</p>}
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
        <table className="agents">
          <thead>
            <tr>
              <th>Name</th>
              <th>Model</th>
              <th>Version</th>
              <th>State</th>
              <th>Scope</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {data?.neurons.map((n) => (
              <tr key={n.id} data-neuron-id={n.id}>
                <td className="step">
                  <Link to={`/agents/${n.id}`}>{n.name}</Link>
                  {n.description && <div className="muted small">{n.description}</div>}
                </td>
                <td>{n.neuron_config.model ?? <span className="muted">default</span>}</td>
                <td>v{n.latest_version}</td>
                <td>
                  <Badge value={n.is_active ? 'active' : 'inactive'} />
                </td>
                <td>{n.scope}</td>
                <td title={n.updated_at}>{ago(n.updated_at, now)}</td>
              </tr>
            ))}
            {data && data.neurons.length === 0 && (
              <tr>
                <td colSpan={6} className="muted">
                  {search ? (
                    'No agent matches this name.'
                  ) : (
                    <>
                      No agents in this brain yet. <Link to="/agents/new">Create the first one</Link>: a name, a model
                      and its instructions are enough to talk to it.
                    </>
                  )}
                </td>
              </tr>
            )}
            {!data && loading && (
              <tr>
                <td colSpan={6} className="muted">
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
          count={data.neurons.length}
          onPage={(o) => setQuery({ offset: o ? String(o) : undefined })}
        />
      )}
    </>
  );
}
