import jsonata from 'jsonata';
import { describe, expect, it } from 'vitest';
import { evaluateTimeboxed, syntaxError, templateExpressions } from '../../src/expressions/engine.js';
import { normalizeExpression, normalizeTemplate, templateParts } from '../../src/expressions/normalize.js';
import {
  compileLinear,
  linearRegexEngine,
  REGEX_LIMITS,
  RegexRefused,
  withLinearRegExp,
} from '../../src/expressions/regex.js';

const budget = () => ({ spent: 0, limit: REGEX_LIMITS.costPerEvaluation });
const Engine = linearRegexEngine(budget());
/** A result as a run stores it (JSONata's sequences carry extra properties, such as a bounded `push`). */
const plain = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

describe('the linear regex engine behind JSONata', { timeout: 60_000 }, () => {
  it('gives what the backtracking engine gives for $match, $contains, $replace and $split (flags i, m, g)', async () => {
    const context = { s: 'John Smith\njane doe\nÉmile Zola 😀 x', csv: 'a1b22c333d', n: 'x-10, y-200' };
    for (const expression of [
      '$match(s, /(\\w+)\\s(\\w+)/)',
      '$match(s, /^j\\w+/im)',
      '$match(s, /^j\\w+/m)',
      '$match(s, /zola/i)',
      '$match(s, /(o)(x)?/)',
      '$match(s, /x$/)',
      '$match(s, /😀 (x)/)',
      '$match(n, /(?<k>[a-z])-(?<v>\\d+)/)',
      '$contains(s, /SMITH/i)',
      '$contains(s, /SMITH/)',
      '$replace(s, /(\\w+)\\s(\\w+)/, "$2, $1")',
      '$replace(s, /o/, "0", 2)',
      '$replace(csv, /\\d+/, function($m) { $string($length($m.match)) })',
      '$split(csv, /\\d+/)',
      '$split(csv, /\\d+/, 2)',
      '$split(s, /\\n/)',
      '$match(csv, /[a-z]/).index',
    ]) {
      const native = plain(await jsonata(expression).evaluate(context));
      expect(plain(await evaluateTimeboxed(expression, context)), expression).toEqual(native);
    }
  });

  it('honours lastIndex for global patterns and reports groups, indexes in UTF-16 units, unmatched groups as undefined', () => {
    const re = new Engine(/a(b)?/g);
    const text = 'é😀a xab';
    const first = re.exec(text);
    expect(first?.index).toBe(3);
    expect([...first!]).toEqual(['a', undefined]);
    expect(re.lastIndex).toBe(4);
    const second = re.exec(text);
    expect([...second!]).toEqual(['ab', 'b']);
    expect(second?.index).toBe(6);
    expect(re.exec(text)).toBeNull();
    expect(re.lastIndex).toBe(0);
    // Not global: every exec starts at 0.
    const once = new Engine('b', 'i');
    expect(once.exec('aBcB')?.index).toBe(1);
    expect(once.exec('aBcB')?.index).toBe(1);
  });

  it('supports the s flag (dot matches newline) and inline flags', () => {
    expect(new Engine('a.b', 's').test('a\nb')).toBe(true);
    expect(new Engine('a.b', '').test('a\nb')).toBe(false);
    expect(new Engine('(?i)abc', '').test('ABC')).toBe(true);
  });

  it('a zero-length match still stops JSONata with its own error (D1004), as with RegExp', async () => {
    const context = { s: 'abc' };
    const native = await jsonata('$match(s, /x*/)')
      .evaluate(context)
      .catch((e: { code: string }) => e.code);
    await expect(evaluateTimeboxed('$match(s, /x*/)', context)).rejects.toMatchObject({ code: native });
  });

  it('runs catastrophic patterns in linear time', async () => {
    const t0 = performance.now();
    expect(await evaluateTimeboxed('$contains(s, /^(a+)+$/)', { s: `${'a'.repeat(50_000)}!` })).toBe(false);
    expect(await evaluateTimeboxed('$contains(s, /^(a|aa)+$/)', { s: `${'a'.repeat(5_000)}!` })).toBe(false);
    expect(await evaluateTimeboxed('$contains(s, /(x+x+)+y/)', { s: 'x'.repeat(5_000) })).toBe(false);
    // Backtracking would take longer than the universe's age on these; linear takes milliseconds. The
    // bound is loose so a loaded CI machine does not fail it (speed itself is measured in npm run bench).
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it('refuses backreferences and lookaround, at save (syntaxError) and at run, with the reason', async () => {
    for (const [expression, reason] of [
      ['$match(s, /(a)\\1/)', 'invalid escape sequence'],
      ['$match(s, /a(?=b)/)', 'unsupported Perl syntax'],
      ['$match(s, /a(?!b)/)', 'unsupported Perl syntax'],
      ['$match(s, /(?<=a)b/)', ''],
    ]) {
      const err = syntaxError(expression);
      expect(err, expression).toMatch(/is not supported: .*linear-time engine.*\(at character \d+\)/);
      expect(err).toContain(reason);
      await expect(evaluateTimeboxed(expression, { s: 'ab' })).rejects.toThrow(/is not supported/);
    }
    expect(syntaxError('$match(s, /^(a+)+$/i)')).toBeNull();
    expect(syntaxError('{ "a": [$replace(s, /(?<word>\\w+)/, "<$1>")] }')).toBeNull();
    expect(() => compileLinear('a{1001}', '')).toThrow(RegexRefused);
  });

  it('bounds what one evaluation may spend on patterns (text length × program size)', async () => {
    const big = 'a1'.repeat(40_000);
    await expect(evaluateTimeboxed('$contains(s, /(.*[a-z]\\d?){50}$/)', { s: big })).rejects.toThrow(
      /too costly for one evaluation/,
    );
    // Small texts under the same pattern are fine; many calls add up against one budget.
    expect(await evaluateTimeboxed('$contains(s, /(.*[a-z]\\d?){50}$/)', { s: 'a1'.repeat(60) })).toBe(true);
    await expect(
      evaluateTimeboxed(
        '[1..2000].$contains($$.s, /(.*[a-z]\\d?){50}$/)',
        { s: 'a1'.repeat(60) },
        { timeoutMs: 20_000 },
      ),
    ).rejects.toThrow(/too costly/);
  });

  it('parses $toMillis pictures linearly and as JSONata does, with the global RegExp restored after', async () => {
    const slow = { ts: `${'a'.repeat(200)}1`, picture: '[MNn][FNn][MNn][FNn][MNn][FNn]' };
    const t0 = performance.now();
    await evaluateTimeboxed('$toMillis(ts, picture)', slow).catch(() => undefined);
    // Exponential parsing takes hours on this picture; the bound is loose for a loaded machine.
    expect(performance.now() - t0).toBeLessThan(5_000);
    for (const [ts, picture] of [
      ['2024-02-29', '[Y0001]-[M01]-[D01]'],
      ['29 February 2024 10:30', '[D1] [MNn] [Y0001] [H01]:[m01]'],
      ['2018-02-01T09:42:13.123+0000', undefined],
    ]) {
      const context = { ts, picture };
      const expression = picture === undefined ? '$toMillis(ts)' : '$toMillis(ts, picture)';
      expect(plain(await evaluateTimeboxed(expression, context))).toEqual(
        plain(await jsonata(expression).evaluate(context)),
      );
    }
    expect(RegExp).toBe(/x/.constructor);
    expect(() =>
      withLinearRegExp(budget(), () => {
        throw new Error('inner');
      }),
    ).toThrow('inner');
    expect(RegExp).toBe(/x/.constructor);
  });
});

describe('the other costs of one expression step', { timeout: 60_000 }, () => {
  it('$pad pads as JSONata does and refuses a width over the string limit before building it', async () => {
    for (const expression of [
      '$pad("x", 5)',
      '$pad("x", -5, "#")',
      '$pad("abc", 8, "xy")',
      '$pad("😀", 3, "é")',
      '$pad("abcdef", 3)',
    ]) {
      expect(plain(await evaluateTimeboxed(expression, {})), expression).toEqual(
        plain(await jsonata(expression).evaluate({})),
      );
    }
    await expect(evaluateTimeboxed('$pad("x", 1e9)', {})).rejects.toThrow(/\$pad: width 1000000000 is over the limit/);
  });

  it('a range or a sequence over the limit fails (D2014 / D2015), as does a string that doubles step by step', async () => {
    await expect(evaluateTimeboxed('[1..1e9]', {})).rejects.toMatchObject({ code: 'D2014' });
    await expect(evaluateTimeboxed('[1..5e6]', {})).rejects.toMatchObject({ code: 'D2015' });
    await expect(
      evaluateTimeboxed('$count(input)', { input: Array.from({ length: 200_000 }, (_, i) => i) }),
    ).rejects.toThrow(/an array of 200000 items is over the limit of 100000/);
    await expect(evaluateTimeboxed('$count([1..1000])', {}, { maxSequence: 100 })).rejects.toMatchObject({
      code: 'D2015',
    });
    await expect(
      evaluateTimeboxed('( $f := function($s, $n) { $n = 0 ? $s : $f($s & $s, $n - 1) }; $length($f("a", 40)) )', {}),
    ).rejects.toThrow(/a string of \d+ characters is over the limit of 10000000/);
    expect(await evaluateTimeboxed('$count([1..1000])', {})).toBe(1000);
  });

  it('deep recursion in a user function stops at the depth limit with a clear error', async () => {
    await expect(evaluateTimeboxed('( $f := function($n) { 1 + $f($n + 1) }; $f(0) )', {})).rejects.toMatchObject({
      code: 'D1011',
    });
  });

  it("$sort and $distinct give JSONata's results in linear or n log n time; quadratic forms are bounded", async () => {
    const context = {
      n: [3, 1, 2, 1, 10, -4.5],
      s: ['b', 'a', 'B', 'é', 'a', ''],
      o: [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, { a: 1 }, { a: '1' }, null, 1, '1', [1], [1], true, true],
    };
    for (const expression of [
      '$sort(n)',
      '$sort(s)',
      '$sort(n, function($a, $b) { $a < $b })',
      '$distinct(n)',
      '$distinct(s)',
      '$distinct(o)',
      '$distinct([1])',
      '$distinct(n[$ > 5])',
      'n^($)',
      'o[$type($) = "object" and $type(a) = "number"]^(a)',
    ]) {
      const native = plain(await jsonata(expression).evaluate(context));
      expect(plain(await evaluateTimeboxed(expression, context)), expression).toEqual(native);
    }
    await expect(evaluateTimeboxed('$sort(["a", 1])', {})).rejects.toMatchObject({ code: 'D3070' });
    expect(
      await evaluateTimeboxed('( $f := function($x) { $x }; $count($distinct([$f, $f, $uppercase, $uppercase])) )', {}),
    ).toBe(2);
    const t0 = performance.now();
    // JSONata's own $sort exhausts the heap on 100,000 numbers, and $distinct takes seconds.
    expect(await evaluateTimeboxed('$count($sort([1..100000]))', {})).toBe(100_000);
    expect(await evaluateTimeboxed('$count($distinct([1..20000].{ "k": $ }))', {})).toBe(20_000);
    // Loose for a loaded machine: the quadratic forms take minutes or exhaust the heap.
    expect(performance.now() - t0).toBeLessThan(30_000);
    await expect(evaluateTimeboxed('$sort([1..6000], function($a, $b) { $a < $b })', {})).rejects.toThrow(
      /\$sort with a function takes at most 5000 items/,
    );
    // An order-by step holds sequences of at most maxQuadratic items.
    await expect(evaluateTimeboxed('[1..6000]^($)', {})).rejects.toMatchObject({ code: 'D2015' });
    expect(await evaluateTimeboxed('$count([1..4000]^(-$))', {})).toBe(4000);
  });

  it('a long evaluation gives the event loop back between steps', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      await expect(
        evaluateTimeboxed('( $loop := function($n) { $n > 0 ? $loop($n) : 0 }; $loop(1) )', {}, { timeoutMs: 300 }),
      ).rejects.toMatchObject({ code: 'D1012' });
    } finally {
      clearInterval(timer);
    }
    // Held for 300 ms in one piece, the timer would not have run at all.
    expect(ticks).toBeGreaterThan(5);
  });

  it('templates are cut into placeholders in one pass, as the lazy pattern reads them', () => {
    for (const t of [
      'a {{ x }} b {{y}}',
      '{{ a }}}} {{',
      '{{{ a }}',
      'x {{ a {{ b }} c }}',
      '{{}}',
      '{{ a',
      'plain',
      '',
    ]) {
      expect(templateExpressions(t), t).toEqual([...t.matchAll(/\{\{([\s\S]*?)\}\}/g)].map((m) => m[1]));
      expect(
        templateParts(t)
          .map((p) => ('text' in p ? p.text : `{{${p.expression}}}`))
          .join(''),
      ).toBe(t);
    }
    expect(normalizeTemplate('Hi {{  a == 1  }} and {{ b && c }}')).toBe('Hi {{  a = 1  }} and {{ b and c }}');
  });

  it('reading templates and JavaScript-style operators stays linear in the text', () => {
    const t0 = performance.now();
    normalizeTemplate('{{'.repeat(500_000));
    normalizeTemplate(`{{${' '.repeat(500_000)}x}}`);
    normalizeExpression('a && '.repeat(100_000));
    normalizeExpression('!('.repeat(100_000));
    // Quadratic reading of these half-million-character texts takes hours; linear takes milliseconds.
    // The bound is loose so a loaded CI machine does not fail it.
    expect(performance.now() - t0).toBeLessThan(20_000);
    // Past 32 nested `!`, the rest is left as written (JSONata reports it).
    expect(normalizeExpression('!!a')).toBe('$not($not(a))');
    expect(normalizeExpression(`${'!'.repeat(40)}a`)).toMatch(/^(\$not\(){32}!{8}a\){32}$/);
  });
});
