import { EvaluatorConfig } from '../../src/evaluations/schemas.js';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  csvRows,
  judgeMessage,
  judgeVerdict,
  parseCsv,
  parseJsonl,
  pathwayVerdict,
  percentile,
  schemaProblem,
  scoreBuiltin,
  scored,
  validateSchema,
  type EvaluatorSpec,
} from '../../src/evaluations/index.js';

const c = (output: unknown, expected?: unknown, input: unknown = 'q') => ({ input, expected, output });

describe('built-in evaluators', () => {
  it('exact compares text trimmed (case-sensitive by default) and JSON values canonically', () => {
    const s = { type: 'exact', name: 'exact', passThreshold: 1, caseSensitive: true } as const;
    expect(scoreBuiltin(s, c(' Paris\n', 'Paris')).score).toBe(1);
    expect(scoreBuiltin(s, c('paris', 'Paris')).score).toBe(0);
    expect(scoreBuiltin({ ...s, caseSensitive: false }, c('paris', 'Paris')).score).toBe(1);
    expect(scoreBuiltin(s, c({ b: 2, a: [1, { c: 3 }] }, { a: [1, { c: 3 }], b: 2 })).score).toBe(1);
    // A JSON answer against an expected object: the parsed values are compared.
    expect(scoreBuiltin(s, c('{ "a" : 1 }', { a: 1 })).score).toBe(1);
    expect(scoreBuiltin(s, c('{"a":1} and more', { a: 1 })).score).toBe(0);
    expect(scoreBuiltin(s, c({ a: 1 }, { a: 2 })).score).toBe(0);
    expect(scoreBuiltin(s, c('x', undefined)).reason).toMatch(/no expected/);
  });

  it('contains looks for the expected text (or a set value), case-insensitive by default', () => {
    const s = { type: 'contains', name: 'contains', passThreshold: 1, caseSensitive: false, value: null } as const;
    expect(scoreBuiltin(s, c('The capital is PARIS.', 'paris')).score).toBe(1);
    expect(scoreBuiltin(s, c('The capital is Lyon.', 'paris')).score).toBe(0);
    expect(scoreBuiltin({ ...s, value: 'capital' }, c('The capital', undefined)).score).toBe(1);
    expect(scoreBuiltin({ ...s, caseSensitive: true }, c('PARIS', 'paris')).score).toBe(0);
  });

  it('regex runs on the linear engine: a catastrophic pattern is fast, backreferences are refused', () => {
    const s = { type: 'regex', name: 'regex', passThreshold: 1, pattern: '^\\d{3}-\\d{4}$', flags: '' } as const;
    expect(scoreBuiltin(s, c('555-1234')).score).toBe(1);
    expect(scoreBuiltin(s, c('555-12345')).score).toBe(0);
    expect(scoreBuiltin({ ...s, pattern: 'hello', flags: 'i' }, c('say HELLO')).score).toBe(1);
    const t0 = Date.now();
    const evil = scoreBuiltin({ ...s, pattern: '^(a+)+$' }, c(`${'a'.repeat(50_000)}!`));
    expect(evil.score).toBe(0);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(scoreBuiltin({ ...s, pattern: '(a)\\1' }, c('aa')).reason).toMatch(/not supported/);
  });

  it('json_schema validates the output (a JSON string is parsed first) and names what breaks', () => {
    const schema = {
      type: 'object',
      required: ['name', 'age'],
      properties: { name: { type: 'string', minLength: 1 }, age: { type: 'integer', minimum: 0 } },
      additionalProperties: false,
    };
    const s = { type: 'json_schema', name: 'json_schema', passThreshold: 1, schema } as const;
    expect(scoreBuiltin(s, c('{"name":"Ada","age":36}')).score).toBe(1);
    expect(scoreBuiltin(s, c({ name: 'Ada', age: 36 })).score).toBe(1);
    const bad = scoreBuiltin(s, c({ name: '', age: -1, extra: true }));
    expect(bad.score).toBe(0);
    expect(bad.reason).toMatch(/too short|below minimum|no property/);
    expect(scoreBuiltin(s, c('not json')).reason).toMatch(/is string, expected object/);
    expect(validateSchema({ type: 'array', items: { enum: [1, 2] }, maxItems: 3 }, [1, 2, 3])).toEqual([
      '$[2]: is not one of enum',
    ]);
  });

  it('schemaProblem refuses unknown keywords, deep nesting and patterns the linear engine cannot run', () => {
    expect(schemaProblem({ type: 'object', properties: { a: { type: 'string' } } })).toBeNull();
    expect(schemaProblem({ $ref: '#/x' })).toMatch(/"\$ref" is not supported/);
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20; i++) deep = { type: 'array', items: deep };
    expect(schemaProblem(deep)).toMatch(/deeper/);
    expect(schemaProblem({ type: 'string', pattern: '(?=a)' })).toMatch(/not supported/);
  });

  it('numeric_close reads the first number and compares within an absolute or relative tolerance', () => {
    const s = { type: 'numeric_close', name: 'n', passThreshold: 1, tolerance: 0.01, relative: false } as const;
    expect(scoreBuiltin(s, c('The answer is 3.14159', 3.14)).score).toBe(1);
    expect(scoreBuiltin(s, c('3.2', 3.14)).score).toBe(0);
    expect(scoreBuiltin({ ...s, tolerance: 0.05, relative: true }, c('1,040', 1000)).score).toBe(1);
    expect(scoreBuiltin(s, c('no number', 3)).reason).toMatch(/holds no number/);
    expect(scoreBuiltin(s, c('3', 'n/a')).reason).toMatch(/expected value holds no number/);
  });
});

