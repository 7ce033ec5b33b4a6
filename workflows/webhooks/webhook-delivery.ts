import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { WebhookDeliveryInput } from '../../src/webhooks/index.js';

/** Recording a delivery's end is a store write: retried briefly, like any other. */
const bookkeeping = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10 },
});

/**
 * One signed webhook delivery (docs/webhooks.md), started per recorded delivery with the id
 * `webhook-<delivery id>`. Each attempt is one `sendWebhook` activity; Temporal retries it with
 * exponential backoff (the configured first wait, doubling to 1 h) for up to a day. An attempt the
 * activity marks non-retryable (4xx other than 408 and 429, a URL the guard refuses, a deleted or
 * disabled endpoint) ends the retries at once; the delivery then reads failed with the reason.
 */
export async function webhookDelivery(input: WebhookDeliveryInput): Promise<'delivered' | 'failed'> {
  const { sendWebhook } = wf.proxyActivities<Activities>({
    // The send itself times out after 15 s; an attempt whose worker died is retried after this.
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: '24 hours',
    retry: {
      initialInterval: input.retryInitialMs,
      backoffCoefficient: 2,
      maximumInterval: '1 hour',
      nonRetryableErrorTypes: ['WEBHOOK_REFUSED'],
    },
  });
  try {
    await sendWebhook(input);
    return 'delivered';
  } catch (e) {
    const cause = e instanceof wf.ActivityFailure ? e.cause : e;
    const reason =
      cause instanceof wf.TimeoutFailure
        ? 'retries ran out (24 hours)'
        : ((cause as Error | undefined)?.message ?? 'the delivery failed');
    await bookkeeping.failWebhook(input, reason);
    return 'failed';
  }
}
