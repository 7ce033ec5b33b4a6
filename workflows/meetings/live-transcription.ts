import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import { chunkSignal, stopSignal, type LiveTranscriptionInput } from '../../src/temporal/definitions.js';
import { trackedJob } from '../failures.js';

const live = wf.proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 5 },
});
const final = wf.proxyActivities<Activities>({
  startToCloseTimeout: '60 minutes',
  retry: { initialInterval: '2s', maximumInterval: '60s', maximumAttempts: 6 },
});

/** History length after which the session continues as new (a long meeting has thousands of chunk signals). */
const HISTORY_LIMIT = 8000;

/**
 * A live meeting transcription session (docs/meetings.md). Chunks are stored by the API; the
 * `chunk` signal carries only the seq and wakes a caption pass (activities read the stored
 * audio), so audio never enters this history and a worker restart loses nothing: the next
 * worker replays to the same place and the next pass reads whatever was stored meanwhile.
 * `stop` (or no chunk for idleTimeoutMs) runs the final pass over all stored audio.
 */
export async function liveTranscription(input: LiveTranscriptionInput): Promise<{ artifactId: string; chars: number }> {
  let pending = true;
  let stopped = input.stopped ?? false;
  let partialSeq = -1;
  wf.setHandler(chunkSignal, () => void (pending = true));
  wf.setHandler(stopSignal, () => void (stopped = true));
  return trackedJob(
    input.stopped ? 'finalizing' : 'live',
    async (status) => {
      await live.liveBegin(input);
      while (!stopped) {
        const woke = await wf.condition(() => pending || stopped, input.idleTimeoutMs);
        if (!woke || stopped) break; // idle: the session ends and finalizes
        pending = false;
        const out = await live.liveCaption(input, partialSeq);
        partialSeq = out.partialSeq;
        if (out.more) pending = true;
        if (wf.workflowInfo().historyLength > HISTORY_LIMIT || wf.workflowInfo().continueAsNewSuggested) {
          await wf.condition(wf.allHandlersFinished);
          return await wf.continueAsNew<typeof liveTranscription>({ ...input, stopped });
        }
      }
      status.currentStep = 'finalizing';
      status.progress = 50;
      return final.liveFinalize(input);
    },
    (reason) => live.liveFail(input, reason),
  );
}
