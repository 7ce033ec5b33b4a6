import { RE2JS } from 're2js';

/**
 * Regular expressions of tenant expressions run on a linear-time engine (RE2, the pure-JS port
 * `re2js`), never on V8's backtracking one: `/^(a+)+$/` over a long text costs one pass, not an
 * exponential number. JSONata's parser turns `/…/flags` literals into RegExp objects; the
 * evaluator builds its matcher with `options.RegexEngine`, which `linearRegexEngine` provides
 * (`lastIndex` and `exec`, the protocol JSONata uses for $match, $contains, $replace and $split).
 *
 * A pass is linear in the text, with a factor of the pattern's program size; one evaluation may
 * spend at most `REGEX_LIMITS.costPerEvaluation` (characters scanned × program size) in total, so
 * a large pattern over a large text fails clearly instead of holding the process (measured worst
 * case: ~150 ns per unit on the NFA path, so the default is well under a second).
 *
 * RE2 has no backreferences and no lookaround: a pattern that uses them is refused when the graph
 * is saved (`regexProblem`), and fails its node at run time (a `$eval` of run data) with the same
 * reason. Semantics otherwise follow JavaScript for JSONata's flags `i` and `m` (and the implied
 * `g`); `.` does not match `\n`, `\s` and `\w` are ASCII classes as in RE2.
 */

/** What one evaluation may spend on regular expressions (characters scanned × program size). */
export const REGEX_LIMITS = { costPerEvaluation: 5_000_000, maxProgramSize: 5_000 };

/** A pattern the linear engine cannot run, or one that would cost more than an evaluation may spend. */
export class RegexRefused extends Error {
  readonly code = 'R0001';
}

/** The RE2 program of a JavaScript pattern (source and flags), or a RegexRefused saying why not. */
export function compileLinear(source: string, flags: string): RE2JS {
  let re: RE2JS;
  try {
    // translateRegExp maps JavaScript syntax (named groups, \u{…}) to RE2's; the flags i, m and s
    // become RE2's inline flags (no RegExp is built: withLinearRegExp may have replaced it).
    const inline = [...'ims'].filter((f) => flags.includes(f)).join('');
    re = RE2JS.compile(`${inline ? `(?${inline})` : ''}${RE2JS.translateRegExp(source)}`);
  } catch (e) {
    const reason = (e as Error).message.replace(/^error parsing regexp: /, '');
    throw new RegexRefused(
      `regular expression /${source}/ is not supported: ${reason} (patterns run on a linear-time engine: no backreferences, no lookahead or lookbehind)`,
    );
  }
  if (re.programSize() > REGEX_LIMITS.maxProgramSize)
    throw new RegexRefused(
      `regular expression /${source}/ is too large (program size ${re.programSize()}, at most ${REGEX_LIMITS.maxProgramSize})`,
    );
  return re;
}

/** Why a JavaScript RegExp cannot run on the linear engine, or null when it can. */
export function regexProblem(re: RegExp): string | null {
  try {
    compileLinear(re.source, re.flags);
    return null;
  } catch (e) {
    if (e instanceof RegexRefused) return e.message;
    throw e;
  }
}

/** The part of RegExpExecArray that JSONata reads. */
interface ExecResult extends Array<string | undefined> {
  index: number;
  input: string;
}

/** A RegExp-like matcher (JSONata's `RegexEngine` protocol), backed by RE2. */
export interface LinearRegExp {
  lastIndex: number;
  readonly source: string;
  readonly flags: string;
  exec(text: string): ExecResult | null;
  test(text: string): boolean;
}

/** The spending of one evaluation: each scan adds characters scanned × program size. */
export interface RegexBudget {
  spent: number;
  limit: number;
}

/**
 * A RegExp-compatible constructor for JSONata's `RegexEngine` option. Each evaluation gets its own
 * (`budget` is that evaluation's). `new Engine(regexp)` compiles the literal on RE2; `exec` honours
 * `lastIndex` for global patterns, as JSONata's match iteration expects.
 */
export function linearRegexEngine(budget: RegexBudget): new (pattern: RegExp | string, flags?: string) => LinearRegExp {
  return class LinearRegex implements LinearRegExp {
    lastIndex = 0;
    readonly source: string;
    readonly flags: string;
    private readonly re: RE2JS;
    private readonly global: boolean;

    constructor(pattern: RegExp | string, flags?: string) {
      this.source = typeof pattern === 'string' ? pattern : pattern.source;
      this.flags = flags ?? (typeof pattern === 'string' ? '' : pattern.flags);
      this.global = /[gy]/.test(this.flags);
      this.re = compileLinear(this.source, this.flags);
    }

    exec(text: string): ExecResult | null {
      const from = this.global ? this.lastIndex : 0;
      if (from > text.length) {
        this.lastIndex = 0;
        return null;
      }
      const size = this.re.programSize();
      // Refuse before scanning what the evaluation cannot pay for; charge what was scanned after.
      if (budget.spent + (text.length - from) * size > budget.limit)
        throw new RegexRefused(
          `regular expression /${this.source}/ over ${text.length - from} characters is too costly for one evaluation (text length × pattern size at most ${budget.limit})`,
        );
      const m = this.re.matcher(text);
      const found = m.find(from);
      budget.spent += ((found ? m.end() : text.length) - from + 1) * size;
      if (!found) {
        if (this.global) this.lastIndex = 0;
        return null;
      }
      const out = [] as unknown as ExecResult;
      for (let g = 0; g <= m.groupCount(); g++) out.push(m.group(g) ?? undefined);
      out.index = m.start();
      out.input = text;
      if (this.global) this.lastIndex = m.end();
      return out;
    }

    test(text: string): boolean {
      return this.exec(text) !== null;
    }
  };
}

/**
 * Runs `fn` (synchronous) with the global `RegExp` replaced by the linear engine. Only for library
 * code that builds a pattern from tenant text with `new RegExp` and offers no hook (JSONata's
 * `$toMillis` picture parser, whose generated `([a-zA-Z]+)([a-zA-Z]+)…` patterns backtrack
 * polynomially); the swap lasts one synchronous call, so no other code can observe it.
 */
export function withLinearRegExp<T>(budget: RegexBudget, fn: () => T): T {
  const native = globalThis.RegExp;
  globalThis.RegExp = linearRegexEngine(budget) as unknown as RegExpConstructor;
  try {
    return fn();
  } finally {
    globalThis.RegExp = native;
  }
}
