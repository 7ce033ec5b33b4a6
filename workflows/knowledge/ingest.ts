import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { IngestInput } from '../../src/temporal/definitions.js';
import { trackedJob } from '../failures.js';

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
 * A version whose chunks fit one batch (and that needs no description) takes all three steps in
 * one activity (`ingestWhole`): one activity task and two workflow tasks instead of three and four.
 */
export async function ingest(input: IngestInput): Promise<Record<string, unknown>> {
  return trackedJob(
    'extracting text',
    async (status) => {
      const batch = input.batchSize ?? BATCH;
      let prep: Awaited<ReturnType<Activities['ingestPrepare']>>;
      if (wf.patched('ingest-whole-small')) {
        const whole = await steps.ingestWhole(input, batch);
        if ('done' in whole) return whole.done;
        prep = whole.prepared;
      } else prep = await steps.ingestPrepare(input);
      if (prep.describe) {
        status.currentStep = 'describing';
        await steps.ingestDescribe(input);
      }
      for (let from = 0; from < prep.toEmbed; from += batch) {
        const to = Math.min(prep.toEmbed, from + batch);
        status.currentStep = `embedding ${to}/${prep.toEmbed} chunks`;
        await steps.ingestEmbed(input, from, to, prep.toEmbed);
        status.progress = 25 + Math.round((70 * to) / prep.toEmbed);
      }
      status.currentStep = 'finishing';
      return steps.ingestFinish(input);
    },
    (reason) => steps.ingestFail(input, reason),
  );
}
