import { describe, expect, it } from 'vitest';
import { compileGraph } from '../../src/pathways/compile.js';
import { evaluateTimeboxed, syntaxError } from '../../src/expressions/engine.js';
import { validateGraph } from '../../src/pathways/validate.js';

const graph = (data: Record<string, unknown>, type = 'transform') => ({
  nodes: [
    { id: 's', type: 'start' },
    { id: 'x', type, data },
    { id: 'o', type: 'output' },
  ],
  edges: [
    { source: 's', target: 'x' },
    ...(type === 'if'
      ? [
          { source: 'x', target: 'o', handle: 'true' },
          { source: 'x', target: 'o', handle: 'false' },
        ]
      : [{ source: 'x', target: 'o' }]),
  ],
});

describe('pathway expressions', () => {
  it('validate and compile report a JSONata syntax error, naming the node and field', () => {
    const bad = graph({ expression: 'input.n * (2 +' });
    const v = validateGraph(bad);
    expect(v.valid).toBe(false);
    expect(v.errors.join('\n')).toMatch(/node "x" \(transform\): data\.expression: .*character/);
    expect(compileGraph(bad).errors.join('\n')).toContain('data.expression');
    expect(validateGraph(graph({ expression: 'input.n * 2' })).valid).toBe(true);
  });

  it('templates are checked placeholder by placeholder, conditions too', () => {
    const v = validateGraph(graph({ template: 'Hello {{ input.name }} and {{ input.( }}' }));
    expect(v.errors.join('\n')).toContain('in {{ input.( }}');
    expect(validateGraph(graph({ condition: 'input.n >' }, 'if')).errors.join('\n')).toContain('data.condition');
    expect(syntaxError('')).toBeNull();
  });

  it('a runaway expression stops at the time box or the depth limit with a clear reason', async () => {
    await expect(evaluateTimeboxed('( $f := function($n) { $f($n + 1) }; $f(0) )', {})).rejects.toThrow(
      /Stack overflow|timeout|stack/i,
    );
    await expect(
      evaluateTimeboxed(
        '( $loop := function($n) { $n > 0 ? $loop($n) : 0 }; $loop(1) )',
        {},
        { timeoutMs: 200, maxDepth: 1_000_000 },
      ),
    ).rejects.toThrow(/timeout after 200 milliseconds|stack/i);
    expect(await evaluateTimeboxed('input.n * 2', { input: { n: 21 } })).toBe(42);
  });
});
