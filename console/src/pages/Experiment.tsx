import { useEffect, useState } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ListTable, useAction } from '../components/ListTable';
import { ago, Badge, duration, Problem, Section, shortId, useTick } from '../components/ui';
import { ENDED, ms, pct, score, targetLabel, textOf, usd, type Experiment, type ExperimentItem } from '../evaluations';
import { Link, navigate, useLocation } from '../router';
import { usePoll } from '../use-poll';
import { useTargets } from './Runs';
import '../evaluations.css';

/*
 * An experiment (docs/evaluations.md): polled while it runs (progress, the step, the aggregates so
 * far, the items as they are scored), the final aggregates once it ends (mean score per
 * evaluator, pass rate, p50 and p95 latency, cost and tokens), the per-item table (output, each
 * score with its reason, latency, tokens, cost, the run), cancel while it has not ended (the API
 * answers 409 after), delete once it has ended (its per-item results go; its runs' jobs stay), and
 * "compare with" another ended experiment of the same dataset.
 */
const LIMIT = 100;

export default function ExperimentPage({ params }: { params: Record<string, string> }) {
  const id = params.id;
  const { api } = useAuth();
  const { query } = useLocation();
  const offset = Number(query.get('offset') ?? 0) || 0;
  const now = useTick(1000);
  const targets = useTargets();
  const names = Object.fromEntries([...targets.neuron, ...targets.pathway].map((t) => [t.id, t.name]));
  const [live, setLive] = useState(true);
  const exp = usePoll(
    (signal) => api.get<ApiSchema<'Experiment'>>(`/v1/experiments/${id}`, signal),
    [api, id],
    1500,
    live,
  );
  const e = exp.data;
  const ended = e ? ENDED.includes(e.status) : false;
  const items = usePoll(
    (signal) =>
      api.get<ApiSchema<'ExperimentItemList'>>(`/v1/experiments/${id}/items${qs({ limit: LIMIT, offset })}`, signal),
    // One last load once it has ended: the final rows.
    [api, id, offset, ended],
    1500,
    live,
  );
  useEffect(() => {
    if (ended) setLive(false);
  }, [ended]);
  const cancel = useAction();
  const del = useAction();
  // The dataset's name, once (a deleted dataset leaves its id: experiments outlive it).
  const datasetId = e?.dataset_id;
  const dataset = usePoll(
    (signal) =>
      datasetId ? api.get<ApiSchema<'Dataset'>>(`/v1/datasets/${datasetId}`, signal) : Promise.resolve(null),
    [api, datasetId],
    0,
    false,
  );

  if (!e && exp.problem) return <Problem problem={exp.problem} />;
  if (!e) return <p className="muted">Loading…</p>;
  const a = e.aggregates;

  return (
    <>
      <div className="page-head">
        <h1>
          Experiment {e.name ?? <code title={e.id}>{shortId(e.id)}</code>}{' '}
          <span data-field="experiment-status">
            <Badge value={e.status} />
          </span>
        </h1>
        <div className="actions">
          {!ended && (
            <button
              type="button"
              className="danger"
              disabled={cancel.busy}
              onClick={() =>
                void cancel
                  .run(() => api.post<ApiSchema<'Experiment'>>(`/v1/experiments/${id}/cancel`))
                  .then((r) => r && exp.setData(r))
              }
            >
              {cancel.busy ? 'Cancelling…' : 'Cancel experiment'}
            </button>
          )}
          {ended && <CompareWith experiment={e} />}
          {ended && (
            <button
              type="button"
              className="danger"
              disabled={del.busy}
              onClick={() => {
                if (!window.confirm('Delete this experiment and its per-item results? Its runs stay.')) return;
                void del
                  .run(() => api.raw('DELETE', `/v1/experiments/${id}`))
                  .then((ok) => ok !== undefined && navigate(`/experiments${qs({ dataset_id: e.dataset_id })}`));
              }}
            >
              {del.busy ? 'Deleting…' : 'Delete experiment'}
            </button>
          )}
        </div>
      </div>
      <Problem problem={cancel.problem ?? del.problem ?? exp.problem} />
      <dl className="facts">
        <dt>Dataset</dt>
        <dd>
          <Link to={`/datasets/${e.dataset_id}`}>{dataset.data?.name ?? shortId(e.dataset_id)}</Link> v
          {e.dataset_version}
        </dd>
        <dt>Target</dt>
        <dd>{targetLabel(e.target, names)}</dd>
        <dt>Evaluators</dt>
        <dd>
          {e.evaluators.map((ev) => (
            <div key={String(ev.name)} className="small">
              <strong>{String(ev.name)}</strong> <span className="muted">{optionsOf(ev)}</span>
            </div>
          ))}
        </dd>
        <dt>Concurrency</dt>
        <dd>{e.concurrency}</dd>
        <dt>Progress</dt>
        <dd className="eval-progress">
          <progress max={100} value={e.progress} aria-label="Progress" />{' '}
          <span data-field="items-done">
            {e.items_done} of {e.items_total}
          </span>{' '}
          {!ended && e.current_step && <span className="muted small">{e.current_step}</span>}
        </dd>
        <dt>Duration</dt>
        <dd>{duration(e.created_at, e.finished_at, now)}</dd>
        <dt>Started</dt>
        <dd title={e.created_at}>{ago(e.created_at, now)}</dd>
        {e.failed_reason && (
          <>
            <dt>Failed</dt>
            <dd className="error">{e.failed_reason}</dd>
          </>
        )}
      </dl>
      <Section title={ended ? 'Results' : 'Results so far'}>
        {a ? (
          <dl className="eval-figures" aria-label="Aggregates">
            {Object.entries(a.mean_scores).map(([name, v]) => (
              <div key={name} data-figure={`mean:${name}`}>
                <dt>mean {name}</dt>
                <dd>{score(v)}</dd>
              </div>
            ))}
            <div data-figure="pass-rate">
              <dt>pass rate</dt>
              <dd>{pct(a.pass_rate)}</dd>
            </div>
            <div data-figure="p50">
              <dt>latency p50</dt>
              <dd>{ms(a.latency_p50_ms)}</dd>
            </div>
            <div data-figure="p95">
              <dt>latency p95</dt>
              <dd>{ms(a.latency_p95_ms)}</dd>
            </div>
            <div data-figure="total-cost">
              <dt>total cost</dt>
              <dd title={`target ${usd(a.target_cost_usd)} · evaluators ${usd(a.evaluator_cost_usd)}`}>
                {usd(a.total_cost_usd)}
              </dd>
            </div>
            <div data-figure="tokens">
              <dt>tokens</dt>
              <dd>{a.total_tokens}</dd>
            </div>
            <div data-figure="scored">
              <dt>scored · failed</dt>
              <dd>
                {a.scored} · {a.failed}
              </dd>
            </div>
          </dl>
        ) : (
          <p className="muted">No item has ended yet.</p>
        )}
      </Section>
      <Section title="Items">
        <Problem problem={items.problem} />
        <ListTable<ExperimentItem>
          className="experiment-items cards"
          label="Experiment items"
          rows={items.data?.items}
          loading={items.loading}
          rowKey={(i) => i.item_id}
          rowProps={(i) => ({ 'data-item-id': i.item_id, 'data-status': i.status })}
          page={items.data ? { offset, limit: LIMIT, total: items.data.total } : undefined}
          empty={ended ? 'No item ran.' : 'No item has started yet.'}
          columns={[
            { title: 'Input', cell: (i) => <div className="eval-cell">{textOf(i.input)}</div> },
            { title: 'Expected', cell: (i) => <div className="eval-cell">{textOf(i.expected)}</div> },
            {
              title: 'Output',
              cell: (i) => (
                <div className="eval-cell" data-field="output">
                  {i.status === 'running' ? <span className="muted">running…</span> : textOf(i.output)}
                  {i.error && <div className="error small">{i.error}</div>}
                </div>
              ),
            },
            {
              title: 'Scores',
              cell: (i) =>
                i.scores.length ? (
                  <ul className="eval-scores">
                    {i.scores.map((s) => (
                      <li key={s.evaluator} data-evaluator={s.evaluator}>
                        <strong>{s.evaluator}</strong>{' '}
                        <span className={s.passed ? 'pass' : 'fail'}>
                          {score(s.score)} {s.passed ? '✓' : '✗'}
                        </span>
                        <div className="muted">{s.reason}</div>
                      </li>
                    ))}
                  </ul>
                ) : (
                  '—'
                ),
            },
            {
              title: 'Pass',
              cell: (i) =>
                i.status === 'running' ? (
                  '—'
                ) : (
                  <span className={i.passed ? 'pass' : 'fail'}>{i.passed ? 'pass' : 'fail'}</span>
                ),
            },
            { title: 'Latency', cell: (i) => ms(i.latency_ms) },
            {
              title: 'Tokens',
              cell: (i) => <span title={`${i.input_tokens} in · ${i.output_tokens} out`}>{i.total_tokens}</span>,
            },
            {
              title: 'Cost',
              cell: (i) => (
                <span title={`evaluators ${usd(i.evaluator_cost_usd)}`}>{usd(i.cost_usd + i.evaluator_cost_usd)}</span>
              ),
            },
            { title: 'Run', cell: (i) => <Link to={`/runs/${i.job_id}`}>{shortId(i.job_id)}</Link> },
          ]}
        />
      </Section>
    </>
  );
}

