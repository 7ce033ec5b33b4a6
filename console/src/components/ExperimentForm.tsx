import { useState, type FormEvent } from 'react';
import type { ApiSchema } from '../api';
import { useAuth } from '../auth';
import { EVALUATOR_TYPES, type Dataset, type EvaluatorConfig, type EvaluatorType } from '../evaluations';
import { navigate } from '../router';
import { useTargets } from '../pages/Runs';
import { useAction } from './ListTable';
import { Problem } from './ui';

/*
 * "Run an experiment" on a dataset (POST /v1/experiments; docs/evaluations.md): the target (a
 * neuron or a pathway of the brain, at a version or its current one), the dataset version, the
 * evaluators from the built-in types, each with the options of its type, and the concurrency.
 * The form keeps every option as text and builds the body the API's EvaluatorConfig names at
 * submit; the API checks it (a regex it cannot run, a schema keyword it does not know: a 400
 * shown here).
 */
interface Row {
  key: number;
  type: EvaluatorType;
  name: string;
  threshold: string;
  caseSensitive: boolean;
  value: string;
  pattern: string;
  flags: string;
  schema: string;
  tolerance: string;
  relative: boolean;
  neuronId: string;
  pathwayId: string;
  version: string;
  rubric: string;
}

let nextKey = 1;
const blank = (type: EvaluatorType): Row => ({
  key: nextKey++,
  type,
  name: '',
  threshold: '',
  // exact compares case-sensitively by default, contains does not (the API's defaults).
  caseSensitive: type === 'exact',
  value: '',
  pattern: '',
  flags: '',
  schema: '{"type": "object"}',
  tolerance: '0',
  relative: false,
  neuronId: '',
  pathwayId: '',
  version: '',
  rubric: '',
});

const num = (s: string): number | undefined => (s.trim() === '' ? undefined : Number(s));

/** The API's EvaluatorConfig from a row; a JSON schema that does not parse is thrown with its evaluator named. */
function configOf(r: Row): EvaluatorConfig {
  const common = {
    ...(r.name.trim() ? { name: r.name.trim() } : {}),
    ...(num(r.threshold) !== undefined ? { pass_threshold: num(r.threshold) } : {}),
  };
  switch (r.type) {
    case 'exact':
      return { type: 'exact', ...common, case_sensitive: r.caseSensitive };
    case 'contains':
      return { type: 'contains', ...common, case_sensitive: r.caseSensitive, ...(r.value ? { value: r.value } : {}) };
    case 'regex':
      return { type: 'regex', ...common, pattern: r.pattern, flags: r.flags };
    case 'json_schema': {
      let schema: unknown;
      try {
        schema = JSON.parse(r.schema);
      } catch {
        throw new Error(`${r.name || 'json_schema'}: the schema is not JSON`);
      }
      return { type: 'json_schema', ...common, schema: schema as Record<string, unknown> };
    }
    case 'numeric_close':
      return { type: 'numeric_close', ...common, tolerance: num(r.tolerance) ?? 0, relative: r.relative };
    case 'judge':
      return {
        type: 'judge',
        ...common,
        neuron_id: r.neuronId,
        rubric: r.rubric,
        ...(num(r.version) ? { version: num(r.version) } : {}),
      };
    case 'pathway':
      return {
        type: 'pathway',
        ...common,
        pathway_id: r.pathwayId,
        ...(num(r.version) ? { version: num(r.version) } : {}),
      };
  }
}