describe('judge and pathway verdicts', () => {
  it('reads { score, reason } from JSON, from text around JSON, clamps to 0–1, and scores 0 without one', () => {
    expect(judgeVerdict('{"score": 0.8, "reason": "mostly right"}')).toEqual({ score: 0.8, reason: 'mostly right' });
    expect(judgeVerdict('Sure! {"score": 1.7, "reason": "x"} hope this helps')).toEqual({ score: 1, reason: 'x' });
    expect(judgeVerdict({ score: '0.25', reason: 'meh' })).toEqual({ score: 0.25, reason: 'meh' });
    expect(judgeVerdict('I think it is good').score).toBe(0);
    expect(pathwayVerdict({ score: 0.5, reason: 'half' })).toEqual({ score: 0.5, reason: 'half' });
    expect(pathwayVerdict('nope').reason).toMatch(/not \{ score, reason \}/);
  });

  it("the judge's message carries the rubric, input, expected and output, bounded", () => {
    const m = judgeMessage('Be strict', { input: 'q', expected: 'Paris', output: 'x'.repeat(20_000) });
    expect(m).toContain('Be strict');
    expect(m).toContain('Expected:\nParis');
    expect(m.length).toBeLessThan(10_000);
  });

  it('a pass is a score at or above the threshold', () => {
    const spec: EvaluatorSpec = {
      type: 'judge',
      name: 'j',
      passThreshold: 0.5,
      neuronId: 'n',
      version: 1,
      rubric: 'r',
    };
    expect(scored(spec, { score: 0.5, reason: '' }).passed).toBe(true);
    expect(scored(spec, { score: 0.49, reason: '' }).passed).toBe(false);
  });
});

describe('aggregates', () => {
  it('mean per evaluator (a failed run scores 0), pass rate, nearest-rank percentiles, costs', () => {
    const item = (score: number, passed: boolean, latencyMs: number, status: 'scored' | 'failed' = 'scored') => ({
      status,
      passed,
      scores: status === 'failed' ? [] : [{ evaluator: 'exact', score, passed, reason: '', jobId: null }],
      latencyMs,
      totalTokens: 10,
      costUsd: 0.001,
      evaluatorCostUsd: 0.0005,
    });
    const a = aggregate(['exact'], 4, [
      item(1, true, 100),
      item(0, false, 300),
      item(1, true, 200),
      item(0, false, 900, 'failed'),
    ]);
    expect(a.meanScores.exact).toBe(0.5);
    expect(a.passRate).toBe(0.5);
    expect(a.scored).toBe(3);
    expect(a.failed).toBe(1);
    expect(a.latencyP50Ms).toBe(200);
    expect(a.latencyP95Ms).toBe(900);
    expect(a.totalCostUsd).toBeCloseTo(0.006, 9);
    expect(a.totalTokens).toBe(40);
    expect(percentile([], 0.5)).toBeNull();
  });

  it('evaluator names are keys of the mean scores as own properties, whatever the builder named them', () => {
    const a = aggregate(['constructor', 'toString'], 0, []);
    expect(Object.keys(a.meanScores)).toEqual(['constructor', 'toString']);
    expect(Object.getPrototypeOf(a.meanScores)).toBe(Object.prototype);
    // A name that would be a store operator, a path or the prototype is refused at the request (400 naming it).
    for (const name of ['__proto__', '$where', 'a.b']) {
      const r = EvaluatorConfig.safeParse({ type: 'exact', name });
      expect(r.success, name).toBe(false);
      expect(r.error?.issues[0]?.path).toEqual(['name']);
    }
    expect(EvaluatorConfig.safeParse({ type: 'exact', name: 'constructor' }).success).toBe(true);
  });
});

describe('imports', () => {
  it('JSONL: one item per line, blank lines skipped, errors name the line', () => {
    expect(parseJsonl('{"input":"a","expected":"b"}\n\n{"input":{"x":1},"metadata":{"k":"v"}}\n', 10)).toEqual([
      { input: 'a', expected: 'b' },
      { input: { x: 1 }, metadata: { k: 'v' } },
    ]);
    expect(() => parseJsonl('{"input":"a"}\nnot json', 10)).toThrow(/line 2 is not JSON/);
    expect(() => parseJsonl('{"expected":"a"}', 10)).toThrow(/line 1 must be an object with "input"/);
    expect(() => parseJsonl('{"input":"a","extra":1}', 10)).toThrow(/unknown key "extra"/);
  });

  it('CSV: quoted fields with commas, quotes and newlines; other columns are metadata; JSON cells parsed', () => {
    expect(csvRows('a,"b,c","say ""hi""\nthere"\r\n1,2,3')).toEqual([
      ['a', 'b,c', 'say "hi"\nthere'],
      ['1', '2', '3'],
    ]);
    expect(parseCsv('input,expected,lang\n"2+2",4,en\n"hello, you",,fr\n', 10)).toEqual([
      { input: '2+2', expected: 4, metadata: { lang: 'en' } },
      { input: 'hello, you', metadata: { lang: 'fr' } },
    ]);
    expect(() => parseCsv('question,answer\nq,a', 10)).toThrow(/no "input" column/);
    expect(() => parseCsv('input,expected\na', 10)).toThrow(/row 2 has 1 fields/);
    expect(() => parseCsv('input\n"open', 10)).toThrow(/not closed/);
  });
});
