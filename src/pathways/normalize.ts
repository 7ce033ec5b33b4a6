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
  while (j < src.length && /\s/.test(src[j])) j++;
  if (src[j] === '!' && src[j + 1] !== '=') return endOfOperand(src, j + 1);
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

/** Rewrites JavaScript-style operators into JSONata; see the module comment. */
export function normalizeExpression(src: string): string {
  let out = '';
  let prev = ''; // the last character emitted that is not white space
  const emit = (s: string) => {
    out += s;
    const t = s.trimEnd();
    if (t) prev = t[t.length - 1];
  };
  const word = (w: string) => {
    out = out.trimEnd();
    emit(`${out ? ' ' : ''}${w} `);
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
      out += src.slice(i, j);
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
      const j = endOfOperand(src, i + 1);
      let operand = normalizeExpression(src.slice(i + 1, j).trim());
      // `!(a and b)`: the parentheses become the call's own.
      if (operand.startsWith('(') && endOfBracket(operand, 0) === operand.length) operand = operand.slice(1, -1);
      emit(`$not(${operand})`);
      i = j;
    } else {
      emit(c);
      i++;
    }
  }
  return out;
}

/** Rewrites the `{{ … }}` placeholders of a template (the text around them is left as it is). */
export function normalizeTemplate(template: string): string {
  return template.replace(/\{\{([\s\S]*?)\}\}/g, (_, expr: string) => {
    const lead = /^\s*/.exec(expr)![0];
    const trail = /\s*$/.exec(expr)![0];
    return `{{${lead}${normalizeExpression(expr.trim())}${trail}}}`;
  });
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
