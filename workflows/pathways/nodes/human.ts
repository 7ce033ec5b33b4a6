import { waitForHuman } from '../wait.js';
import type { NodeHandler } from './handler.js';

/** human: waits for a person's answer (or a resume, or expiry); the answer's action is the handle. */
export const humanNode: NodeHandler = {
  run: async ({ run, node, at, context }) => {
    const answer = await waitForHuman(run, { at, data: node.data, context });
    return {
      value: {
        action: answer.action,
        comment: answer.comment ?? null,
        fields: answer.fields ?? null,
        by: answer.by ?? null,
      },
      handle: answer.action,
    };
  },
};
