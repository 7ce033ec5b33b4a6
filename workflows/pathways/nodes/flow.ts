import * as wf from '@temporalio/workflow';
import { whileMaxIterations } from '../../../src/pathways/walk.js';
import { local } from '../activities.js';
import type { NodeHandler } from './handler.js';

/**
 * while: follows `body` while its condition holds (at most max_iterations times in a row), then
 * `done` with the iteration count; the counter is reset for the next time the loop is entered.
 */
export const whileNode: NodeHandler = {
  run: async ({ run, node, at, last, context }) => {
    const key = String(at);
    const loops = run.values.loops;
    const count = loops[key] ?? 0;
    const ok =
      count < whileMaxIterations(node.data) &&
      Boolean(await local.evaluate({ expression: String(node.data.condition ?? 'false'), context }));
    if (ok) {
      loops[key] = count + 1;
      return { value: last, handle: 'body' };
    }
    loops[key] = 0;
    return { value: { iterations: count, last: last }, handle: 'done' };
  },
};

/** delay: a durable Temporal timer (`ms`, or `seconds`); the value passes through. */
export const delayNode: NodeHandler = {
  run: async ({ node, last }) => {
    const ms = typeof node.data.ms === 'number' ? node.data.ms : Number(node.data.seconds ?? 0) * 1000;
    await wf.sleep(Math.max(0, ms));
    return { value: last };
  },
};
