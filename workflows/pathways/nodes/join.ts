import type { NodeHandler } from './handler.js';

/**
 * join: reached once its wait is over (workflows/pathways/branches.ts); its value is what the
 * branches brought, keyed by the node each came from (`any`: the first branch's only).
 */
export const joinNode: NodeHandler = {
  run: async ({ last }) => ({ value: last }),
};
