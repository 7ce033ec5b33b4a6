import { local } from '../activities.js';
import { contextOf } from '../state.js';
import type { NodeHandler } from './handler.js';

/** start / input: the run's input becomes the current value. */
export const startNode: NodeHandler = {
  run: async ({ run }) => ({ value: run.values.input }),
};

/** transform: a JSONata expression (or a `{{ }}` template) over the context, evaluated with the node's entries. */
export const transformNode: NodeHandler = {
  fusesEntries: true,
  run: async ({ run, node, evaluate }) => ({
    value: await evaluate({
      expression: String(node.data.expression ?? ''),
      template: typeof node.data.template === 'string' ? node.data.template : undefined,
      context: contextOf(run),
    }),
  }),
};

/** if: follows the `true` or `false` edges; the value passes through. */
export const ifNode: NodeHandler = {
  fusesEntries: true,
  run: async ({ run, node, evaluate }) => {
    const ok = await evaluate({ expression: String(node.data.condition ?? 'false'), context: contextOf(run) });
    return { value: run.values.last, handle: ok ? 'true' : 'false' };
  },
};

/** output: the run's output is its `value` expression, or the current value; `end` also stops the run. */
const output: NodeHandler['run'] = async ({ run, node }) => {
  let value = run.values.last;
  if (typeof node.data.value === 'string' && node.data.value !== '')
    value = await local.evaluate({ expression: node.data.value, context: contextOf(run) });
  run.values.output = value;
  return { value };
};
export const outputNode: NodeHandler = { run: output };
export const endNode: NodeHandler = { run: output, endsRun: true };
