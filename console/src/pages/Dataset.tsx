import { useState, type FormEvent } from 'react';
import { qs, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ExperimentForm } from '../components/ExperimentForm';
import { ListTable, useAction } from '../components/ListTable';
import { ago, Badge, Problem, Section, shortId, useTick } from '../components/ui';
import { ENDED, pct, targetLabel, textOf, valueOf, type DatasetItem, type Experiment } from '../evaluations';
import { Link, navigate, setQuery, useLocation } from '../router';
import { usePoll } from '../use-poll';
import { useTargets } from './Runs';
import '../evaluations.css';

/*
 * A dataset (docs/evaluations.md): its current version and item count, the items of any version
 * (`?version=`, paged with `?offset=`), adding one item or pasting JSONL or CSV (each makes the next
 * version), removing an item, deleting the dataset, starting an experiment on it, and its
 * experiments with a pick of two or more to compare. Any member of the workspace may change a
 * dataset (the API has no role on evaluations), so the controls are shown to every caller; an
 * item of an older version cannot be removed (it is removed from the current one), so its row
 * has no button.
 */
const LIMIT = 50;

export default function DatasetPage({ params }: { params: Record<string, string> }) {
  const id = params.id;
  const { api } = useAuth();
  const { query } = useLocation();
  const offset = Number(query.get('offset') ?? 0) || 0;
  const asked = Number(query.get('version') ?? 0) || undefined;
  const [panel, setPanel] = useState<'add' | 'import' | 'experiment' | null>(null);
  const del = useAction();

  const ds = usePoll((signal) => api.get<ApiSchema<'Dataset'>>(`/v1/datasets/${id}`, signal), [api, id], 10_000);
  const d = ds.data;
  const items = usePoll(
    (signal) =>
      api.get<ApiSchema<'DatasetItemList'>>(
        `/v1/datasets/${id}/items${qs({ version: asked, limit: LIMIT, offset })}`,
        signal,
      ),
    [api, id, asked, offset, d?.version],
    10_000,
  );
  const reload = () => {
    ds.reload();
    items.reload();
  };

  if (!d && ds.problem) return <Problem problem={ds.problem} />;
  if (!d) return <p className="muted">Loading…</p>;
  const shownVersion = items.data?.version ?? asked ?? d.version;
  const current = shownVersion === d.version;

  const remove = async () => {
    if (!window.confirm(`Delete the dataset “${d.name}” and its items? Experiments keep their results.`)) return;
    const ok = await del.run(() => api.raw('DELETE', `/v1/datasets/${id}`));
    if (ok !== undefined) navigate('/datasets');
  };

  return (
    <>
      <div className="page-head">
        <h1>
          {d.name}{' '}
          <span className="muted" data-field="dataset-version">
            v{d.version}
          </span>
        </h1>
        <div className="actions">
          <button type="button" onClick={() => setPanel(panel === 'add' ? null : 'add')}>
            Add item
          </button>
          <button type="button" onClick={() => setPanel(panel === 'import' ? null : 'import')}>
            Import JSONL or CSV
          </button>
          <button
            type="button"
            className="primary"
            disabled={d.item_count === 0}
            title={d.item_count === 0 ? 'Add items first' : undefined}
            onClick={() => setPanel(panel === 'experiment' ? null : 'experiment')}
          >
            Run experiment
          </button>
          <button type="button" className="danger" disabled={del.busy} onClick={() => void remove()}>
            Delete dataset
          </button>
        </div>
      </div>
      <Problem problem={del.problem} />
      {d.description && <p className="muted">{d.description}</p>}
      <dl className="facts">
        <dt>Version</dt>
        <dd>v{d.version}</dd>
        <dt>Items</dt>
        <dd data-field="item-count">{d.item_count}</dd>
        <dt>Updated</dt>
        <dd title={d.updated_at}>{ago(d.updated_at)}</dd>
      </dl>
      {panel === 'add' && <AddItem datasetId={id} onDone={reload} onCancel={() => setPanel(null)} />}
      {panel === 'import' && <ImportItems datasetId={id} onDone={reload} onCancel={() => setPanel(null)} />}
      {panel === 'experiment' && <ExperimentForm dataset={d} onCancel={() => setPanel(null)} />}

      <Section
        title={`Items of v${shownVersion}`}
        actions={
          d.version > 1 && (
            <label className="inline">
              Version{' '}
              <select
                aria-label="Dataset version"
                value={shownVersion}
                onChange={(e) =>
                  setQuery({
                    version: Number(e.target.value) === d.version ? undefined : e.target.value,
                    offset: undefined,
                  })
                }
              >
                {Array.from({ length: d.version }, (_, i) => d.version - i).map((v) => (
                  <option key={v} value={v}>
                    v{v}
                    {v === d.version ? ' (current)' : ''}
                  </option>
                ))}
              </select>
            </label>
          )
        }
      >
        <Problem problem={items.problem} />
        <ItemsTable
          datasetId={id}
          rows={items.data?.items}
          loading={items.loading}
          total={items.data?.total}
          offset={offset}
          removable={current}
          onRemoved={reload}
        />
      </Section>
      <DatasetExperiments datasetId={id} />
    </>
  );
}

