import jsonata from 'jsonata';
import { expressionHint, normalizeExpression, normalizeTemplate, templateParts } from './normalize.js';
import { linearRegexEngine, REGEX_LIMITS, regexProblem, withLinearRegExp, type RegexBudget } from './regex.js';
import { own } from '../kernel/own.js';

/**
 * Pathway expressions (JSONata) and `{{ expression }}` templates: syntax checks for validation
 * and a time-boxed evaluation for runs. JSONata has no eval and no globals, but an expression can
 * still loop forever (a recursive function without a base case): evaluation is bounded in time
 * and depth by JSONata's guardrail options, so a runaway expression fails its node with a clear
 * reason instead of holding a worker. JSONata checks those only between steps, so what one step can
 * cost is bounded too: regular expressions run on a linear-time engine within a cost budget
 * (./regex.ts), a sequence (a range `[1..n]`, a path's results) holds at most `maxSequence` items,
 * `$pad` and every step's string result at most `maxStringChars` characters, JSONata's quadratic
 * `$sort` and `$distinct` are replaced or bounded; and a long evaluation yields the event loop every
 * `sliceMs`, so the worker's other activities run beside it. Expressions are normalised first
 * (./normalize.ts), so `a == 1 && !b` means what its writer meant.
 */

/**
 * How long one evaluation may run, how deep it may recurse, how many items a sequence and how many
 * characters a string may hold (a step that makes more fails the evaluation).
 */
const EXPRESSION_LIMITS = {
  timeoutMs: 1_000,
  maxDepth: 500,
  maxSequence: 100_000,
  maxStringChars: 10_000_000,
  maxQuadratic: 5_000,
  sliceMs: 20,
};
export type ExpressionLimits = typeof EXPRESSION_LIMITS;

/**
 * Which node data fields hold an expression or a template, per node type. `templateTrees` are
 * fields whose every string leaf is a template (an object of headers, a JSON body, or a string).
 * An expression field listed in `treesOtherwise` is an expression when it is a string and a
 * template tree when it is an object or array (`"input": { "customer": "{{ item.name }}" }`).
 */
const FIELDS: Record<
  string,
  { expressions: string[]; templates: string[]; templateTrees?: string[]; treesOtherwise?: string[] }
> = {
  transform: { expressions: ['expression'], templates: ['template'] },
  if: { expressions: ['condition'], templates: [] },
  while: { expressions: ['condition'], templates: [] },
  output: { expressions: ['value'], templates: [] },
  end: { expressions: ['value'], templates: [] },
  neuron: { expressions: [], templates: ['message'] },
  classify: { expressions: [], templates: ['input'] },
  human: { expressions: [], templates: ['title', 'prompt'] },
  pathway: { expressions: ['input'], templates: [], treesOtherwise: ['input'] },
  // `item` and `index` are in the context of message and input (one render per item).
  map: { expressions: ['items', 'input'], templates: ['message'], treesOtherwise: ['input'] },
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
    ...(f.treesOtherwise ?? []).flatMap((key) => (typeof data[key] === 'string' ? [] : stringLeaves(data[key], key))),
  ];
}

/** The expressions inside a template's `{{ … }}` placeholders. */
export function templateExpressions(template: string): string[] {
  return templateParts(template).flatMap((p) => ('expression' in p ? [p.expression] : []));
}

/** An expression error's message with its position and, for the usual mistakes, what to write instead. */
function describeExpressionError(e: unknown): string {
  const err = e as { message?: string; position?: number; code?: string };
  const hint = expressionHint(err);
  return `${err.message ?? 'invalid expression'}${err.position !== undefined ? ` (at character ${err.position})` : ''}${hint ? `; ${hint}` : ''}`;
}

/** The syntax error of an expression, after normalisation (null when it parses). */
export function syntaxError(expression: string): string | null {
  if (!expression.trim()) return null;
  let ast: unknown;
  try {
    ast = jsonata(normalizeExpression(expression)).ast();
  } catch (e) {
    return describeExpressionError(e);
  }
  return (
    regexLiterals(ast)
      .map((r) => {
        const problem = regexProblem(r.value);
        return problem && `${problem} (at character ${r.position})`;
      })
      .find((p) => p) ?? null
  );
}

