/**
 * Conditions as people write them. Pathway expressions are JSONata, but most people write a
 * condition the way JavaScript does: `input.flag == true && !input.done`. JSONata has none of
 * `==`, `===`, `!==`, `&&`, `||` or a unary `!` (each is a syntax error there), so rewriting them
 * never changes an expression that was valid JSONata:
 *
 * | written | JSONata |
 * |---|---|
 * | `==`, `===` | `=` |
 * | `!==` | `!=` |
 * | `&&` | `and` |
 * | `\|\|` | `or` |
 * | `!x`, `!(a and b)` | `$not(x)`, `$not(a and b)` |
 *
 * String literals, backtick names, comments and regular expressions are copied untouched. The
 * rewrite is idempotent: a normalised expression comes back unchanged.
 */

/** Characters after which a `/` starts a regular expression rather than dividing. */
const BEFORE_REGEX = new Set(['', '(', '[', '{', ',', ':', '?', '=', '<', '>', '&', '|', '+', '-', '*', '%', ';', '~']);

/** The index just past the quoted run that starts at `i` (a backslash escapes in '…' and "…"). */
function endOfQuoted(src: string, i: number): number {
  const q = src[i];
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === '\\' && q !== '`') j++;
    else if (src[j] === q) return j + 1;
  }
  return src.length;
}

/** The index just past the regular expression literal (and its flags) that starts at `i`. */
function endOfRegex(src: string, i: number): number {
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === '\\') j++;
    else if (src[j] === '/') {
      let k = j + 1;
      while (k < src.length && /[a-z]/i.test(src[k])) k++;
      return k;
    }
  }
  return src.length;
}

/** The index just past the bracketed run (`(…)`, `[…]` or `{…}`) that starts at `i`, quotes respected. */
function endOfBracket(src: string, i: number): number {
  const close: Record<string, string> = { '(': ')', '[': ']', '{': '}' };
  const stack: string[] = [];
  for (let j = i; j < src.length; j++) {
    const c = src[j];
    if (c === '"' || c === "'" || c === '`') j = endOfQuoted(src, j) - 1;
    else if (close[c]) stack.push(close[c]);
    else if (c === stack[stack.length - 1]) {
      stack.pop();
      if (stack.length === 0) return j + 1;
    }
  }
  return src.length;
}

/** The index just past the operand of a unary `!` at `i - 1`: a path with calls, filters and brackets, or another `!`. */
function endOfOperand(src: string, i: number): number {
  let j = i;
  for (;;) {
    while (j < src.length && /\s/.test(src[j])) j++;
    if (src[j] !== '!' || src[j + 1] === '=') break;
    j++; // another `!`: its operand is this one's
  }
  const start = j;
  while (j < src.length) {
    const c = src[j];
    if (/[\w$.]/.test(c)) j++;
    else if (c === '(' || c === '[' || c === '{') j = endOfBracket(src, j);
    else if ((c === '"' || c === "'" || c === '`') && (j === start || src[j - 1] === '.')) j = endOfQuoted(src, j);
    else break;
  }
  return j;
}

/**
 * How deep `!` operands nest before the rest is left as written (each level rescans its operand:
 * without a bound, `!(!(!(…` costs the square of its length; JSONata then reports the `!`).
 */
const MAX_NOT_DEPTH = 32;

