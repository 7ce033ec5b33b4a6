import { useState } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { Badge, Problem, shortId } from '../components/ui';
import { delta, ENDED, ms, pct, score, targetLabel, textOf, usd, type ExperimentComparison } from '../evaluations';
import { Link, setQuery, useLocation } from '../router';
import { usePoll } from '../use-poll';
import { useTargets } from './Runs';
import '../evaluations.css';

/*
 * Two to five experiments side by side (GET /v1/experiments/compare?ids=a,b; the first is the
 * baseline), in the URL (`?ids=`) so a comparison is a link. The head row per experiment: target,
 * pass rate, mean scores, latency and cost. Then item by item: the input and expected value, each
 * experiment's output, pass and scores, with what changed against the baseline marked (an output
 * that differs, a pass that flipped, each score's delta). "Only changes" hides the items where
 * nothing changed. Which experiments: any ended ones of the dataset, picked here or on the
 * dataset's page.
 */
type Row = ExperimentComparison['items'][number];

export default function ExperimentCompare() {
  const { api } = useAuth();
  const { query } = useLocation();
  const ids = (query.get('ids') ?? '').split(',').filter(Boolean);
  const onlyChanged = query.get('changed') === '1';
  const targets = useTargets();
  const names = Object.fromEntries([...targets.neuron, ...targets.pathway].map((t) => [t.id, t.name]));
  const { data, problem, loading } = usePoll(
    (signal) =>
      ids.length >= 2
        ? api.get<ApiSchema<'ExperimentComparison'>>(`/v1/experiments/compare${qs({ ids: ids.join(',') })}`, signal)
        : Promise.resolve(null),
    [api, ids.join(',')],
    0,
    false,
  );

  const changed = (r: Row) =>
    r.changed.output || r.changed.passed || r.changed.score_deltas.some((d) => Object.values(d).some((x) => x !== 0));
  const rows = data ? (onlyChanged ? data.items.filter(changed) : data.items) : [];
  const evaluators = data
    ? [...new Set(data.experiments.flatMap((e) => Object.keys(e.aggregates?.mean_scores ?? {})))]
    : [];

  return (
    <>
      <div className="page-head">
        <h1>Compare experiments</h1>
        {data && (
          <Link to={`/datasets/${data.experiments[0].dataset_id}`} className="button">
            Dataset
          </Link>
        )}
      </div>
      <Picker ids={ids} datasetId={data?.experiments[0]?.dataset_id} />
      {ids.length < 2 && (
        <p className="muted">Pick two to five ended experiments of one dataset (on the dataset’s page, or above).</p>
      )}
      <Problem problem={problem} />
      {loading && ids.length >= 2 && !data && <p className="muted">Loading…</p>}
      {data && (
        <>
          <div className="table-wrap">
            <table className="compare-head" aria-label="Experiments compared">
              <thead>
                <tr>
                  <th></th>
                  {data.experiments.map((e, i) => (
                    <th key={e.id} scope="col">
                      <Link to={`/experiments/${e.id}`}>{e.name ?? shortId(e.id)}</Link>
                      {i === 0 && <span className="muted small"> (baseline)</span>}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                <tr>
                  <th scope="row">Target</th>
                  {data.experiments.map((e) => (
                    <td key={e.id}>{targetLabel(e.target, names)}</td>
                  ))}
                </tr>
                <tr>
                  <th scope="row">Dataset</th>
                  {data.experiments.map((e) => (
                    <td key={e.id}>v{e.dataset_version}</td>
                  ))}
                </tr>
                <tr>
                  <th scope="row">Status</th>
                  {data.experiments.map((e) => (
                    <td key={e.id}>
                      <Badge value={e.status} />
                    </td>
                  ))}
                </tr>
                <tr>
                  <th scope="row">Pass rate</th>
                  {data.experiments.map((e) => (
                    <td key={e.id} data-figure="pass-rate">
                      {pct(e.aggregates?.pass_rate)}
                    </td>
                  ))}
                </tr>
                {evaluators.map((name) => (
                  <tr key={name}>
                    <th scope="row">mean {name}</th>
                    {data.experiments.map((e) => (
                      <td key={e.id}>{score(e.aggregates?.mean_scores[name])}</td>
                    ))}
                  </tr>
                ))}
                <tr>
                  <th scope="row">Latency p50 · p95</th>
                  {data.experiments.map((e) => (
                    <td key={e.id}>
                      {ms(e.aggregates?.latency_p50_ms)} · {ms(e.aggregates?.latency_p95_ms)}
                    </td>
                  ))}
                </tr>
                <tr>
                  <th scope="row">Total cost</th>
                  {data.experiments.map((e) => (
                    <td key={e.id}>{usd(e.aggregates?.total_cost_usd)}</td>
                  ))}
                </tr>
              </tbody>
            </table>
          </div>
          <div className="page-head">
            <h2>
              Items{' '}
              <span className="muted small" data-field="changed-count">
                {data.items.filter(changed).length} of {data.items.length} changed
              </span>
            </h2>
            <label className="inline">
              <input
                type="checkbox"
                checked={onlyChanged}
                onChange={(e) => setQuery({ changed: e.target.checked ? '1' : undefined })}
              />{' '}
              Only changes
            </label>
          </div>
          <div className="table-wrap">
            <table className="compare-items cards" aria-label="Items compared">
              <thead>
                <tr>
                  <th>Input</th>
                  <th>Expected</th>
                  {data.experiments.map((e, i) => (
                    <th key={e.id}>
                      {e.name ?? shortId(e.id)}
                      {i === 0 ? ' (baseline)' : ''}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.item_id} data-item-id={r.item_id} data-changed={changed(r) ? 'yes' : 'no'}>
                    <td data-label="Input">
                      <div className="eval-cell">{textOf(r.input)}</div>
                    </td>
                    <td data-label="Expected">
                      <div className="eval-cell">{textOf(r.expected)}</div>
                    </td>
                    {r.runs.map((run, i) => {
                      const e = data.experiments[i];
                      const label = e.name ?? shortId(e.id);
                      if (!run)
                        return (
                          <td key={e.id} data-label={label} className="muted">
                            not in this experiment
                          </td>
                        );
                      const base = r.runs[0];
                      const outputChanged =
                        i > 0 && base !== null && JSON.stringify(run.output) !== JSON.stringify(base.output);
                      const passChanged = i > 0 && base !== null && run.passed !== base.passed;
                      const deltas = i > 0 ? (r.changed.score_deltas[i - 1] ?? {}) : {};
                      return (
                        <td key={e.id} data-label={label} data-run={i}>
                          <div className="compare-run">
                            <div
                              className={`eval-cell${outputChanged ? ' changed' : ''}`}
                              data-output-changed={outputChanged ? 'yes' : 'no'}
                            >
                              {textOf(run.output)}
                            </div>
                            <div className={`small${passChanged ? ' changed' : ''}`}>
                              <span className={run.passed ? 'pass' : 'fail'}>{run.passed ? 'pass' : 'fail'}</span>
                              {run.status === 'failed' && <span className="error"> (run failed)</span>}
                            </div>
                            <ul className="eval-scores">
                              {Object.entries(run.scores).map(([name, s]) => {
                                const d = deltas[name];
                                return (
                                  <li key={name} data-evaluator={name}>
                                    {name} {score(s)}
                                    {d !== undefined && d !== 0 && (
                                      <span className={d > 0 ? 'delta-up' : 'delta-down'} data-delta={d}>
                                        {' '}
                                        ({delta(d)})
                                      </span>
                                    )}
                                  </li>
                                );
                              })}
                            </ul>
                            <div className="muted small">
                              {ms(run.latency_ms)} · {usd(run.cost_usd)}
                            </div>
                          </div>
                        </td>
                      );
                    })}
                  </tr>
                ))}
                {rows.length === 0 && (
                  <tr>
                    <td colSpan={2 + data.experiments.length} className="muted">
                      {onlyChanged ? 'Nothing changed between these experiments.' : 'No item in common.'}
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </div>
        </>
      )}
    </>
  );
}

/** The experiments compared, as checkboxes over the ended experiments of the dataset (the URL's `ids` in order). */
function Picker({ ids, datasetId }: { ids: string[]; datasetId: string | undefined }) {
  const { api } = useAuth();
  const [open, setOpen] = useState(false);
  const list = usePoll(
    (signal) =>
      open
        ? api.get<ApiSchema<'ExperimentList'>>(`/v1/experiments${qs({ dataset_id: datasetId, limit: 50 })}`, signal)
        : Promise.resolve(null),
    [api, datasetId, open],
    0,
    false,
  );
  const toggle = (id: string) => {
    const next = ids.includes(id) ? ids.filter((x) => x !== id) : [...ids, id].slice(0, 5);
    setQuery({ ids: next.join(',') });
  };
  return (
    <details className="card" onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Experiments compared ({ids.length})</summary>
      <Problem problem={list.problem} />
      <ul className="eval-scores">
        {(list.data?.experiments ?? [])
          .filter((x) => ENDED.includes(x.status))
          .map((x) => (
            <li key={x.id}>
              <label className="inline">
                <input type="checkbox" checked={ids.includes(x.id)} onChange={() => toggle(x.id)} />{' '}
                {x.name ?? shortId(x.id)} · {x.target.kind} v{x.target.version} · dataset v{x.dataset_version} ·{' '}
                {pct(x.aggregates?.pass_rate)}
              </label>
            </li>
          ))}
      </ul>
    </details>
  );
}