/** The nodes of a parsed JSONata expression that pass `test` (a regex literal, an order-by step). */
function astNodes(node: unknown, test: (n: Record<string, unknown>) => boolean, out: Record<string, unknown>[] = []) {
  if (Array.isArray(node)) for (const n of node) astNodes(n, test, out);
  else if (typeof node === 'object' && node !== null && !(node instanceof RegExp)) {
    const n = node as Record<string, unknown>;
    if (test(n)) out.push(n);
    for (const v of Object.values(n)) astNodes(v, test, out);
  }
  return out;
}

/** The regular expression literals of a parsed JSONata expression (nodes `{ type: 'regex', value }`). */
function regexLiterals(ast: unknown): { value: RegExp; position: number }[] {
  return astNodes(ast, (n) => n.type === 'regex' && n.value instanceof RegExp).map((n) => ({
    value: n.value as RegExp,
    position: typeof n.position === 'number' ? n.position : 0,
  }));
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
  const trees = [...(f.templateTrees ?? []), ...(f.treesOtherwise ?? []).filter((k) => typeof data[k] !== 'string')];
  for (const key of trees) {
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

/** JSONata's own implementations of the functions wrapped below (a compiled expression's bindings read them by name). */
type Native = (this: unknown, ...args: unknown[]) => unknown;
const natives = Promise.all(
  ['toMillis', 'sort'].map(async (name) => {
    const f = (await jsonata(`$${name}`).evaluate({})) as { implementation: Native };
    return [name, f.implementation] as const;
  }),
).then((pairs) => new Map(pairs));

/**
 * JSONata's `$sort` and `$distinct` cost the square of their input in one step (a merge that copies
 * with `slice(1)` per item; a pairwise deep comparison), which the time box cannot interrupt:
 * `$sort` of 100,000 numbers exhausts the heap. Without a function, `$sort` sorts natively; with
 * one (each call a step, time-boxed) it takes at most `maxQuadratic` items; `$distinct` is linear.
 */
function boundedSort(native: Native, limits: ExpressionLimits) {
  return async function (this: unknown, arr?: unknown[], comparator?: unknown): Promise<unknown> {
    if (!Array.isArray(arr) || arr.length <= 1 || comparator !== undefined) {
      if (Array.isArray(arr) && arr.length > limits.maxQuadratic)
        throw limitError(
          'L0003',
          `$sort with a function takes at most ${limits.maxQuadratic} items (got ${arr.length})`,
        );
      return native.call(this, arr, comparator);
    }
    const numbers = arr.every((v) => typeof v === 'number');
    // Mixed or other items: JSONata's own error (D3070), thrown before any work.
    if (!numbers && !arr.every((v) => typeof v === 'string')) return native.call(this, arr);
    // Ascending and stable, as JSONata's merge with `a > b`.
    return [...(arr as (number | string)[])].sort((a, b) => (a > b ? 1 : a < b ? -1 : 0));
  };
}

/** A key equal for two values exactly when JSONata's deep equality holds (functions and lambdas by identity). */
function equalityKey(v: unknown, ids: Map<unknown, number>): string {
  if (v === undefined) return 'u';
  if (typeof v === 'string') return JSON.stringify(v);
  // A function, or a JSONata lambda (an object that holds its environment, which refers to itself).
  if (
    typeof v === 'function' ||
    (typeof v === 'object' && v !== null && ('_jsonata_lambda' in v || '_jsonata_function' in v))
  ) {
    if (!ids.has(v)) ids.set(v, ids.size);
    return `f${ids.get(v)}`;
  }
  if (v === null || typeof v !== 'object') return `${typeof v}:${String(v)}`;
  if (Array.isArray(v)) return `[${v.map((x) => equalityKey(x, ids)).join(',')}]`;
  const keys = Object.getOwnPropertyNames(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${equalityKey((v as Record<string, unknown>)[k], ids)}`).join(',')}}`;
}

/** `$distinct` in one pass over its items (keys for deep equality) instead of JSONata's pairwise comparison. */
function linearDistinct(arr?: unknown): unknown {
  if (!Array.isArray(arr) || arr.length <= 1) return arr;
  const ids = new Map<unknown, number>();
  const seen = new Set<string>();
  const out = arr.filter((v) => {
    const key = equalityKey(v, ids);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  // A sequence stays one (JSONata unwraps a sequence of one item), as the native function keeps it.
  if ((arr as { sequence?: boolean }).sequence) Object.assign(out, { sequence: true });
  return out;
}

/** A clear evaluation error (JSONata's own are plain objects with a code and a message). */
function limitError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

/** `$pad`, as JSONata's, with the width bounded (JSONata builds the padding before any check). */
function boundedPad(limits: ExpressionLimits) {
  return (str: string | undefined, width: number, char?: string): string | undefined => {
    if (str === undefined) return undefined;
    const w = Math.trunc(width);
    if (Math.abs(w) > limits.maxStringChars)
      throw limitError('L0002', `$pad: width ${w} is over the limit of ${limits.maxStringChars} characters`);
    const fill = char === undefined || char.length === 0 ? ' ' : char;
    const padLength = Math.abs(w) - [...str].length;
    if (padLength <= 0) return str;
    const unit = [...fill];
    const padding = [...fill.repeat(Math.ceil(padLength / unit.length))].slice(0, padLength).join('');
    return w > 0 ? str + padding : padding + str;
  };
}

/**
 * Evaluates a JSONata expression within EXPRESSION_LIMITS, with JSONata's own guardrails
 * (`timeout`, `stack` and `sequence` options: errors D1012, D1011 and D2014/D2015), regular
 * expressions on the linear engine, and each step's result checked for size; throws with the
 * reason on an error, a timeout, runaway recursion or a limit.
 */
export async function evaluateTimeboxed(
  expression: string,
  context: Record<string, unknown>,
  overrides: Partial<ExpressionLimits> = {},
): Promise<unknown> {
  const limits: ExpressionLimits = { ...EXPRESSION_LIMITS, ...overrides };
  const budget: RegexBudget = { spent: 0, limit: REGEX_LIMITS.costPerEvaluation };
  const options = {
    timeout: limits.timeoutMs,
    stack: limits.maxDepth,
    sequence: limits.maxSequence,
    RegexEngine: linearRegexEngine(budget) as unknown as RegExpConstructor,
  };
  try {
    const expr = jsonata(normalizeExpression(expression), options);
    // An order-by step (`^( )`) sorts with JSONata's quadratic merge: its sequences stay small.
    // (JSONata reads `options` when it evaluates.)
    const maxItems = astNodes(expr.ast(), (n) => n.type === 'sort').length
      ? Math.min(limits.maxQuadratic, limits.maxSequence)
      : limits.maxSequence;
    options.sequence = maxItems;
    const native = await natives;
    const toMillis = native.get('toMillis')!;
    // $toMillis with a picture builds a backtracking pattern from it: run it on the linear engine.
    expr.registerFunction(
      'toMillis',
      function (this: unknown, timestamp?: string, picture?: string) {
        if (picture === undefined) return toMillis.call(this, timestamp);
        return withLinearRegExp(budget, () => toMillis.call(this, timestamp, picture));
      },
      '<s-s?:n>',
    );
    expr.registerFunction('pad', boundedPad(limits), '<s-ns?:s>');
    expr.registerFunction('sort', boundedSort(native.get('sort')!, limits), '<af?:a>');
    expr.registerFunction('distinct', linearDistinct, '<x:x>');
    // Every step's result: a string or an array over the limit fails the evaluation there.
    let slice = performance.now();
    expr.assign(Symbol.for('jsonata.__evaluate_exit') as unknown as string, async (...args: unknown[]) => {
      const result = args[3];
      if (typeof result === 'string' && result.length > limits.maxStringChars)
        throw limitError(
          'L0001',
          `a string of ${result.length} characters is over the limit of ${limits.maxStringChars}`,
        );
      if (Array.isArray(result) && result.length > maxItems)
        throw limitError('L0001', `an array of ${result.length} items is over the limit of ${maxItems}`);
      // JSONata's steps chain promises that never leave the microtask queue: a long evaluation
      // gives the event loop back every sliceMs, so the worker's other activities, heartbeats and
      // timers run beside it (only one step's cost is ever held, and each step is bounded above).
      if (performance.now() - slice > limits.sliceMs) {
        await new Promise<void>((r) => setImmediate(r));
        slice = performance.now();
      }
    });
    return await expr.evaluate(context);
  } catch (e) {
    const hint = expressionHint(e as { code?: string; message?: string });
    // JSONata throws plain objects ({ code, message, position }); the message gets the hint.
    if (hint && typeof e === 'object' && e !== null) (e as { message?: string }).message += `; ${hint}`;
    throw e;
  }
}
