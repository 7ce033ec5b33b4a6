import { randomUUID } from 'node:crypto';
import { fromBuffer } from '../../blobs/store.js';
import type { TranscriptionSession } from '../model.js';
import { conflict, notFound, validationError } from '../../kernel/errors.js';
import { systemScope, type Scope } from '../../kernel/scope.js';
import { bestEffort } from '../../kernel/best-effort.js';
import { chunkSignal, stopSignal, type LiveTranscriptionInput } from '../../temporal/definitions.js';
import type { TranscriptionCore, TranscriptionDeps } from './common.js';

/** A live session ends (and finalizes) after this long without a chunk. */
const LIVE_IDLE_TIMEOUT_MS = 30 * 60_000;

/** What the live session routes are built from: the transcription deps and the shared core (no state of their own). */
interface LiveContext {
  d: TranscriptionDeps;
  core: TranscriptionCore;
}

async function session(
  { d }: LiveContext,
  scope: Scope,
  meetingId: string,
  sessionId: string,
): Promise<TranscriptionSession> {
  await d.meetings.get(scope, meetingId);
  const s = await d.repo.session(scope.workspaceId, sessionId, meetingId);
  if (!s) throw notFound('Transcription session');
  return s;
}

/** Advances the session's contiguous mark from the stored rows; returns it with the gaps below the highest seq. */
async function advance(
  { d: { repo } }: LiveContext,
  s: TranscriptionSession,
): Promise<{ contiguous: number; missing: number[]; maxSeq: number }> {
  const seqs = await repo.chunkSeqs(s, s.contiguous, 5000);
  let c = s.contiguous;
  for (const seq of seqs) {
    if (seq === c) c++;
    else if (seq > c) break;
  }
  const maxSeq = Math.max(s.maxSeq, seqs.at(-1) ?? -1);
  if (c > s.contiguous) await repo.advanceContiguous(s, c);
  const set = new Set(seqs.filter((x) => x >= c));
  const missing: number[] = [];
  for (let q = c; q < maxSeq && missing.length < 100; q++) if (!set.has(q)) missing.push(q);
  return { contiguous: c, missing, maxSeq };
}

/** The chunk's audio, checked: linear16 (an even number of bytes), not empty, at most the chunk limit. */
function decodeChunk({ d: { config } }: LiveContext, chunkBase64: string): Buffer {
  const max = config.TRANSCRIPTION_CHUNK_MAX_BYTES;
  if (chunkBase64.length % 4 !== 0)
    throw validationError('chunk_base64: not valid base64 (its length is not a multiple of 4)');
  if ((chunkBase64.length / 4) * 3 > max + 2)
    throw validationError(`chunk_base64: a chunk is at most ${max} bytes of audio`);
  const pcm = Buffer.from(chunkBase64, 'base64');
  if (pcm.length === 0) throw validationError('chunk_base64: empty chunk');
  if (pcm.length % 2 !== 0)
    throw validationError('chunk_base64: linear16 audio has an even number of bytes (2 per sample)');
  if (pcm.length > max) throw validationError(`chunk_base64: a chunk is at most ${max} bytes of audio`);
  return pcm;
}

/** Stores a chunk's audio and row; false when its seq was stored already (the blob is then removed). */
async function storeChunk(
  { d, core }: LiveContext,
  s: TranscriptionSession,
  seq: number,
  pcm: Buffer,
): Promise<boolean> {
  const { repo, config } = d;
  const blob = await d.blobs.put(core.chunkKey(s, seq), fromBuffer(pcm), {
    maxBytes: config.TRANSCRIPTION_CHUNK_MAX_BYTES,
    contentType: 'audio/L16',
  });
  const dropBlob = () => bestEffort(d.log, "deleting an unrecorded chunk's blob", d.blobs.delete(blob.key));
  let stored: boolean;
  try {
    stored = await repo.recordChunk({
      sessionId: s._id,
      workspaceId: s.workspaceId,
      seq,
      bytes: pcm.length,
      blobKey: blob.key,
      createdAt: new Date(),
    });
    if (stored) await repo.countChunk(s, seq, pcm.length);
  } catch (e) {
    await dropBlob();
    throw e;
  }
  if (!stored) await dropBlob();
  return stored;
}

/** The session moves to finalizing (once) and its workflow is told; the meeting shows it. */
async function stop({ d }: LiveContext, scope: Scope, meetingId: string, s: TranscriptionSession) {
  if (!(await d.repo.stopSession(s, new Date()))) return;
  await d.meetings.patchBody(scope.workspaceId, meetingId, {
    transcription: { status: 'finalizing', finalized_at: null, session_id: s._id, job_id: s.jobId },
  });
  await d.temporal.workflow.getHandle(s.jobId).signal(stopSignal, {});
}

