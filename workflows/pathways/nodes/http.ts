import type { RetryPolicy } from '@temporalio/common';
import * as wf from '@temporalio/workflow';
import type { Activities } from '../../../activities/index.js';
import { httpTimeoutMs } from '../../../src/pathways/walk.js';
import type { NodeHandler } from './handler.js';

/** Time an attempt may take beyond the request's own timeout: reading the secrets it names, rendering. */
const ATTEMPT_MARGIN_MS = 15_000;

/** An http node's retries when it sets none: three attempts, 1 s then 2 s apart. */
const HTTP_DEFAULT_RETRY: RetryPolicy = {
  maximumAttempts: 3,
  initialInterval: 1000,
  backoffCoefficient: 2,
  maximumInterval: 30_000,
};

/**
 * http: one HTTP request, in the `pathwayHttp` activity (templates, secrets and the outbound guard
 * are its business: no rendered value passes through here). Each visit gets its own proxy, so the
 * node's timeout and retry policy (`c.retry`, the node's `data.retry` as the loop reads it, over
 * HTTP_DEFAULT_RETRY) apply to it alone. The value is `{ status, headers, body }`.
 */
export const httpNode: NodeHandler = {
  run: async ({ run, node, at, id, context, retry }) => {
    const timeoutMs = httpTimeoutMs(node.data);
    const act = wf.proxyActivities<Activities>({
      startToCloseTimeout: timeoutMs + ATTEMPT_MARGIN_MS,
      retry: { ...HTTP_DEFAULT_RETRY, ...retry },
    });
    // This visit's number (the loop records the visit before the handler runs): the Idempotency-Key
    // is the same for every attempt of one visit and differs between visits of a loop.
    const visit = Math.max(1, run.visited.filter((i) => i === at).length);
    const value = await act.pathwayHttp({
      scope: run.input.scope,
      jobId: run.input.jobId,
      nodeId: id,
      visit,
      data: node.data,
      context,
    });
    return { value };
  },
};