function ItemsTable({
  datasetId,
  rows,
  loading,
  total,
  offset,
  removable,
  onRemoved,
}: {
  datasetId: string;
  rows: DatasetItem[] | undefined;
  loading: boolean;
  total: number | null | undefined;
  offset: number;
  removable: boolean;
  onRemoved(): void;
}) {
  const { api } = useAuth();
  const act = useAction();
  const remove = async (item: DatasetItem) => {
    const r = await act.run(() => api.raw('DELETE', `/v1/datasets/${datasetId}/items/${item.id}`));
    if (r !== undefined) onRemoved();
  };
  return (
    <>
      <Problem problem={act.problem} />
      <ListTable<DatasetItem>
        className="dataset-items cards"
        label="Items"
        rows={rows}
        loading={loading}
        rowKey={(i) => i.id}
        rowProps={(i) => ({ 'data-item-id': i.id })}
        page={rows ? { offset, limit: LIMIT, total } : undefined}
        empty="No items in this version: add one, paste JSONL or CSV, or add a finished run from its page."
        columns={[
          { title: 'Input', cell: (i) => <div className="eval-cell">{textOf(i.input)}</div> },
          { title: 'Expected', cell: (i) => <div className="eval-cell">{textOf(i.expected)}</div> },
          {
            title: 'Metadata',
            cell: (i) => (
              <div className="eval-cell muted">
                {i.metadata && Object.keys(i.metadata).length ? JSON.stringify(i.metadata) : '—'}
                {i.source_job_id && (
                  <div>
                    from run <Link to={`/runs/${i.source_job_id}`}>{shortId(i.source_job_id)}</Link>
                  </div>
                )}
              </div>
            ),
          },
          { title: 'Added in', cell: (i) => `v${i.added_in_version}` },
          {
            title: '',
            cell: (i) =>
              removable && (
                <button type="button" className="danger" disabled={act.busy} onClick={() => void remove(i)}>
                  Remove
                </button>
              ),
          },
        ]}
      />
    </>
  );
}

/** One item: the input and expected boxes read JSON when they hold JSON (see valueOf), else text. */
function AddItem({ datasetId, onDone, onCancel }: { datasetId: string; onDone(): void; onCancel(): void }) {
  const { api } = useAuth();
  const [input, setInput] = useState('');
  const [expected, setExpected] = useState('');
  const [metadata, setMetadata] = useState('');
  const { problem, busy, run } = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await run(() => {
      const meta = metadata.trim() ? (JSON.parse(metadata) as unknown) : undefined;
      return api.post<ApiSchema<'DatasetItemsAdded'>>(`/v1/datasets/${datasetId}/items`, {
        input: valueOf(input),
        ...(expected.trim() ? { expected: valueOf(expected) } : {}),
        ...(meta !== undefined ? { metadata: meta } : {}),
      });
    });
    if (r) {
      setInput('');
      setExpected('');
      setMetadata('');
      onDone();
    }
  };
  return (
    <form className="card eval-form" aria-label="Add item" onSubmit={(e) => void submit(e)}>
      <label className="wide">
        Input
        <textarea required value={input} onChange={(e) => setInput(e.target.value)} placeholder="text, or JSON" />
      </label>
      <label>
        Expected
        <textarea
          value={expected}
          onChange={(e) => setExpected(e.target.value)}
          placeholder="optional: text, or JSON"
        />
      </label>
      <label>
        Metadata
        <textarea
          value={metadata}
          onChange={(e) => setMetadata(e.target.value)}
          placeholder='optional: {"lang": "en"}'
        />
      </label>
      <Problem problem={problem} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={busy || !input.trim()}>
          Add
        </button>
        <button type="button" onClick={onCancel}>
          Close
        </button>
      </div>
    </form>
  );
}

