import { useState, type FormEvent } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ListTable, useAction } from '../components/ListTable';
import { ago, Problem, useTick } from '../components/ui';
import type { Dataset } from '../evaluations';
import { Link, navigate, useLocation } from '../router';
import { usePoll } from '../use-poll';
import '../evaluations.css';

/*
 * The brain's datasets (GET /v1/datasets, X-Brain-Id; docs/evaluations.md): paging in the URL
 * (`?offset=`), each dataset's version and item count, and "New dataset". Any member of the
 * workspace may create one (the API has no role on evaluations), so the form is there for every
 * signed-in caller who has chosen a brain: the API needs X-Brain-Id for both the list and the create.
 */
const LIMIT = 20;

export default function Datasets() {
  const { api, credential } = useAuth();
  const { query } = useLocation();
  const offset = Number(query.get('offset') ?? 0) || 0;
  const [creating, setCreating] = useState(false);
  const now = useTick(10_000);
  const brain = credential.brainId;
  const { data, problem, loading } = usePoll(
    (signal) =>
      brain
        ? api.get<ApiSchema<'DatasetList'>>(`/v1/datasets${qs({ limit: LIMIT, offset })}`, signal)
        : Promise.resolve(null),
    [api, brain, offset],
    10_000,
  );

  if (!brain)
    return (
      <>
        <h1>Datasets</h1>
        <p className="muted">Datasets belong to a brain: choose one in the header first.</p>
      </>
    );

  const none = data && data.datasets.length === 0 && offset === 0;
  return (
    <>
      <div className="page-head">
        <h1>Datasets</h1>
        <div className="actions">
          <Link to="/experiments" className="button">
            Experiments
          </Link>
          {!creating && (
            <button type="button" className="primary" onClick={() => setCreating(true)}>
              New dataset
            </button>
          )}
        </div>
      </div>
      {creating && <NewDataset onCancel={() => setCreating(false)} />}
      <Problem problem={problem} />
      {none && !creating ? (
        <section className="card empty-state" data-empty="datasets">
          <h2>No datasets in this brain yet</h2>
          <p>
            A dataset is a list of inputs with the answers you expect. Create one, then add items by hand, paste JSONL
            or CSV, or add a finished run from its page. Run an experiment on it to score a neuron or pathway version.
          </p>
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            Create the first dataset
          </button>
        </section>
      ) : (
        <ListTable<Dataset>
          className="datasets cards"
          label="Datasets"
          rows={data?.datasets}
          loading={loading}
          rowKey={(d) => d.id}
          rowProps={(d) => ({ 'data-dataset-id': d.id })}
          page={data ? { offset, limit: LIMIT, total: data.total } : undefined}
          empty="No datasets on this page."
          columns={[
            {
              title: 'Name',
              className: 'step',
              cell: (d) => (
                <>
                  <Link to={`/datasets/${d.id}`}>{d.name}</Link>
                  {d.description && <div className="muted small">{d.description}</div>}
                </>
              ),
            },
            { title: 'Version', cell: (d) => `v${d.version}` },
            { title: 'Items', cell: (d) => d.item_count },
            { title: 'Updated', cell: (d) => <span title={d.updated_at}>{ago(d.updated_at, now)}</span> },
          ]}
        />
      )}
    </>
  );
}

function NewDataset({ onCancel }: { onCancel(): void }) {
  const { api } = useAuth();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const { problem, busy, run } = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const d = await run(() =>
      api.post<ApiSchema<'Dataset'>>('/v1/datasets', {
        name: name.trim(),
        ...(description.trim() ? { description: description.trim() } : {}),
      }),
    );
    if (d) navigate(`/datasets/${d.id}`);
  };
  return (
    <form className="card eval-form" aria-label="New dataset" onSubmit={(e) => void submit(e)}>
      <label>
        Dataset name
        <input required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <label>
        Description
        <input maxLength={2000} value={description} onChange={(e) => setDescription(e.target.value)} />
      </label>
      <Problem problem={problem} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={busy || !name.trim()}>
          Create dataset
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
