import type { ApiSchema } from './api';

/*
 * What the evaluation pages share (docs/evaluations.md): the API's shapes by name, the built-in
 * evaluator types with the options each takes, and how a value, a cost or a latency is shown.
 */
export type Dataset = ApiSchema<'Dataset'>;
export type DatasetItem = ApiSchema<'DatasetItem'>;
export type Experiment = ApiSchema<'Experiment'>;
export type ExperimentItem = ApiSchema<'ExperimentItem'>;
export type ExperimentComparison = ApiSchema<'ExperimentComparison'>;
export type EvaluatorConfig = ApiSchema<'EvaluatorConfig'>;
export type EvaluatorType = EvaluatorConfig['type'];

/** The built-in evaluator types in the order the form offers them, with what each one checks. */
export const EVALUATOR_TYPES: { type: EvaluatorType; label: string }[] = [
  { type: 'exact', label: 'exact: the output equals expected' },
  { type: 'contains', label: 'contains: the output contains a text' },
  { type: 'regex', label: 'regex: the output matches a pattern' },
  { type: 'json_schema', label: 'json_schema: the output validates' },
  { type: 'numeric_close', label: 'numeric_close: the first number is close' },
  { type: 'judge', label: 'judge: a neuron scores it' },
  { type: 'pathway', label: 'pathway: a pathway scores it' },
];

/** Experiments that are over: no cancel (the API answers 409), no more polling. */
export const ENDED: readonly Experiment['status'][] = ['completed', 'failed', 'cancelled'];

/** A JSON value as one line of text: strings as they are, anything else as compact JSON. */
export function textOf(v: unknown): string {
  if (v === null || v === undefined) return '—';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * What a person typed into an input or expected box: JSON when it parses as an object, an array,
 * a number, true, false or null (the way the CSV import reads a cell), else the text itself.
 */
export function valueOf(text: string): unknown {
  const t = text.trim();
  if (/^[[{]|^-?\d|^(true|false|null)$/.test(t)) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

export const usd = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : `$${n.toFixed(6)}`);
export const ms = (n: number | null | undefined): string =>
  n === null || n === undefined ? '—' : n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(2)} s`;
export const pct = (n: number | null | undefined): string =>
  n === null || n === undefined ? '—' : `${Math.round(n * 1000) / 10}%`;
export const score = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : n.toFixed(2));
/** A signed score change: "+0.25", "−1.00", "0.00". */
export const delta = (n: number): string =>
  n > 0 ? `+${n.toFixed(2)}` : n < 0 ? `−${Math.abs(n).toFixed(2)}` : '0.00';

/** "neuron 3f2a… v4" from an experiment's target, by name when known. */
export function targetLabel(t: Experiment['target'], names: Record<string, string> = {}): string {
  return `${t.kind} ${names[t.id] ?? t.id} v${t.version}`;
}
