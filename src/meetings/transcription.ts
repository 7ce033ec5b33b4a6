import { createBatchTranscription } from './transcription/batch.js';
import { createLiveCaptions } from './transcription/captions.js';
import { createTranscriptionCore, type TranscriptionDeps } from './transcription/common.js';
import { createLiveFinalize } from './transcription/finalize.js';
import { createLiveSessions } from './transcription/live.js';

export { transcriptMarkdown, type TranscriptionDeps } from './transcription/common.js';
/**
 * Speech to text for meetings and files (docs/meetings.md). Live: the API stores each chunk
 * (blob + a row keyed by session and seq: the first of a seq wins) and signals the session's
 * `liveTranscription` workflow with the seq only; caption passes and the final pass read the
 * stored audio, so a worker restart loses nothing and no audio enters a Temporal history.
 * Batch: staged attachments (or assets) are converted with sox and transcribed by a
 * `transcription` job. The parts live in ./transcription/: live sessions, captions, the final
 * pass, batch jobs.
 */
export function createTranscriptionService(d: TranscriptionDeps) {
  const core = createTranscriptionCore(d);
  const { stt } = core;
  const { config } = d;
  return {
    presentSession: core.presentSession,
    /** GET /v1/transcription/runtime: which provider is active and whether it can run. */
    async runtime() {
      const check = await stt.check();
      return {
        available: check.available,
        gladia_configured: !!config.GLADIA_API_KEY,
        ...(check.reason ? { reason: check.reason } : {}),
        provider: stt.name,
        hints: stt.hints,
        live: check.available,
        batch: check.available,
      };
    },
    ...createLiveSessions(d, core),
    ...createLiveCaptions(d, core),
    ...createLiveFinalize(d, core),
    ...createBatchTranscription(d, core),
  };
}
