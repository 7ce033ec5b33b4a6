import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ListTable, SearchForm, useListQuery } from '../components/ListTable';
import { ago, Badge, Problem, useTick } from '../components/ui';
import { Link } from '../router';
import { usePoll } from '../use-poll';
import '../pathways.css';

/*
 * The brain's pathways (GET /v1/pathways, X-Brain-Id): a name search and paging in the URL, the
 * head version of each, and "New pathway" (POST /v1/pathways needs only a member's rights: the
 * creator may edit what they create).
 */
const LIMIT = 20;
type Pathway = ApiSchema<'PathwayList'>['pathways'][number];

export default function Pathways() {
  const { api, credential } = useAuth();
  const { search, offset } = useListQuery();
  const now = useTick(10_000);
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
      <SearchForm />
      <Problem problem={problem} />
      <ListTable<Pathway>
        className="pathways"
        rows={data?.pathways}
        loading={loading}
        rowKey={(p) => p.id}
        rowProps={(p) => ({ 'data-pathway-id': p.id })}
        page={data ? { offset, limit: LIMIT, total: data.total } : undefined}
        empty={search ? 'No pathway matches this name.' : 'No pathways in this brain yet.'}
        columns={[
          {
            title: 'Name',
            className: 'step',
            cell: (p) => (
              <>
                <Link to={`/pathways/${p.id}`}>{p.name}</Link>
                {p.description && <div className="muted small">{p.description}</div>}
              </>
            ),
          },
          { title: 'Version', cell: (p) => `v${p.latest_version}` },
          { title: 'State', cell: (p) => <Badge value={p.is_active ? 'active' : 'inactive'} /> },
          {
            title: 'Nodes',
            cell: (p) => {
              const nodes = (p.pathway_graph as { nodes?: unknown[] }).nodes;
              return Array.isArray(nodes) ? nodes.length : '—';
            },
          },
          { title: 'Updated', cell: (p) => <span title={p.updated_at}>{ago(p.updated_at, now)}</span> },
        ]}
      />
    </>
  );
}
