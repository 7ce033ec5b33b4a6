import { useEffect, useState } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ListTable } from '../components/ListTable';
import { ago, Badge, Problem, shortId, useTick } from '../components/ui';
import { ENDED, pct, targetLabel, usd, type Experiment } from '../evaluations';
import { Link, setQuery, useLocation } from '../router';
import { usePoll } from '../use-poll';
import { useTargets } from './Runs';
import '../evaluations.css';

/*
 * The experiments of the brain (GET /v1/experiments with X-Brain-Id; the workspace's without one),
 * newest first: the dataset filter (`?dataset_id=`) and paging (`?offset=`) in the URL, progress
 * while one runs (polled), the pass rate and cost once it ends. Experiments start from a dataset's
 * page, where the dataset and its versions are at hand.
 */
const LIMIT = 20;

export default function Experiments() {
  const { api, credential } = useAuth();
  const { query } = useLocation();
  const offset = Number(query.get('offset') ?? 0) || 0;
  const datasetId = query.get('dataset_id') ?? '';
  const now = useTick(5_000);
  const targets = useTargets();
  const names = Object.fromEntries([...targets.neuron, ...targets.pathway].map((t) => [t.id, t.name]));
  const datasets = usePoll(
    // The dataset list needs X-Brain-Id: without a brain the filter offers only "all".
    (signal) =>
      credential.brainId ? api.get<ApiSchema<'DatasetList'>>('/v1/datasets?limit=200', signal) : Promise.resolve(null),
    [api, credential.brainId],
    60_000,
  );
  const dsName = Object.fromEntries((datasets.data?.datasets ?? []).map((d) => [d.id, d.name]));
  // Polled every 3 s while an experiment of the page runs, else every 30 s.
  const [running, setRunning] = useState(true);
  const { data, problem, loading } = usePoll(
    (signal) =>
      api.get<ApiSchema<'ExperimentList'>>(
        `/v1/experiments${qs({ dataset_id: datasetId || undefined, limit: LIMIT, offset })}`,
        signal,
      ),
    [api, datasetId, offset],
    running ? 3_000 : 30_000,
  );
  useEffect(() => {
    if (data) setRunning(data.experiments.some((e) => !ENDED.includes(e.status)));
  }, [data]);
  const none = data && data.experiments.length === 0 && offset === 0 && !datasetId;

  return (
    <>
      <div className="page-head">
        <h1>Experiments</h1>
        <Link to="/datasets" className="button">
          Datasets
        </Link>
      </div>
      <form className="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Dataset
          <select value={datasetId} onChange={(e) => setQuery({ dataset_id: e.target.value, offset: undefined })}>
            <option value="">all</option>
            {(datasets.data?.datasets ?? []).map((d) => (
              <option key={d.id} value={d.id}>
                {d.name}
              </option>
            ))}
          </select>
        </label>
      </form>
      <Problem problem={problem} />
      {none ? (
        <section className="card empty-state" data-empty="experiments">
          <h2>No experiments yet</h2>
          <p>
            An experiment runs every item of a dataset through a neuron or pathway version and scores it. Open a{' '}
            <Link to="/datasets">dataset</Link> and choose “Run experiment”.
          </p>
        </section>
      ) : (
        <ListTable<Experiment>
          className="experiments cards"
          label="Experiments"
          rows={data?.experiments}
          loading={loading}
          rowKey={(e) => e.id}
          rowProps={(e) => ({ 'data-experiment-id': e.id })}
          page={data ? { offset, limit: LIMIT, total: data.total } : undefined}
          empty="No experiment matches."
          columns={[
            {
              title: 'Experiment',
              className: 'step',
              cell: (e) => <Link to={`/experiments/${e.id}`}>{e.name ?? shortId(e.id)}</Link>,
            },
            {
              title: 'Dataset',
              cell: (e) => (
                <Link to={`/datasets/${e.dataset_id}`}>
                  {dsName[e.dataset_id] ?? shortId(e.dataset_id)} v{e.dataset_version}
                </Link>
              ),
            },
            { title: 'Target', cell: (e) => targetLabel(e.target, names) },
            {
              title: 'Status',
              cell: (e) => (
                <>
                  <Badge value={e.status} />
                  {!ENDED.includes(e.status) && <span className="muted small"> {e.progress}%</span>}
                </>
              ),
            },
            { title: 'Pass rate', cell: (e) => pct(e.aggregates?.pass_rate) },
            { title: 'Cost', cell: (e) => usd(e.aggregates?.total_cost_usd) },
            { title: 'Started', cell: (e) => <span title={e.created_at}>{ago(e.created_at, now)}</span> },
          ]}
        />
      )}
    </>
  );
}
