import { compileExpression } from 'filtrex';
import type { ToolSpec } from '../llm/types.js';

/** A tool the platform runs itself (reflex metadata.handler or neuron_config.tools). */
export interface BuiltinTool {
  spec: ToolSpec;
  run(args: Record<string, unknown>): Promise<string> | string;
}

/**
 * Built-in internal tools. Kept small and honest: each does real work locally. Integration-
 * backed reflex tools need a connected account and report that when called without one.
 */
export const BUILTIN_TOOLS: Record<string, BuiltinTool> = {
  calculator: {
    spec: {
      name: 'calculator',
      description: 'Evaluates an arithmetic expression such as "(2 + 3) * 4" and returns the number.',
      parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    },
    run(args) {
      const expr = String(args.expression ?? '');
      if (!/^[\d\s+\-*/%().,^a-z]*$/i.test(expr) || expr.length > 500)
        return JSON.stringify({ error: 'unsupported expression' });
      // filtrex compiles to a sandboxed function: no access to globals, no eval.
      const value: unknown = compileExpression(expr)({});
      return JSON.stringify(value instanceof Error ? { error: value.message } : { result: value });
    },
  },
  current_time: {
    spec: {
      name: 'current_time',
      description: 'Returns the current date and time in ISO 8601 (UTC).',
      parameters: { type: 'object', properties: {} },
    },
    run: () => JSON.stringify({ now: new Date().toISOString() }),
  },
};