export function ExperimentForm({ dataset, onCancel }: { dataset: Dataset; onCancel(): void }) {
  const { api } = useAuth();
  const targets = useTargets();
  const [name, setName] = useState('');
  const [target, setTarget] = useState('');
  const [version, setVersion] = useState('');
  const [datasetVersion, setDatasetVersion] = useState(String(dataset.version));
  const [concurrency, setConcurrency] = useState('4');
  const [rows, setRows] = useState<Row[]>([blank('exact')]);
  const { problem, busy, run } = useAction();

  const set = (key: number, patch: Partial<Row>) =>
    setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...patch } : r)));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const [kind, id] = target.split(':');
    const exp = await run(() => {
      const evaluators = rows.map(configOf);
      const v = num(version);
      return api.post<ApiSchema<'Experiment'>>('/v1/experiments', {
        ...(name.trim() ? { name: name.trim() } : {}),
        dataset_id: dataset.id,
        dataset_version: num(datasetVersion),
        target:
          kind === 'pathway'
            ? { pathway_id: id, ...(v ? { version: v } : {}) }
            : { neuron_id: id, ...(v ? { version: v } : {}) },
        evaluators,
        concurrency: num(concurrency) ?? 4,
      });
    });
    if (exp) navigate(`/experiments/${exp.id}`);
  };

  return (
    <form className="card eval-form" aria-label="New experiment" onSubmit={(e) => void submit(e)}>
      <label>
        Experiment name
        <input maxLength={200} value={name} onChange={(e) => setName(e.target.value)} placeholder="optional" />
      </label>
      <label>
        Target
        <select aria-label="Target" required value={target} onChange={(e) => setTarget(e.target.value)}>
          <option value="">choose a neuron or a pathway…</option>
          {targets.neuron.map((t) => (
            <option key={t.id} value={`neuron:${t.id}`}>
              neuron {t.name}
            </option>
          ))}
          {targets.pathway.map((t) => (
            <option key={t.id} value={`pathway:${t.id}`}>
              pathway {t.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Target version
        <input
          type="number"
          min={1}
          value={version}
          onChange={(e) => setVersion(e.target.value)}
          placeholder="current"
        />
      </label>
      <label>
        Dataset version
        <input
          type="number"
          min={1}
          max={dataset.version}
          required
          value={datasetVersion}
          onChange={(e) => setDatasetVersion(e.target.value)}
        />
      </label>
      <label>
        Concurrency
        <input
          type="number"
          min={1}
          max={20}
          required
          value={concurrency}
          onChange={(e) => setConcurrency(e.target.value)}
        />
      </label>
      {rows.map((r, i) => (
        <fieldset key={r.key} aria-label={`Evaluator ${i + 1}`}>
          <legend>Evaluator {i + 1}</legend>
          <label>
            Type
            <select
              aria-label="Type"
              value={r.type}
              onChange={(e) => set(r.key, { ...blank(e.target.value as EvaluatorType), key: r.key })}
            >
              {EVALUATOR_TYPES.map((t) => (
                <option key={t.type} value={t.type}>
                  {t.label}
                </option>
              ))}
            </select>
          </label>
          <label>
            Name
            <input
              value={r.name}
              maxLength={100}
              onChange={(e) => set(r.key, { name: e.target.value })}
              placeholder={r.type}
            />
          </label>
          <label>
            Pass threshold
            <input
              type="number"
              min={0}
              max={1}
              step={0.05}
              value={r.threshold}
              onChange={(e) => set(r.key, { threshold: e.target.value })}
              placeholder={r.type === 'judge' || r.type === 'pathway' ? '0.5' : '1'}
            />
          </label>
          {(r.type === 'exact' || r.type === 'contains') && (
            <label className="inline">
              <input
                type="checkbox"
                checked={r.caseSensitive}
                onChange={(e) => set(r.key, { caseSensitive: e.target.checked })}
              />{' '}
              Case sensitive
            </label>
          )}
          {r.type === 'contains' && (
            <label>
              Must contain
              <input value={r.value} onChange={(e) => set(r.key, { value: e.target.value })} placeholder="expected" />
            </label>
          )}
          {r.type === 'regex' && (
            <>
              <label>
                Pattern
                <input required value={r.pattern} onChange={(e) => set(r.key, { pattern: e.target.value })} />
              </label>
              <label>
                Flags
                <input
                  value={r.flags}
                  pattern="[ims]*"
                  onChange={(e) => set(r.key, { flags: e.target.value })}
                  placeholder="i, m, s"
                />
              </label>
            </>
          )}
          {r.type === 'json_schema' && (
            <label className="wide">
              JSON schema
              <textarea required value={r.schema} onChange={(e) => set(r.key, { schema: e.target.value })} />
            </label>
          )}
          {r.type === 'numeric_close' && (
            <>
              <label>
                Tolerance
                <input
                  type="number"
                  min={0}
                  step="any"
                  value={r.tolerance}
                  onChange={(e) => set(r.key, { tolerance: e.target.value })}
                />
              </label>
              <label className="inline">
                <input
                  type="checkbox"
                  checked={r.relative}
                  onChange={(e) => set(r.key, { relative: e.target.checked })}
                />{' '}
                Relative
              </label>
            </>
          )}
          {r.type === 'judge' && (
            <>
              <label>
                Judge neuron
                <select required value={r.neuronId} onChange={(e) => set(r.key, { neuronId: e.target.value })}>
                  <option value="">choose…</option>
                  {targets.neuron.map((t) => (
                    <option key={t.id} value={t.id}>
                      {t.name}
                    </option>
                  ))}
                </select>
              </label>
              <label className="wide">
                Rubric
                <textarea required value={r.rubric} onChange={(e) => set(r.key, { rubric: e.target.value })} />
              </label>
            </>
          )}
          {r.type === 'pathway' && (
            <label>
              Scoring pathway
              <select required value={r.pathwayId} onChange={(e) => set(r.key, { pathwayId: e.target.value })}>
                <option value="">choose…</option>
                {targets.pathway.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name}
                  </option>
                ))}
              </select>
            </label>
          )}
          {(r.type === 'judge' || r.type === 'pathway') && (
            <label>
              Its version
              <input
                type="number"
                min={1}
                value={r.version}
                onChange={(e) => set(r.key, { version: e.target.value })}
                placeholder="current"
              />
            </label>
          )}
          {rows.length > 1 && (
            <button type="button" onClick={() => setRows((rs) => rs.filter((x) => x.key !== r.key))}>
              Remove evaluator
            </button>
          )}
        </fieldset>
      ))}
      <Problem problem={problem} />
      <div className="buttons">
        {rows.length < 10 && (
          <button type="button" onClick={() => setRows((rs) => [...rs, blank('contains')])}>
            Add evaluator
          </button>
        )}
        <button type="submit" className="primary" disabled={busy || !target}>
          Start experiment
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