function ImportItems({ datasetId, onDone, onCancel }: { datasetId: string; onDone(): void; onCancel(): void }) {
  const { api } = useAuth();
  const [format, setFormat] = useState<'jsonl' | 'csv'>('jsonl');
  const [content, setContent] = useState('');
  const [added, setAdded] = useState<number | null>(null);
  const { problem, busy, run } = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setAdded(null);
    const r = await run(() =>
      api.post<ApiSchema<'DatasetItemsAdded'>>(`/v1/datasets/${datasetId}/import`, { format, content }),
    );
    if (r) {
      setAdded(r.items.length);
      setContent('');
      onDone();
    }
  };
  return (
    <form className="card eval-form" aria-label="Import items" onSubmit={(e) => void submit(e)}>
      <label>
        Format
        <select value={format} onChange={(e) => setFormat(e.target.value as 'jsonl' | 'csv')}>
          <option value="jsonl">JSONL</option>
          <option value="csv">CSV</option>
        </select>
      </label>
      <p className="muted small wide-note">
        {format === 'jsonl'
          ? 'One { "input", "expected", "metadata" } object per line.'
          : 'A header row with an input column and optionally expected; other columns become metadata.'}
      </p>
      <label className="wide">
        Items
        <textarea
          required
          rows={6}
          value={content}
          onChange={(e) => setContent(e.target.value)}
          placeholder={format === 'csv' ? 'input,expected\n2+2,4' : '{"input": "2+2", "expected": "4"}'}
        />
      </label>
      <Problem problem={problem} />
      {added !== null && (
        <p className="ok" role="status">
          Imported {added} items as the next version.
        </p>
      )}
      <div className="buttons">
        <button type="submit" className="primary" disabled={busy || !content.trim()}>
          Import
        </button>
        <button type="button" onClick={onCancel}>
          Close
        </button>
      </div>
    </form>
  );
}

/** The dataset's experiments, newest first, with a pick of two to five to compare (the first picked is the baseline). */
function DatasetExperiments({ datasetId }: { datasetId: string }) {
  const { api } = useAuth();
  const now = useTick(5_000);
  const targets = useTargets();
  const names = Object.fromEntries([...targets.neuron, ...targets.pathway].map((t) => [t.id, t.name]));
  const [picked, setPicked] = useState<string[]>([]);
  const { data, problem, loading } = usePoll(
    (signal) =>
      api.get<ApiSchema<'ExperimentList'>>(`/v1/experiments${qs({ dataset_id: datasetId, limit: 50 })}`, signal),
    [api, datasetId],
    5_000,
  );
  const toggle = (id: string) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p, id].slice(-5)));
  return (
    <Section
      title="Experiments"
      actions={
        <button
          type="button"
          disabled={picked.length < 2}
          title="Pick two to five experiments; the first picked is the baseline"
          onClick={() => navigate(`/experiments/compare?ids=${picked.join(',')}`)}
        >
          Compare {picked.length >= 2 ? picked.length : ''}
        </button>
      }
    >
      <Problem problem={problem} />
      <ListTable<Experiment>
        className="dataset-experiments cards"
        label="Experiments of this dataset"
        rows={data?.experiments}
        loading={loading}
        rowKey={(e) => e.id}
        rowProps={(e) => ({ 'data-experiment-id': e.id })}
        empty="No experiment on this dataset yet: run one to score a neuron or pathway version."
        columns={[
          {
            title: 'Pick',
            cell: (e) => (
              <input
                type="checkbox"
                aria-label={`Compare ${e.name ?? shortId(e.id)}`}
                checked={picked.includes(e.id)}
                disabled={!ENDED.includes(e.status)}
                onChange={() => toggle(e.id)}
              />
            ),
          },
          {
            title: 'Experiment',
            className: 'step',
            cell: (e) => <Link to={`/experiments/${e.id}`}>{e.name ?? shortId(e.id)}</Link>,
          },
          { title: 'Target', cell: (e) => targetLabel(e.target, names) },
          { title: 'Dataset', cell: (e) => `v${e.dataset_version}` },
          { title: 'Status', cell: (e) => <Badge value={e.status} /> },
          { title: 'Pass rate', cell: (e) => pct(e.aggregates?.pass_rate) },
          { title: 'Started', cell: (e) => <span title={e.created_at}>{ago(e.created_at, now)}</span> },
        ]}
      />
    </Section>
  );
}
