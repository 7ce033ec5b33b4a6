import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { cancelSignal, statusQuery, type IngestInput, type LiveStatus } from '../src/temporal/definitions.js';
import { recordFailure } from './failures.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 6 },
});

/** Chunks embedded per activity (one provider call each) when the input names no batch size (EMBED_BATCH_SIZE). */
const BATCH = 64;

/**
 * One resource version's text (docs/knowledge.md): extract → chunk → store chunks → embed in
 * batches → finish. Each step is an idempotent activity (chunk ids name resource, version and
 * index), so a retried step never writes a chunk twice; progress and current_step follow the steps.
 */
export async function ingest(input: IngestInput): Promise<Record<string, unknown>> {
  const status: LiveStatus = { status: 'running', progress: 0, currentStep: 'extracting text' };
  let cancelReason: string | undefined;
  wf.setHandler(statusQuery, () => status);
  wf.setHandler(cancelSignal, ({ reason }) => void (cancelReason = reason));
  try {
    const prep = await steps.ingestPrepare(input);
    if (prep.describe) {
      status.currentStep = 'describing';
      await steps.ingestDescribe(input);
    }
    const batch = input.batchSize ?? BATCH;
    for (let from = 0; from < prep.toEmbed; from += batch) {
      const to = Math.min(prep.toEmbed, from + batch);
      status.currentStep = `embedding ${to}/${prep.toEmbed} chunks`;
      await steps.ingestEmbed(input, from, to, prep.toEmbed);
      status.progress = 25 + Math.round((70 * to) / prep.toEmbed);
    }
    status.currentStep = 'finishing';
    const result = await steps.ingestFinish(input);
    status.status = 'completed';
    status.progress = 100;
    status.currentStep = 'completed';
    return result;
  } catch (err) {
    status.status = 'failed';
    return recordFailure(err, cancelReason, (reason) => steps.ingestFail(input, reason));
  }
}
