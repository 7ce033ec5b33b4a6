import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { TranscriptionInput } from '../../src/temporal/definitions.js';
import { trackedJob } from '../failures.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '60 minutes',
  retry: { initialInterval: '2s', maximumInterval: '60s', maximumAttempts: 5 },
});

/**
 * Batch transcription of a staged attachment or an asset (POST /v1/transcribe). The activity
 * reads and converts the audio and ends the job with `{ text, segments }`; this history holds
 * only ids and counts.
 */
export async function transcription(
  input: TranscriptionInput,
): Promise<{ chars: number; segments: number; durationMs: number }> {
  return trackedJob(
    'transcribing',
    () => steps.transcribeRun(input),
    (reason) => steps.transcribeFail(input, reason),
  );
}
