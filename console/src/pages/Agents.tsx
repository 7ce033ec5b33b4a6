import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ListTable, SearchForm, useListQuery } from '../components/ListTable';
import { ago, Badge, Problem, useTick } from '../components/ui';
import { Link } from '../router';
import { usePoll } from '../use-poll';
import '../pathways.css';
import '../agents.css';

/*
 * The brain's agents: its neurons (GET /v1/neurons, X-Brain-Id: the brain's own and the workspace and
 * core neurons visible there), a name search and paging in the URL, and "New agent" (creating a
 * brain-scoped neuron needs only a member's rights).
 */
const LIMIT = 20;
type Neuron = ApiSchema<'NeuronList'>['neurons'][number];

export default function Agents() {
  const { api, credential } = useAuth();
  const { search, offset } = useListQuery();
  const now = useTick(10_000);
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
      <SearchForm />
      <Problem problem={problem} />
      <ListTable<Neuron>
        className="agents"
        rows={data?.neurons}
        loading={loading}
        rowKey={(n) => n.id}
        rowProps={(n) => ({ 'data-neuron-id': n.id })}
        page={data ? { offset, limit: LIMIT, total: data.total } : undefined}
        empty={
          search ? (
            'No agent matches this name.'
          ) : (
            <>
              No agents in this brain yet. <Link to="/agents/new">Create the first one</Link>: a name, a model and its
              instructions are enough to talk to it.
            </>
          )
        }
        columns={[
          {
            title: 'Name',
            className: 'step',
            cell: (n) => (
              <>
                <Link to={`/agents/${n.id}`}>{n.name}</Link>
                {n.description && <div className="muted small">{n.description}</div>}
              </>
            ),
          },
          { title: 'Model', cell: (n) => n.neuron_config.model ?? <span className="muted">default</span> },
          { title: 'Version', cell: (n) => `v${n.latest_version}` },
          { title: 'State', cell: (n) => <Badge value={n.is_active ? 'active' : 'inactive'} /> },
          { title: 'Scope', cell: (n) => n.scope },
          { title: 'Updated', cell: (n) => <span title={n.updated_at}>{ago(n.updated_at, now)}</span> },
        ]}
      />
    </>
  );
}
