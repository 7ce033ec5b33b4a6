import { compileLinear, RegexRefused } from '../expressions/index.js';
import { setOwn } from '../kernel/own.js';
import type { EvaluatorSpec, ExperimentAggregates, ItemScore } from './model.js';

/**
 * Scoring (docs/evaluations.md): pure functions over an item's input, expected value and the
 * target's output. Built-in evaluators score 0 or 1 (numeric_close too); judge and pathway
 * evaluators run as jobs and their answers are read here (`judgeVerdict`, `pathwayVerdict`).
 */

/** The evaluators that score inside the scoring step (no job of their own). */
export type BuiltinSpec = Exclude<EvaluatorSpec, { type: 'judge' | 'pathway' }>;

export interface Verdict {
  score: number;
  reason: string;
}

/** A value as text: strings as they are, anything else as JSON. */
export const textOf = (v: unknown): string =>
  typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);

/** JSON with object keys sorted, so equal values give equal text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

/** A string that holds JSON (a model's JSON answer) as its value; anything else unchanged. */
function parsedJson(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const t = v.trim();
  if (!/^[[{"]|^-?\d|^(true|false|null)$/.test(t)) return v;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return v;
  }
}

const fold = (s: string, caseSensitive: boolean) => (caseSensitive ? s : s.toLowerCase());
const verdict = (ok: boolean, yes: string, no: string): Verdict => ({ score: ok ? 1 : 0, reason: ok ? yes : no });
const clip = (s: string, n = 80) => (s.length <= n ? s : `${s.slice(0, n)}…`);

/** Scores one item with a built-in evaluator. */
export function scoreBuiltin(spec: BuiltinSpec, c: { input: unknown; expected: unknown; output: unknown }): Verdict {
  switch (spec.type) {
    case 'exact':
      return exact(spec.caseSensitive, c.expected, c.output);
    case 'contains': {
      const needle = spec.value ?? textOf(c.expected);
      if (!needle)
        return { score: 0, reason: 'nothing to look for: the item has no expected value and no value was set' };
      const ok = fold(textOf(c.output), spec.caseSensitive).includes(fold(needle, spec.caseSensitive));
      return verdict(ok, `output contains "${clip(needle)}"`, `output does not contain "${clip(needle)}"`);
    }
    case 'regex':
      return regex(spec.pattern, spec.flags, textOf(c.output));
    case 'json_schema': {
      const problems = validateSchema(spec.schema, parsedJson(c.output));
      return problems.length ? { score: 0, reason: problems.slice(0, 3).join('; ') } : { score: 1, reason: 'valid' };
    }
    case 'numeric_close':
      return numericClose(spec.tolerance, spec.relative, c.expected, c.output);
  }
}

function exact(caseSensitive: boolean, expected: unknown, output: unknown): Verdict {
  if (expected === undefined || expected === null) return { score: 0, reason: 'the item has no expected value' };
  const out = parsedJson(output);
  const ok =
    typeof expected === 'string' || typeof out === 'string'
      ? fold(textOf(expected).trim(), caseSensitive) === fold(textOf(output).trim(), caseSensitive)
      : canonical(expected) === canonical(out);
  return verdict(ok, 'output equals expected', `output "${clip(textOf(output))}" differs from expected`);
}

function regex(pattern: string, flags: string, text: string): Verdict {
  try {
    const ok = compileLinear(pattern, flags).matcher(text).find();
    return verdict(ok, `output matches /${clip(pattern)}/`, `output does not match /${clip(pattern)}/`);
  } catch (e) {
    if (e instanceof RegexRefused) return { score: 0, reason: e.message };
    throw e;
  }
}

/** The first number in a value (a number, or a string holding one). */
function numberIn(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  const m = /-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/.exec(textOf(v).replace(/(\d),(\d{3})/g, '$1$2'));
  if (!m) return null;
  const n = Number(m[0]);
  return Number.isFinite(n) ? n : null;
}

function numericClose(tolerance: number, relative: boolean, expected: unknown, output: unknown): Verdict {
  const want = numberIn(expected);
  const got = numberIn(output);
  if (want === null) return { score: 0, reason: 'the expected value holds no number' };
  if (got === null) return { score: 0, reason: 'the output holds no number' };
  const allowed = relative ? Math.abs(want) * tolerance : tolerance;
  const diff = Math.abs(got - want);
  return verdict(
    diff <= allowed,
    `${got} is within ${allowed} of ${want}`,
    `${got} is ${diff} from ${want} (allowed ${allowed})`,
  );
}

// ---------------------------------------------------------------- JSON Schema (a bounded subset)

/** How deep a schema may nest and how many problems one check reports. */
const SCHEMA_LIMITS = { depth: 12, problems: 10 };

/** JSON Schema keywords the json_schema evaluator understands (docs/evaluations.md); others are refused when the experiment is created. */
const SCHEMA_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'pattern',
  'title',
  'description',
  '$schema',
]);

/** Why a schema cannot be used (an unknown keyword, too deep, a bad pattern), or null. */
export function schemaProblem(schema: unknown, path = '#', depth = 0): string | null {
  if (depth > SCHEMA_LIMITS.depth) return `${path}: nests deeper than ${SCHEMA_LIMITS.depth} levels`;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return `${path}: must be an object`;
  const s = schema as Record<string, unknown>;
  for (const k of Object.keys(s)) if (!SCHEMA_KEYWORDS.has(k)) return `${path}: keyword "${k}" is not supported`;
  if (typeof s.pattern === 'string') {
    try {
      compileLinear(s.pattern, '');
    } catch (e) {
      return `${path}/pattern: ${(e as Error).message}`;
    }
  }
  if (s.properties !== undefined) {
    if (typeof s.properties !== 'object' || s.properties === null) return `${path}/properties: must be an object`;
    for (const [k, sub] of Object.entries(s.properties)) {
      const p = schemaProblem(sub, `${path}/properties/${k}`, depth + 1);
      if (p) return p;
    }
  }
  if (s.items !== undefined) return schemaProblem(s.items, `${path}/items`, depth + 1);
  if (typeof s.additionalProperties === 'object')
    return schemaProblem(s.additionalProperties, `${path}/additionalProperties`, depth + 1);
  return null;
}

const typeOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;

/** What in `value` breaks `schema` (empty: it validates). The schema passed `schemaProblem`. */
export function validateSchema(schema: Record<string, unknown>, value: unknown, path = '$'): string[] {
  const out: string[] = [];
  const add = (m: string) => out.length < SCHEMA_LIMITS.problems && out.push(`${path}: ${m}`);
  const t = typeOf(value);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [String(schema.type)];
    const ok = types.some((x) => x === t || (x === 'number' && t === 'integer'));
    if (!ok) return [`${path}: is ${t}, expected ${types.join(' or ')}`];
  }
  if (schema.const !== undefined && canonical(schema.const) !== canonical(value)) add('differs from const');
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => canonical(e) === canonical(value)))
    add('is not one of enum');
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) add(`is below minimum ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) add(`is above maximum ${schema.maximum}`);
  }
  if (typeof value === 'string') {
    if (typeof schema.minLength === 'number' && value.length < schema.minLength) add('is too short');
    if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) add('is too long');
    if (typeof schema.pattern === 'string' && !compileLinear(schema.pattern, '').matcher(value).find())
      add(`does not match ${schema.pattern}`);
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) add('has too few items');
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) add('has too many items');
    if (typeof schema.items === 'object' && schema.items !== null)
      for (const [i, v] of value.entries()) {
        if (out.length >= SCHEMA_LIMITS.problems) break;
        out.push(...validateSchema(schema.items as Record<string, unknown>, v, `${path}[${i}]`));
      }
  }
  if (t === 'object') {
    const o = value as Record<string, unknown>;
    const props =
      typeof schema.properties === 'object' && schema.properties !== null
        ? (schema.properties as Record<string, Record<string, unknown>>)
        : {};
    if (Array.isArray(schema.required))
      for (const k of schema.required as string[]) if (!Object.hasOwn(o, k)) add(`misses required "${k}"`);
    for (const [k, v] of Object.entries(o)) {
      if (out.length >= SCHEMA_LIMITS.problems) break;
      if (Object.hasOwn(props, k)) out.push(...validateSchema(props[k], v, `${path}.${k}`));
      else if (schema.additionalProperties === false) add(`has no property "${k}" in the schema`);
      else if (typeof schema.additionalProperties === 'object' && schema.additionalProperties !== null)
        out.push(...validateSchema(schema.additionalProperties as Record<string, unknown>, v, `${path}.${k}`));
    }
  }
  return out.slice(0, SCHEMA_LIMITS.problems);
}

// ---------------------------------------------------------------- judge and pathway evaluators

/** How much of the input, expected value and output a judge's message carries. */
const JUDGE_FIELD_MAX = 8_000;

/** The message a judge neuron gets: the rubric, the item and the output, and the answer's shape. */
export function judgeMessage(rubric: string, c: { input: unknown; expected: unknown; output: unknown }): string {
  const field = (v: unknown) => {
    const t = textOf(v);
    return t.length > JUDGE_FIELD_MAX ? `${t.slice(0, JUDGE_FIELD_MAX)}…` : t;
  };
  return [
    'You are grading the output of an AI system.',
    `Rubric:\n${rubric}`,
    `Input:\n${field(c.input)}`,
    ...(c.expected === undefined || c.expected === null ? [] : [`Expected:\n${field(c.expected)}`]),
    `Output:\n${field(c.output)}`,
    'Answer with one JSON object and nothing else: {"score": <a number from 0 to 1>, "reason": "<one sentence>"}',
  ].join('\n\n');
}

const clamp01 = (n: number) => Math.min(1, Math.max(0, n));

/** A `{ score, reason }` answer (an object, or text holding one): the score clamped to 0–1; null when none is found. */
function verdictOf(v: unknown): Verdict | null {
  let o: unknown = parsedJson(v);
  if (typeof o === 'string') {
    const m = /\{[\s\S]*\}/.exec(o);
    if (m) o = parsedJson(m[0]);
  }
  if (typeof o === 'object' && o !== null && !Array.isArray(o)) {
    const r = o as Record<string, unknown>;
    const score = typeof r.score === 'number' ? r.score : typeof r.score === 'string' ? Number(r.score) : NaN;
    if (Number.isFinite(score)) return { score: clamp01(score), reason: textOf(r.reason ?? '') };
  }
  return null;
}

/** A judge neuron's reply as a verdict; an answer without a score scores 0 and says so. */
export function judgeVerdict(reply: unknown): Verdict {
  return verdictOf(reply) ?? { score: 0, reason: `the judge's answer has no score: "${clip(textOf(reply))}"` };
}