/** A session's life: start, chunks, stop. */
function createLiveControl(ctx: LiveContext) {
  const { d, core } = ctx;
  const { repo } = d;
  return {
    async liveStart(scope: Scope, meetingId: string, b: { locale: string; diarize: boolean }) {
      const m = await d.meetings.get(scope, meetingId);
      const open = await repo.openSession(scope.workspaceId, meetingId);
      if (open)
        throw conflict(
          `the meeting already has a ${open.status} session ${open._id} (job ${open.jobId}); stop it first`,
        );
      const now = new Date();
      const s: TranscriptionSession = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId: m.brainId,
        meetingId,
        jobId: randomUUID(),
        locale: b.locale,
        diarize: b.diarize,
        status: 'live',
        contiguous: 0,
        maxSeq: -1,
        chunkCount: 0,
        bytes: 0,
        captionSeq: 0,
        captionMs: 0,
        artifactId: randomUUID(),
        missing: [],
        error: null,
        createdBy: core.by(scope),
        startedAt: now,
        stoppedAt: null,
        finalizedAt: null,
      };
      await repo.startSession(s);
      const { job } = await d.jobs.create(scope, { id: s.jobId, kind: 'transcription', brainId: m.brainId });
      await d.meetings.patchBody(scope.workspaceId, meetingId, {
        transcription: { status: 'live', finalized_at: null, session_id: s._id, job_id: s.jobId },
      });
      const input: LiveTranscriptionInput = {
        jobId: s.jobId,
        workspaceId: s.workspaceId,
        brainId: s.brainId,
        meetingId,
        sessionId: s._id,
        idleTimeoutMs: LIVE_IDLE_TIMEOUT_MS,
      };
      await d.jobs.startWorkflow(job, 'liveTranscription', [input], `live transcription of meeting ${m.title}`);
      return s;
    },

    /** POST .../transcription/chunk: stores the chunk (first of a seq wins), then tells the session. */
    async chunk(scope: Scope, meetingId: string, b: { job_id: string; seq: number; chunk_base64: string }) {
      await d.meetings.get(scope, meetingId);
      const s = await repo.sessionOfJob(scope.workspaceId, meetingId, b.job_id);
      if (!s) throw notFound('Transcription session');
      const pcm = decodeChunk(ctx, b.chunk_base64);
      let duplicate = await repo.hasChunk(s, b.seq);
      if (!duplicate) {
        if (s.status !== 'live') throw conflict(`the session is ${s.status}: chunks are accepted while it is live`);
        duplicate = !(await storeChunk(ctx, s, b.seq, pcm));
      }
      const fresh = (await repo.session(s.workspaceId, s._id))!;
      const { contiguous, missing } = await advance(ctx, fresh);
      if (!duplicate) {
        // A lost signal loses nothing: the audio is stored, and the next signal or the final pass reads it.
        await d.temporal.workflow
          .getHandle(s.jobId)
          .signal(chunkSignal, { seq: b.seq })
          .catch((e: unknown) => d.log.warn({ err: e, session: s._id }, 'signalling a chunk failed'));
        if (missing.length)
          await d.streams.append(core.captionKey(s), {
            type: 'gap',
            missing_seqs: missing,
            next_expected_seq: contiguous,
          });
      }
      return {
        accepted: !duplicate,
        duplicate,
        seq: b.seq,
        next_expected_seq: contiguous,
        missing_seqs: missing,
        gap: missing.length > 0,
        chunk_count: fresh.chunkCount,
      };
    },

    /** POST .../live/stop: the session stops taking chunks and finalizes (202; the job ends when the transcript is saved). */
    async liveStop(scope: Scope, meetingId: string, b: { session_id?: string }) {
      await d.meetings.get(scope, meetingId);
      const s = b.session_id
        ? await repo.session(scope.workspaceId, b.session_id, meetingId)
        : await repo.latestSession(scope.workspaceId, meetingId);
      if (!s) throw notFound('Transcription session');
      if (s.status !== 'live') return s;
      await stop(ctx, scope, meetingId, s);
      return (await repo.session(s.workspaceId, s._id))!;
    },
  };
}

/** Reading sessions: one, the history with its captions, the caption stream, the transcript artifact. */
function createLiveReads(ctx: LiveContext) {
  const { d, core } = ctx;
  const { repo } = d;
  return {
    session: (scope: Scope, meetingId: string, sessionId: string) => session(ctx, scope, meetingId, sessionId),

    async history(scope: Scope, meetingId: string, q: { session_id?: string; limit: number }) {
      await d.meetings.get(scope, meetingId);
      const sessions = await repo.recentSessions(scope.workspaceId, meetingId, q.limit);
      const named = q.session_id ? await session(ctx, scope, meetingId, q.session_id) : sessions[0];
      const entries = named ? await d.streams.range(core.captionKey(named), undefined, 10_000) : [];
      const captions = entries
        .filter((e) => e.data.type === 'final')
        .map((e) => ({
          cursor: e.id,
          ...(e.data as {
            type: 'final';
            text: string;
            seq_from: number;
            seq_to: number;
            start_ms: number;
            end_ms: number;
          }),
        }));
      return { sessions: sessions.map((s) => core.presentSession(s)), captions };
    },

    captionStreamKey: (s: TranscriptionSession) => core.captionKey(s),

    /** The meeting's transcript artifact (it must be one of this meeting's sessions). */
    async artifact(scope: Scope, meetingId: string, artifactId: string) {
      await d.meetings.get(scope, meetingId);
      const s = await repo.sessionOfArtifact(scope.workspaceId, meetingId, artifactId);
      if (!s) throw notFound('Transcript artifact');
      return d.documents.get(systemScope(scope.workspaceId), artifactId, 'artifact');
    },
  };
}

/**
 * The live session routes: start, chunks (stored first, then signalled), stop, history and the
 * transcript artifact. The API stores each chunk (blob + a row keyed by session and seq: the
 * first of a seq wins) and signals the session's `liveTranscription` workflow with the seq only.
 */
export function createLiveSessions(d: TranscriptionDeps, core: TranscriptionCore) {
  const ctx: LiveContext = { d, core };
  return {
    ...createLiveReads(ctx), // session, history, captionStreamKey, artifact
    ...createLiveControl(ctx), // liveStart, chunk, liveStop
  };
}
