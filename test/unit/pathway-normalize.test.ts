import { describe, expect, it } from 'vitest';
import { evaluateTimeboxed, syntaxError } from '../../src/expressions/engine.js';
import { normalizeExpression, normalizeTemplate } from '../../src/expressions/normalize.js';
import { compileGraph } from '../../src/pathways/compile.js';
import { validateGraph } from '../../src/pathways/validate.js';

const cases: [string, string][] = [
  ['input.flag == true', 'input.flag = true'],
  ['input.flag === true', 'input.flag = true'],
  ['input.n !== 3', 'input.n != 3'],
  ['input.n != 3', 'input.n != 3'],
  ['input.a > 1 && input.b < 2', 'input.a > 1 and input.b < 2'],
  ['input.a||input.b', 'input.a or input.b'],
  ['!input.done', '$not(input.done)'],
  ['!(input.a && input.b)', '$not(input.a and input.b)'],
  ['!!input.x', '$not($not(input.x))'],
  ['!$exists(input.x) || input.x == ""', '$not($exists(input.x)) or input.x = ""'],
  ['input.items[0].ok == true', 'input.items[0].ok = true'],
  ['!input.items[type="a"].ok', '$not(input.items[type="a"].ok)'],
];

describe('expressions as people write them', () => {
  it.each(cases)('%s → %s', (written, jsonata) => {
    expect(normalizeExpression(written)).toBe(jsonata);
    expect(normalizeExpression(jsonata)).toBe(jsonata); // idempotent
    expect(syntaxError(written)).toBeNull();
  });

  it('strings, backtick names, comments and regular expressions are left untouched', () => {
    for (const s of [
      'input.s = "a == b && !c"',
      "input.s = 'x || y'",
      'input.`a==b` = 1',
      '/* a == b */ input.x',
      '$match(input.s, /a==b|c&&d/i)',
      'input.a / 2 = 1',
    ]) {
      expect(normalizeExpression(s)).toBe(s);
    }
  });

  it('valid JSONata is unchanged', () => {
    for (const s of ['input.a = 1 and $not(input.b)', 'input.n * 2', '$count(input.items) > 0 ? "many" : "none"']) {
      expect(normalizeExpression(s)).toBe(s);
    }
  });

  it('evaluates JavaScript-style conditions as meant', async () => {
    const ctx = { input: { flag: true, done: false, amount: 150, items: [{ ok: true }] } };
    expect(await evaluateTimeboxed('input.flag == true && !input.done', ctx)).toBe(true);
    expect(await evaluateTimeboxed('input.amount > 100 || input.flag === false', ctx)).toBe(true);
    expect(await evaluateTimeboxed('!(input.amount > 100)', ctx)).toBe(false);
    expect(await evaluateTimeboxed('input.items[0].ok !== true', ctx)).toBe(false);
  });

  it('templates are normalised placeholder by placeholder', () => {
    expect(normalizeTemplate('Refund {{ input.amount }}? {{ input.vip == true }}')).toBe(
      'Refund {{ input.amount }}? {{ input.vip = true }}',
    );
  });

  it('errors say what to write instead', async () => {
    expect(syntaxError('input.a = = 1')).toMatch(/expressions are JSONata/);
    await expect(
      evaluateTimeboxed('input.first + " " + input.last', { input: { first: 'a', last: 'b' } }),
    ).rejects.toThrow(/join strings use &/);
  });

  it('validate echoes the normalised form and compile keeps it', () => {
    const g = {
      nodes: [
        { id: 's', type: 'start' },
        { id: 'check', type: 'if', data: { condition: 'input.flag == true' } },
        { id: 'yes', type: 'output' },
        { id: 'no', type: 'output' },
      ],
      edges: [
        { source: 's', target: 'check' },
        { source: 'check', target: 'yes', handle: 'true' },
        { source: 'check', target: 'no', handle: 'false' },
      ],
    };
    const v = validateGraph(g);
    expect(v.valid).toBe(true);
    expect(v.warnings).toContain(
      'node "check" (if): data.condition: "input.flag == true" is read as "input.flag = true"',
    );
    const c = compileGraph(g);
    expect(c.errors).toEqual([]);
    expect(c.compiled.nodes[1].data.condition).toBe('input.flag = true');
  });
});
