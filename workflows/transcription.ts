import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { cancelSignal, statusQuery, type LiveStatus, type TranscriptionInput } from '../src/temporal/definitions.js';
import { recordFailure } from './failures.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '60 minutes',
  retry: { initialInterval: '2s', maximumInterval: '60s', maximumAttempts: 5 },
});

/**
 * Batch transcription of a staged attachment or an asset (POST /v1/transcribe). The activity
 * reads and converts the audio and ends the job with `{ text, segments }`; this history holds
 * only ids and counts.
 */
export async function transcription(input: TranscriptionInput): Promise<{ chars: number; segments: number; durationMs: number }> {
  const status: LiveStatus = { status: 'running', progress: 0, currentStep: 'transcribing' };
  let cancelReason: string | undefined;
  wf.setHandler(statusQuery, () => status);
  wf.setHandler(cancelSignal, ({ reason }) => void (cancelReason = reason));
  try {
    const out = await steps.transcribeRun(input);
    status.status = 'completed';
    status.progress = 100;
    status.currentStep = 'completed';
    return out;
  } catch (err) {
    status.status = 'failed';
    return recordFailure(err, cancelReason, (reason) => steps.transcribeFail(input, reason));
  }
}
