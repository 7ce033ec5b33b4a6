import { withinBudget } from '../../budget-pause.js';
import { local, steps } from '../activities.js';
import { waitForHuman } from '../wait.js';
import type { NodeHandler } from './handler.js';

/**
 * classify: a model picks one of the node's categories for its rendered input; the edges of that
 * category are followed. A budget with the pause policy stops the call (docs/usage.md): an admin
 * approves, then the same node asks again.
 */
export const classifyNode: NodeHandler = {
  run: async ({ run, node, at, context }) => {
    const text = await local.renderMessage({
      template: typeof node.data.input === 'string' ? node.data.input : undefined,
      context,
    });
    const ask = () =>
      steps.classify({
        scope: run.input.scope,
        jobId: run.input.jobId,
        categories: (node.data.categories as string[]) ?? [],
        text,
        neuronId: typeof node.data.neuron_id === 'string' ? node.data.neuron_id : undefined,
        model: typeof node.data.model === 'string' ? node.data.model : undefined,
        ...(run.approvedBudgets.length ? { approvedBudgets: [...run.approvedBudgets] } : {}),
      });
    const category = await withinBudget(await ask(), {
      ask,
      budgetOf: (out) => (typeof out === 'string' ? undefined : out.budget),
      approved: run.approvedBudgets,
      waitForAdmin: (budget) =>
        waitForHuman(run, {
          context,
          at,
          kind: 'budget',
          data: {
            title: 'Budget reached',
            prompt: `${budget.message}. Approve to let this run continue beyond it, or reject to stop it.`,
            options: ['approve', 'reject'],
          },
        }),
    });
    // withinBudget returns only a reply no budget stopped: a category.
    const handle = category as string;
    return { value: { category: handle, input: text }, handle };
  },
};