/** A custom (pathway) evaluator's output as a verdict. */
export function pathwayVerdict(output: unknown): Verdict {
  return (
    verdictOf(output) ?? {
      score: 0,
      reason: `the evaluator pathway's output is not { score, reason }: "${clip(textOf(output))}"`,
    }
  );
}

/** A score with its pass mark (score ≥ the evaluator's pass threshold). */
export const scored = (spec: EvaluatorSpec, v: Verdict, jobId: string | null = null): ItemScore => ({
  evaluator: spec.name,
  score: v.score,
  passed: v.score >= spec.passThreshold,
  reason: v.reason,
  jobId,
});

// ---------------------------------------------------------------- aggregates

/** The q-th percentile (0–1) of the values, nearest rank; null for none. */
export function percentile(values: number[], q: number): number | null {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** What one item contributes to its experiment's aggregates. */
export interface ItemFigures {
  status: 'running' | 'scored' | 'failed';
  passed: boolean;
  scores: ItemScore[];
  latencyMs: number | null;
  totalTokens: number;
  costUsd: number;
  evaluatorCostUsd: number;
}

const round = (n: number, d = 6) => Math.round(n * 10 ** d) / 10 ** d;

/**
 * An experiment's aggregates over its items: the mean score per evaluator (an item whose run
 * failed scores 0 on every evaluator), the pass rate (an item passes when its run succeeded and
 * every evaluator passed), latency percentiles of the runs that ended, and what it cost.
 */
export function aggregate(evaluators: string[], itemCount: number, items: ItemFigures[]): ExperimentAggregates {
  const ended = items.filter((i) => i.status !== 'running');
  const meanScores: Record<string, number | null> = {};
  for (const name of evaluators) {
    const vals = ended.map((i) => i.scores.find((s) => s.evaluator === name)?.score ?? 0);
    // Keyed by names the builder chose: own properties only (src/kernel/own.ts).
    setOwn(meanScores, name, vals.length ? round(vals.reduce((a, b) => a + b, 0) / vals.length) : null);
  }
  const latencies = ended.flatMap((i) => (i.latencyMs === null ? [] : [i.latencyMs]));
  const target = items.reduce((n, i) => n + i.costUsd, 0);
  const evals = items.reduce((n, i) => n + i.evaluatorCostUsd, 0);
  return {
    items: itemCount,
    scored: ended.filter((i) => i.status === 'scored').length,
    failed: ended.filter((i) => i.status === 'failed').length,
    passRate: ended.length ? round(ended.filter((i) => i.passed).length / ended.length) : null,
    meanScores,
    latencyP50Ms: percentile(latencies, 0.5),
    latencyP95Ms: percentile(latencies, 0.95),
    targetCostUsd: round(target, 9),
    evaluatorCostUsd: round(evals, 9),
    totalCostUsd: round(target + evals, 9),
    totalTokens: items.reduce((n, i) => n + i.totalTokens, 0),
  };
}
