import type { Page, PageQuery } from '../kernel/store/paging.js';
import type {
  Attachment,
  AudioChunk,
  Meeting,
  MeetingChange,
  MeetingListFilter,
  SessionKey,
  TranscriptionSession,
} from './model.js';

/**
 * Speech to text's stored state, in domain terms (transcription.mongo.ts is the MongoDB and
 * FerretDB adapter): live sessions, their audio chunks, staged attachments and saved vocabulary.
 * Part of the meetings store (MeetingStore extends it), not a repository of its own.
 */
export interface TranscriptionStore {
  /** Stores a new live session. */
  startSession(s: TranscriptionSession): Promise<void>;
  /** A session of the workspace (and of `meetingId` when given), or null. */
  session(workspaceId: string, id: string, meetingId?: string): Promise<TranscriptionSession | null>;
  /** The meeting's session that is still live or finalizing, if any. */
  openSession(workspaceId: string, meetingId: string): Promise<TranscriptionSession | null>;
  /** The meeting's session whose workflow is that job, or null. */
  sessionOfJob(workspaceId: string, meetingId: string, jobId: string): Promise<TranscriptionSession | null>;
  /** The meeting's sessions, newest first (at most `limit`). */
  recentSessions(workspaceId: string, meetingId: string, limit: number): Promise<TranscriptionSession[]>;
  /** The meeting's newest session, or null. */
  latestSession(workspaceId: string, meetingId: string): Promise<TranscriptionSession | null>;
  /** The ready session of the meeting that wrote this transcript artifact. */
  sessionOfArtifact(workspaceId: string, meetingId: string, artifactId: string): Promise<TranscriptionSession | null>;
  /** Moves the contiguous mark up to `contiguous` (never down). */
  advanceContiguous(s: SessionKey, contiguous: number): Promise<void>;
  /** A live session starts finalizing; false when it was no longer live (another stop won). */
  stopSession(s: SessionKey, at: Date): Promise<boolean>;
  /**
   * Claims the caption window that starts at `from` (the session's caption mark moves past `to`);
   * false when a retried pass captioned it already.
   */
  claimCaptionWindow(s: SessionKey, from: number, to: number, captionMs: number): Promise<boolean>;
  /** The session is ready: its final pass is done, with the seqs still missing. */
  markSessionReady(s: SessionKey, o: { finalizedAt: Date; missing: number[] }): Promise<void>;
  /** The session failed with this error. */
  markSessionFailed(s: SessionKey, error: string): Promise<void>;
  /** Counts a newly stored chunk on its session. */
  countChunk(s: SessionKey, seq: number, bytes: number): Promise<void>;
  /** Whether the session's chunk of that seq is stored. */
  hasChunk(s: SessionKey, seq: number): Promise<boolean>;
  /** Stores a chunk's row; false when that seq was stored already (the first one wins). */
  recordChunk(c: Omit<AudioChunk, '_id'>): Promise<boolean>;
  /** The seqs stored from `from` on, ascending (at most `limit`). */
  chunkSeqs(s: SessionKey, from: number, limit: number): Promise<number[]>;
  /** The stored chunks with seq in [from, to], ascending. */
  chunksBetween(s: SessionKey, from: number, to: number): Promise<AudioChunk[]>;
  /** Seq and size of the stored chunks with seq in [from, below), ascending. */
  chunkSizes(s: SessionKey, from: number, below: number): Promise<Pick<AudioChunk, 'seq' | 'bytes'>[]>;
  /** Stores a staged attachment. */
  recordAttachment(a: Attachment): Promise<void>;
  /** A staged attachment of the workspace, or null. */
  attachment(workspaceId: string, id: string): Promise<Attachment | null>;
  /** The terms saved for the workspace (brainId null) or one of its brains; [] when none. */
  savedTerms(workspaceId: string, brainId: string | null): Promise<string[]>;
  /** Replaces the saved terms of that level. */
  saveTerms(workspaceId: string, brainId: string | null, terms: string[]): Promise<void>;
}

/**
 * What the meeting, transcription and vocabulary services ask of their store, in domain terms
 * (store.mongo.ts is the MongoDB and FerretDB adapter): meetings, their version rows, and the
 * transcription state (TranscriptionStore). Every tenant read takes the workspace; the search
 * index's re-reads and walk work across workspaces.
 */
export interface MeetingStore extends TranscriptionStore {
  /** One meeting of a workspace, or null. */
  meeting(workspaceId: string, id: string): Promise<Meeting | null>;
  /** A page of the workspace's meetings, most recently changed first. */
  page(f: MeetingListFilter, q: PageQuery): Promise<Page<Meeting>>;
  /** Stores a new meeting (version 1) and its first version row; a body too large is a 400. */
  create(m: Meeting): Promise<void>;
  /**
   * Makes `next` the meeting's next version if it is still at `cur.version` (optimistic): the head
   * is updated and the version row written. Null when another writer changed it first.
   */
  recordVersion(
    cur: Meeting,
    next: MeetingChange,
    o: { changes: string[]; by: string | null; at: Date },
  ): Promise<Meeting | null>;
  /** Meetings by id in bulk, in any workspace (the search index's re-reads; the caller checks each one's workspace). */
  findMany(ids: string[]): Promise<Meeting[]>;
  /** Every meeting, a page at a time (the search index's snapshot walk). */
  walk(pageSize: number): AsyncIterable<Meeting[]>;
}
