import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Services } from '../src/compose/services.js';
import type { WebhookDeliveryInput } from '../src/webhooks/index.js';

/** Signed webhooks' activities (docs/webhooks.md): thin adapters over the webhook service. */
export const createWebhookActivities = ({ services }: { services: Services }) => ({
  /** One attempt; a failure Temporal retries, or one it must not (`WEBHOOK_REFUSED`). */
  async sendWebhook(input: WebhookDeliveryInput): Promise<void> {
    const r = await services.webhooks.attempt(input.workspaceId, input.deliveryId, Context.current().info.attempt);
    if (r.outcome === 'delivered') return;
    if (r.outcome === 'stop') throw ApplicationFailure.nonRetryable(r.message, 'WEBHOOK_REFUSED');
    throw ApplicationFailure.retryable(r.message, 'WEBHOOK_ATTEMPT_FAILED');
  },
  failWebhook: (input: WebhookDeliveryInput, reason: string): Promise<void> =>
    services.webhooks.fail(input.workspaceId, input.deliveryId, reason),
});
