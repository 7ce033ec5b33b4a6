import { useState } from 'react';
import type { ApiSchema } from '../api';
import { useAuth } from '../auth';
import { Link } from '../router';
import { usePoll } from '../use-poll';
import { useAction } from './ListTable';
import { Problem } from './ui';
import '../evaluations.css';

/*
 * "Add to dataset" on a run's page (POST /v1/datasets/:id/items/from-job; docs/evaluations.md):
 * the run's input becomes an item with its output as the expected value. Shown for a completed run
 * only (the API answers 409 for any other), and with a brain chosen (datasets are listed per brain).
 * The brain's datasets load when the control is opened, not with every run page.
 */
export function AddToDataset({ jobId }: { jobId: string }) {
  const { api } = useAuth();
  const [open, setOpen] = useState(false);
  const [datasetId, setDatasetId] = useState('');
  const [added, setAdded] = useState<{ id: string; name: string; version: number } | null>(null);
  const { problem, busy, run } = useAction();
  const list = usePoll(
    (signal) => (open ? api.get<ApiSchema<'DatasetList'>>('/v1/datasets?limit=200', signal) : Promise.resolve(null)),
    [api, open],
    0,
    false,
  );
  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Add to dataset
      </button>
    );
  const datasets = list.data?.datasets ?? [];
  const add = async () => {
    const r = await run(() =>
      api.post<ApiSchema<'DatasetItemsAdded'>>(`/v1/datasets/${datasetId}/items/from-job`, { job_id: jobId }),
    );
    if (r) setAdded({ id: r.dataset.id, name: r.dataset.name, version: r.dataset.version });
  };
  return (
    <form
      className="add-to-dataset buttons"
      aria-label="Add to dataset"
      onSubmit={(e) => {
        e.preventDefault();
        void add();
      }}
    >
      {list.data && datasets.length === 0 ? (
        <span className="muted small">
          No dataset in this brain: <Link to="/datasets">create one</Link> first.
        </span>
      ) : (
        <select aria-label="Dataset" required value={datasetId} onChange={(e) => setDatasetId(e.target.value)}>
          <option value="">choose a dataset…</option>
          {datasets.map((d) => (
            <option key={d.id} value={d.id}>
              {d.name} (v{d.version})
            </option>
          ))}
        </select>
      )}
      <button type="submit" className="primary" disabled={busy || !datasetId}>
        Add
      </button>
      <button type="button" onClick={() => setOpen(false)}>
        Close
      </button>
      {added && (
        <span className="ok small" role="status">
          Added to <Link to={`/datasets/${added.id}`}>{added.name}</Link> as v{added.version}.
        </span>
      )}
      <Problem problem={problem ?? list.problem} />
    </form>
  );
}
