import type { Db, Filter, UpdateFilter } from 'mongodb';
import { AppError } from '../kernel/errors.js';
import { holding, isDuplicateKey, type HoldDoc } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import type {
  Attachment,
  AttachmentDoc,
  AudioChunk,
  ChunkRowDoc,
  SessionDoc,
  SessionKey,
  TranscriptionSession,
  VocabularyDoc,
} from './model.js';
import type { TranscriptionStore } from './store.js';

const chunkId = (sessionId: string, seq: number) => `${sessionId}:${seq}`;
const vocabularyId = (workspaceId: string, brainId: string | null) => `${workspaceId}:${brainId ?? '-'}`;

/** A session's write hold is given back after one update; a holder that died blocks others at most this long. */
const SESSION_HOLD = {
  leaseMs: 10_000,
  waitMs: 15_000,
  busy: () =>
    new AppError('SERVICE_UNAVAILABLE', 503, 'The session is being changed by other requests; retry', {
      'Retry-After': '1',
    }),
};

/** Live sessions of a meeting: started, looked up, stopped, finalized or failed. */
function sessionOps(db: Db) {
  const sessions = db.collection<SessionDoc>('transcription_sessions');
  const holds = db.collection<HoldDoc>('transcription_session_holds');
  /**
   * Updates a session under its hold: chunks, caption passes, stops and the final pass write
   * different fields of one document, and FerretDB 1.x applies each update as read-modify-write
   * of the whole document, so without the hold one writer can put back what another just changed
   * (and a guarded update, a claim, could succeed twice). True when the session changed.
   */
  const change = async (s: SessionKey, where: Filter<SessionDoc>, update: UpdateFilter<SessionDoc>) =>
    (
      await holding(
        holds,
        s._id,
        () => sessions.updateOne({ ...where, _id: s._id, workspaceId: s.workspaceId }, update),
        SESSION_HOLD,
      )
    ).modifiedCount > 0;
  const newestFirst = (workspaceId: string, meetingId: string) =>
    sessions.find({ workspaceId, meetingId }).sort({ startedAt: -1 });
  return {
    startSession: async (s: TranscriptionSession) => void (await sessions.insertOne(s)),
    /** A session of the workspace (and of `meetingId` when given), or null. */
    session: (workspaceId: string, id: string, meetingId?: string): Promise<TranscriptionSession | null> =>
      findById(sessions, id, meetingId === undefined ? { workspaceId } : { workspaceId, meetingId }),
    /** The meeting's session that is still live or finalizing, if any. */
    openSession: (workspaceId: string, meetingId: string): Promise<TranscriptionSession | null> =>
      sessions.findOne({ workspaceId, meetingId, status: { $in: ['live', 'finalizing'] } }),
    sessionOfJob: (workspaceId: string, meetingId: string, jobId: string): Promise<TranscriptionSession | null> =>
      sessions.findOne({ workspaceId, meetingId, jobId }),
    /** The meeting's sessions, newest first. */
    recentSessions: (workspaceId: string, meetingId: string, limit: number): Promise<TranscriptionSession[]> =>
      newestFirst(workspaceId, meetingId).limit(limit).toArray(),
    latestSession: (workspaceId: string, meetingId: string): Promise<TranscriptionSession | null> =>
      newestFirst(workspaceId, meetingId).limit(1).next(),
    /** The ready session of the meeting that wrote this transcript artifact. */
    sessionOfArtifact: (
      workspaceId: string,
      meetingId: string,
      artifactId: string,
    ): Promise<TranscriptionSession | null> =>
      sessions.findOne({ workspaceId, meetingId, artifactId, status: 'ready' }),
    /** Moves the contiguous mark up to `contiguous` (never down). */
    advanceContiguous: async (s: SessionKey, contiguous: number) =>
      void (await change(s, {}, { $max: { contiguous } })),
    /** A live session starts finalizing; false when it was no longer live (another stop won). */
    stopSession: (s: SessionKey, at: Date) =>
      change(s, { status: 'live' }, { $set: { status: 'finalizing', stoppedAt: at } }),
    /**
     * Claims the caption window that starts at `from` (the session's caption mark moves past `to`);
     * false when a retried pass captioned it already.
     */
    claimCaptionWindow: (s: SessionKey, from: number, to: number, captionMs: number) =>
      change(s, { captionSeq: from }, { $set: { captionSeq: to + 1, captionMs } }),
    markSessionReady: async (s: SessionKey, o: { finalizedAt: Date; missing: number[] }) =>
      void (await change(s, {}, { $set: { status: 'ready', finalizedAt: o.finalizedAt, missing: o.missing } })),
    markSessionFailed: async (s: SessionKey, error: string) =>
      void (await change(s, {}, { $set: { status: 'failed', error } })),
    /** Counts a newly stored chunk on its session. */
    countChunk: async (s: SessionKey, seq: number, bytes: number) =>
      void (await change(s, {}, { $inc: { chunkCount: 1, bytes }, $max: { maxSeq: seq } })),
  };
}

