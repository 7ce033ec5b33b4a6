import type { TranscriptionSession } from '../model.js';
import { systemScope } from '../../kernel/scope.js';
import { msOf } from '../../stt/audio.js';
import type { Transcript } from '../../stt/index.js';
import type { LiveTranscriptionInput } from '../../temporal/definitions.js';
import { missingBelow, transcriptMarkdown, type TranscriptionCore, type TranscriptionDeps } from './common.js';

/**
 * The end of a live session: the final pass (all stored audio, one transcription, the transcript
 * artifact and the meeting's segments), or the failure of the session.
 */
export function createLiveFinalize(d: TranscriptionDeps, core: TranscriptionCore) {
  const { repo } = d;
  const { captionKey } = core;

  /** The transcript as an artifact whose id was fixed at start: a retried finalize writes it once. */
  async function saveArtifact(
    i: LiveTranscriptionInput,
    s: TranscriptionSession,
    o: { title: string; t: Transcript; missing: number[]; durationMs: number; finalizedAt: Date },
  ) {
    await d.documents.createArtifact(
      systemScope(i.workspaceId, i.brainId),
      {
        title: `Transcript: ${o.title} (${o.finalizedAt.toISOString().slice(0, 16).replace('T', ' ')})`,
        content: transcriptMarkdown(o.title, o.t.segments, o.missing),
        content_type: 'text/markdown',
        path: 'meetings/transcripts',
        brain_id: i.brainId,
        metadata: {
          kind: 'meeting_transcript',
          meeting_id: i.meetingId,
          session_id: s._id,
          job_id: s.jobId,
          provider: core.stt.name,
          duration_ms: o.durationMs,
          missing_seqs: o.missing,
        },
      },
      s.artifactId,
    );
  }

  /** Publishes `transcript.finalized` (stakeholder extraction subscribes); a failed subscriber never fails the transcript. */
  async function runHook(i: LiveTranscriptionInput, t: Transcript, finalizedAt: Date) {
    // The extraction can be started again through its own route.
    const text = t.segments.map((x) => `${x.speaker ? `${x.speaker}: ` : ''}${x.text}`).join('\n');
    await d.bus.emit(
      'transcript.finalized',
      { workspaceId: i.workspaceId, meeting: { id: i.meetingId, brainId: i.brainId, text, finalizedAt } },
      {
        onError: (e: unknown) =>
          d.log.warn(
            { err: (e as Error).message, meetingId: i.meetingId },
            'stakeholder extraction after finalize failed to start',
          ),
      },
    );
  }

  return {
    /**
     * The final pass: all stored audio in seq order (gaps reported, never waited for), one
     * transcription, the transcript saved as an artifact (id fixed at start: written once),
     * segments and `transcription { status: ready }` patched onto the meeting, then the job.
     */
    async liveFinalize(i: LiveTranscriptionInput, attempt = 1) {
      const s = await core.load(i);
      if (s.status === 'live') {
        await repo.stopSession(s, new Date());
        await d.meetings.patchBody(i.workspaceId, i.meetingId, {
          transcription: { status: 'finalizing', finalized_at: null, session_id: s._id, job_id: s.jobId },
        });
      }
      await d.jobs.transition(i.workspaceId, i.jobId, { status: 'running', currentStep: 'finalizing', progress: 50 });
      const { pcm, seqs } = await core.audioOf(s, 0, Number.MAX_SAFE_INTEGER);
      const missing = seqs.length ? missingBelow(seqs, seqs[seqs.length - 1]) : [];
      const hints = await d.vocabulary.hintsFor(i.workspaceId, i.brainId);
      const t = await core.transcribe(
        pcm,
        { locale: s.locale, diarize: s.diarize, hints },
        { key: `final:${attempt}`, workspaceId: i.workspaceId, brainId: i.brainId, jobId: i.jobId },
      );
      const meeting = await d.meetings.findUnscoped(i.workspaceId, i.meetingId);
      const title = meeting?.title ?? 'meeting';
      const finalizedAt = new Date();
      const durationMs = msOf(pcm.length);
      await saveArtifact(i, s, { title, t, missing, durationMs, finalizedAt });
      if (meeting) {
        await d.meetings.patchBody(i.workspaceId, i.meetingId, {
          transcript_segments: t.segments,
          transcription: {
            status: 'ready',
            finalized_at: finalizedAt.toISOString(),
            session_id: s._id,
            job_id: s.jobId,
            artifact_id: s.artifactId,
            missing_seqs: missing,
          },
        });
      }
      await repo.markSessionReady(s, { finalizedAt, missing });
      if (meeting) await runHook(i, t, finalizedAt);
      await d.streams.append(
        captionKey(s),
        {
          type: 'complete',
          artifact_id: s.artifactId,
          text_chars: t.text.length,
          segment_count: t.segments.length,
          missing_seqs: missing,
        },
        { kind: 'terminal' },
      );
      await d.jobs.finalize(i.workspaceId, i.jobId, {
        status: 'completed',
        progress: 100,
        currentStep: 'completed',
        result: {
          text: t.text,
          segments: t.segments,
          meeting_id: i.meetingId,
          session_id: s._id,
          artifact_id: s.artifactId,
          duration_ms: durationMs,
          missing_seqs: missing,
          provider: core.stt.name,
        },
      });
      return { artifactId: s.artifactId, chars: t.text.length };
    },

    async liveFail(i: LiveTranscriptionInput, reason: string) {
      await repo.markSessionFailed({ _id: i.sessionId, workspaceId: i.workspaceId }, reason.slice(0, 2000));
      if (await d.meetings.findUnscoped(i.workspaceId, i.meetingId)) {
        await d.meetings.patchBody(i.workspaceId, i.meetingId, {
          transcription: {
            status: 'failed',
            finalized_at: null,
            session_id: i.sessionId,
            job_id: i.jobId,
            error: reason.slice(0, 2000),
          },
        });
      }
      await d.streams.append(
        d.streams.keys.captions(i.workspaceId, i.sessionId),
        { type: 'error', message: reason.slice(0, 2000) },
        { kind: 'terminal' },
      );
      await d.jobs.finalize(i.workspaceId, i.jobId, { status: 'failed', failedReason: reason, currentStep: 'failed' });
    },
  };
}
