import jsonata from 'jsonata';
import { expressionHint, normalizeExpression, normalizeTemplate } from './normalize.js';
import { own } from '../own.js';

/**
 * Pathway expressions (JSONata) and `{{ expression }}` templates: syntax checks for validation
 * and a time-boxed evaluation for runs. JSONata has no eval and no globals, but an expression can
 * still loop forever (a recursive function without a base case): evaluation is bounded in time
 * and depth by JSONata's guardrail options, so a runaway expression fails its node with a clear
 * reason instead of holding a worker. Expressions are normalised first (./normalize.ts), so
 * `a == 1 && !b` means what its writer meant.
 */

/** How long one evaluation may run, and how deep it may recurse. */
export const EXPRESSION_LIMITS = { timeoutMs: 1_000, maxDepth: 500 };

/**
 * Which node data fields hold an expression or a template, per node type. `templateTrees` are
 * fields whose every string leaf is a template (an object of headers, a JSON body, or a string).
 */
const FIELDS: Record<string, { expressions: string[]; templates: string[]; templateTrees?: string[] }> = {
  transform: { expressions: ['expression'], templates: ['template'] },
  if: { expressions: ['condition'], templates: [] },
  while: { expressions: ['condition'], templates: [] },
  output: { expressions: ['value'], templates: [] },
  end: { expressions: ['value'], templates: [] },
  neuron: { expressions: [], templates: ['message'] },
  classify: { expressions: [], templates: ['input'] },
  human: { expressions: [], templates: ['title', 'prompt'] },
  pathway: { expressions: ['input'], templates: [] },
  // `item` and `index` are in the context of message and input (one render per item).
  map: { expressions: ['items', 'input'], templates: ['message'] },
  http: { expressions: [], templates: ['url'], templateTrees: ['headers', 'body'] },
};

/** The string leaves of a JSON value with their paths (`headers.Authorization`, `body.items.0`). */
function stringLeaves(value: unknown, path: string): { path: string; text: string }[] {
  if (typeof value === 'string') return [{ path, text: value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringLeaves(v, `${path}.${i}`));
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).flatMap(([k, v]) => stringLeaves(v, `${path}.${k}`));
  return [];
}

/** `value` with each string leaf replaced by `fn` of it (the same object when none changed). */
function mapLeaves(value: unknown, fn: (s: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) {
    const out = value.map((v) => mapLeaves(v, fn));
    return out.every((v, i) => v === value[i]) ? value : out;
  }
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    const out = entries.map(([k, v]) => [k, mapLeaves(v, fn)] as const);
    return out.every(([, v], i) => v === entries[i][1]) ? value : Object.fromEntries(out);
  }
  return value;
}

/** One node's template fields, flattened: each top-level template, and each string leaf of a template tree. */
function templateLeaves(f: (typeof FIELDS)[string], data: Record<string, unknown>): { path: string; text: string }[] {
  return [
    ...f.templates.flatMap((key) => (typeof data[key] === 'string' ? [{ path: key, text: data[key] }] : [])),
    ...(f.templateTrees ?? []).flatMap((key) => stringLeaves(data[key], key)),
  ];
}

/** The expressions inside a template's `{{ … }}` placeholders. */
export function templateExpressions(template: string): string[] {
  return [...template.matchAll(/\{\{([\s\S]*?)\}\}/g)].map((m) => m[1]);
}

/** An expression error's message with its position and, for the usual mistakes, what to write instead. */
export function describeExpressionError(e: unknown): string {
  const err = e as { message?: string; position?: number; code?: string };
  const hint = expressionHint(err);
  return `${err.message ?? 'invalid expression'}${err.position !== undefined ? ` (at character ${err.position})` : ''}${hint ? `; ${hint}` : ''}`;
}

/** The syntax error of an expression, after normalisation (null when it parses). */
export function syntaxError(expression: string): string | null {
  if (!expression.trim()) return null;
  try {
    jsonata(normalizeExpression(expression));
    return null;
  } catch (e) {
    return describeExpressionError(e);
  }
}

/**
 * One node's data with its expressions and templates normalised, and a note per field that
 * changed (`data.condition: "a == 1" is read as "a = 1"`), for validation to echo.
 */
export function normalizeNodeData(
  type: string,
  data: Record<string, unknown>,
): { data: Record<string, unknown>; notes: string[] } {
  const f = own(FIELDS, type);
  if (!f) return { data, notes: [] };
  const out = { ...data };
  const notes: string[] = [];
  const apply = (key: string, fn: (s: string) => string) => {
    const v = data[key];
    if (typeof v !== 'string') return;
    const n = fn(v);
    if (n === v) return;
    out[key] = n;
    notes.push(`data.${key}: ${JSON.stringify(v)} is read as ${JSON.stringify(n)}`);
  };
  for (const key of f.expressions) apply(key, normalizeExpression);
  for (const key of f.templates) apply(key, normalizeTemplate);
  for (const key of f.templateTrees ?? []) {
    const v = data[key];
    const n = mapLeaves(v, normalizeTemplate);
    if (n === v) continue;
    out[key] = n;
    const before = new Map(stringLeaves(v, key).map((l) => [l.path, l.text]));
    for (const l of stringLeaves(n, key))
      if (before.get(l.path) !== l.text)
        notes.push(`data.${l.path}: ${JSON.stringify(before.get(l.path))} is read as ${JSON.stringify(l.text)}`);
  }
  return { data: notes.length ? out : data, notes };
}

/** Syntax errors of every expression and template of one node's data, as validation messages. */
export function nodeExpressionErrors(type: string, data: Record<string, unknown>, at: string): string[] {
  const f = own(FIELDS, type);
  if (!f) return [];
  const errors: string[] = [];
  for (const key of f.expressions) {
    const v = data[key];
    if (typeof v !== 'string') continue;
    const err = syntaxError(v);
    if (err) errors.push(`${at} (${type}): data.${key}: ${err}`);
  }
  for (const { path, text } of templateLeaves(f, data)) {
    for (const expr of templateExpressions(text)) {
      const err = syntaxError(expr);
      if (err) errors.push(`${at} (${type}): data.${path}: in {{${expr}}}: ${err}`);
    }
  }
  return errors;
}

/**
 * Evaluates a JSONata expression within EXPRESSION_LIMITS, with JSONata's own guardrails
 * (`timeout` and `stack` options: errors D1012 and D1011); throws with the reason on an error,
 * a timeout or runaway recursion.
 */
export async function evaluateTimeboxed(
  expression: string,
  context: Record<string, unknown>,
  limits = EXPRESSION_LIMITS,
): Promise<unknown> {
  const options = { timeout: limits.timeoutMs, stack: limits.maxDepth };
  try {
    return await jsonata(normalizeExpression(expression), options as Parameters<typeof jsonata>[1]).evaluate(context);
  } catch (e) {
    const hint = expressionHint(e as { code?: string; message?: string });
    // JSONata throws plain objects ({ code, message, position }); the message gets the hint.
    if (hint && typeof e === 'object' && e !== null) (e as { message?: string }).message += `; ${hint}`;
    throw e;
  }
}