/** The stored chunks of a session (the first of each seq wins). */
function chunkOps(db: Db) {
  const chunks = db.collection<ChunkRowDoc>('transcription_chunks');
  return {
    hasChunk: async (s: SessionKey, seq: number) =>
      !!(await chunks.findOne({ _id: chunkId(s._id, seq), workspaceId: s.workspaceId }, { projection: { _id: 1 } })),
    /** Stores a chunk's row; false when that seq was stored already (the first one wins). */
    recordChunk: async (c: Omit<AudioChunk, '_id'>): Promise<boolean> => {
      try {
        await chunks.insertOne({ _id: chunkId(c.sessionId, c.seq), ...c });
        return true;
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
    },
    /** The seqs stored from `from` on, ascending (at most `limit`). */
    chunkSeqs: async (s: SessionKey, from: number, limit: number): Promise<number[]> =>
      (
        await chunks
          .find({ sessionId: s._id, workspaceId: s.workspaceId, seq: { $gte: from } }, { projection: { seq: 1 } })
          .sort({ seq: 1 })
          .limit(limit)
          .toArray()
      ).map((r) => r.seq),
    /** The stored chunks with seq in [from, to], ascending. */
    chunksBetween: (s: SessionKey, from: number, to: number): Promise<AudioChunk[]> =>
      chunks
        .find({ sessionId: s._id, workspaceId: s.workspaceId, seq: { $gte: from, $lte: to } })
        .sort({ seq: 1 })
        .toArray(),
    /** Seq and size of the stored chunks with seq in [from, below), ascending. */
    chunkSizes: (s: SessionKey, from: number, below: number): Promise<Pick<AudioChunk, 'seq' | 'bytes'>[]> =>
      chunks
        .find(
          { sessionId: s._id, workspaceId: s.workspaceId, seq: { $gte: from, $lt: below } },
          { projection: { seq: 1, bytes: 1 } },
        )
        .sort({ seq: 1 })
        .toArray(),
  };
}

/** Staged audio attachments and saved vocabulary. */
function attachmentAndVocabularyOps(db: Db) {
  const attachments = db.collection<AttachmentDoc>('attachments');
  const vocabulary = db.collection<VocabularyDoc>('stt_vocabulary');
  return {
    recordAttachment: async (a: Attachment) => void (await attachments.insertOne(a)),
    attachment: (workspaceId: string, id: string): Promise<Attachment | null> =>
      findById(attachments, id, { workspaceId }),
    /** The terms saved for the workspace (brainId null) or one of its brains; [] when none. */
    savedTerms: async (workspaceId: string, brainId: string | null): Promise<string[]> =>
      (await findById(vocabulary, vocabularyId(workspaceId, brainId), { workspaceId }))?.terms ?? [],
    /** Replaces the saved terms of that level. */
    saveTerms: async (workspaceId: string, brainId: string | null, terms: string[]) =>
      void (await vocabulary.updateOne(
        { _id: vocabularyId(workspaceId, brainId), workspaceId },
        { $set: { workspaceId, brainId, terms, updatedAt: new Date() } },
        { upsert: true },
      )),
  };
}

/** Speech to text's stored state: sessions, chunks, attachments and vocabulary (part of the meetings repository). */
export function createTranscriptionStore(db: Db): TranscriptionStore {
  return { ...sessionOps(db), ...chunkOps(db), ...attachmentAndVocabularyOps(db) };
}
