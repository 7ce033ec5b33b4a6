import { local } from '../activities.js';
import type { NodeHandler } from './handler.js';

/** start / input: the run's input becomes the current value. */
export const startNode: NodeHandler = {
  run: async ({ run }) => ({ value: run.values.input }),
};

/** transform: a JSONata expression (or a `{{ }}` template) over the context, evaluated with the node's entries. */
export const transformNode: NodeHandler = {
  fusesEntries: true,
  run: async ({ node, evaluate, context }) => ({
    value: await evaluate({
      expression: String(node.data.expression ?? ''),
      template: typeof node.data.template === 'string' ? node.data.template : undefined,
      context,
    }),
  }),
};

/** if: follows the `true` or `false` edges; the value passes through. */
export const ifNode: NodeHandler = {
  fusesEntries: true,
  run: async ({ node, evaluate, last, context }) => {
    const ok = await evaluate({ expression: String(node.data.condition ?? 'false'), context });
    return { value: last, handle: ok ? 'true' : 'false' };
  },
};

/** output: the run's output is its `value` expression, or the current value; `end` also stops the run. */
const output: NodeHandler['run'] = async ({ run, node, last, context }) => {
  let value = last;
  if (typeof node.data.value === 'string' && node.data.value !== '')
    value = await local.evaluate({ expression: node.data.value, context });
  run.values.output = value;
  return { value };
};
export const outputNode: NodeHandler = { run: output };
export const endNode: NodeHandler = { run: output, endsRun: true };