/** Rewrites JavaScript-style operators into JSONata; see the module comment. */
export function normalizeExpression(src: string, depth = 0): string {
  // The output in pieces: `word` trims only the last pieces, never the whole text (quadratic).
  const out: string[] = [];
  let prev = ''; // the last character emitted that is not white space
  const emit = (s: string) => {
    out.push(s);
    const t = s.trimEnd();
    if (t) prev = t[t.length - 1];
  };
  const word = (w: string) => {
    while (out.length && !out[out.length - 1].trimEnd()) out.pop();
    if (out.length) out[out.length - 1] = out[out.length - 1].trimEnd();
    emit(`${out.length ? ' ' : ''}${w} `);
  };
  for (let i = 0; i < src.length;) {
    const c = src[i];
    const two = src.slice(i, i + 2);
    const three = src.slice(i, i + 3);
    if (c === '"' || c === "'" || c === '`') {
      const j = endOfQuoted(src, i);
      emit(src.slice(i, j));
      i = j;
    } else if (two === '/*') {
      const end = src.indexOf('*/', i + 2);
      const j = end < 0 ? src.length : end + 2;
      out.push(src.slice(i, j));
      i = j;
    } else if (c === '/' && BEFORE_REGEX.has(prev)) {
      const j = endOfRegex(src, i);
      emit(src.slice(i, j));
      i = j;
    } else if (three === '===' || three === '!==') {
      emit(three === '===' ? '=' : '!=');
      i += 3;
    } else if (two === '==' || two === '!=') {
      emit(two === '==' ? '=' : '!=');
      i += 2;
    } else if (two === '&&' || two === '||') {
      word(two === '&&' ? 'and' : 'or');
      i += 2;
      while (i < src.length && /\s/.test(src[i])) i++;
    } else if (c === '!') {
      if (depth >= MAX_NOT_DEPTH) return out.join('') + src.slice(i);
      const j = endOfOperand(src, i + 1);
      let operand = normalizeExpression(src.slice(i + 1, j).trim(), depth + 1);
      // `!(a and b)`: the parentheses become the call's own.
      if (operand.startsWith('(') && endOfBracket(operand, 0) === operand.length) operand = operand.slice(1, -1);
      emit(`$not(${operand})`);
      i = j;
    } else {
      emit(c);
      i++;
    }
  }
  return out.join('');
}

/**
 * A template cut into its literal text and its `{{ … }}` placeholders (`expression` is what is
 * between the braces): each placeholder ends at the first `}}` after its `{{`, as the lazy pattern
 * `/\{\{([\s\S]*?)\}\}/g` reads it, but in one pass (that pattern rescans the rest of the text from
 * every `{{` without a `}}`: quadratic in the template).
 */
export function templateParts(template: string): ({ text: string } | { expression: string })[] {
  const parts: ({ text: string } | { expression: string })[] = [];
  let at = 0;
  for (;;) {
    const open = template.indexOf('{{', at);
    const close = open < 0 ? -1 : template.indexOf('}}', open + 2);
    // No `}}` after this `{{`: none after any later `{{` either; the rest is text.
    if (close < 0) break;
    if (open > at) parts.push({ text: template.slice(at, open) });
    parts.push({ expression: template.slice(open + 2, close) });
    at = close + 2;
  }
  if (at < template.length) parts.push({ text: template.slice(at) });
  return parts;
}

/** Rewrites the `{{ … }}` placeholders of a template (the text around them is left as it is). */
export function normalizeTemplate(template: string): string {
  return templateParts(template)
    .map((p) => {
      if ('text' in p) return p.text;
      const expr = p.expression;
      const lead = expr.slice(0, expr.length - expr.trimStart().length);
      const trail = expr.slice(expr.trimEnd().length);
      return `{{${lead}${normalizeExpression(expr.trim())}${trail}}}`;
    })
    .join('');
}

/**
 * What to write instead, for the JSONata errors people meet most; appended to the error message.
 * JSONata's codes: T2001/T2002 arithmetic on a non-number, S01xx/S02xx syntax.
 */
export function expressionHint(err: { code?: string; message?: string }): string | null {
  const code = err.code ?? '';
  const msg = err.message ?? '';
  if (code === 'T2001' || code === 'T2002')
    return 'to join strings use & (input.first & " " & input.last); + adds numbers only';
  if (/symbol = cannot/.test(msg)) return 'compare with = (or ==), combine with and / or (or && / ||)';
  if (code.startsWith('S02') || code.startsWith('S01'))
    return 'expressions are JSONata: compare with = or !=, combine with and / or, test presence with $exists(x), join strings with &';
  return null;
}