/** An evaluator's options in a line ("case_sensitive: true · pass ≥ 1"). */
function optionsOf(ev: Record<string, unknown>): string {
  const parts: string[] = [String(ev.type)];
  for (const [k, v] of Object.entries(ev)) {
    if (k === 'type' || k === 'name' || k === 'pass_threshold' || v === undefined || v === null) continue;
    parts.push(`${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  }
  parts.push(`pass ≥ ${String(ev.pass_threshold)}`);
  return parts.join(' · ');
}

/** Picks another ended experiment of the same dataset and opens the comparison (this one as the baseline). */
function CompareWith({ experiment }: { experiment: Experiment }) {
  const { api } = useAuth();
  const others = usePoll(
    (signal) =>
      api.get<ApiSchema<'ExperimentList'>>(
        `/v1/experiments${qs({ dataset_id: experiment.dataset_id, limit: 50 })}`,
        signal,
      ),
    [api, experiment.dataset_id],
    0,
    false,
  );
  const list = (others.data?.experiments ?? []).filter((x) => x.id !== experiment.id && ENDED.includes(x.status));
  if (!list.length) return null;
  return (
    <select
      aria-label="Compare with"
      value=""
      onChange={(ev) => ev.target.value && navigate(`/experiments/compare?ids=${experiment.id},${ev.target.value}`)}
    >
      <option value="">Compare with…</option>
      {list.map((x) => (
        <option key={x.id} value={x.id}>
          {x.name ?? shortId(x.id)} · v{x.target.version}
        </option>
      ))}
    </select>
  );
}
