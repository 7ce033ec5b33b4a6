/** Transcription states of a meeting (docs/meetings.md). */
export type TranscriptionStatus = 'idle' | 'live' | 'finalizing' | 'ready' | 'failed';

/** A meeting head (docs/meetings.md): the structured body is client JSON, stored through the codec. */
export interface MeetingDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  title: string;
  description: string;
  /** encodeBlob of the body (agenda, notes, summary, decisions, action_items, transcript_segments, transcription, …). */
  body: string;
  /** First-class copy of body.transcription.status (filtered on). */
  transcriptionStatus: TranscriptionStatus;
  version: number;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}
/** A meeting as services and presenters see it: its body decoded. */
export type Meeting = Omit<MeetingDoc, 'body'> & { body: Record<string, unknown> };

/** One version of a meeting (`<meeting>:<version>`), written for every change. */
export interface MeetingVersionDoc {
  _id: string;
  meetingId: string;
  workspaceId: string;
  version: number;
  title: string;
  description: string;
  body: string;
  changes: string[];
  createdBy: string | null;
  createdAt: Date;
}

/** The fields a change of a meeting sets (its body decoded). */
export interface MeetingChange {
  title: string;
  description: string;
  body: Record<string, unknown>;
  transcriptionStatus: TranscriptionStatus;
}

/** Which meetings a list shows (the workspace always; a brain and a transcription state when asked). */
export interface MeetingListFilter {
  workspaceId: string;
  brainId?: string;
  transcriptionStatus?: TranscriptionStatus;
}

/** A live transcription session of a meeting; its id is the session id, its job is the `liveTranscription` workflow. */
export interface SessionDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  meetingId: string;
  jobId: string;
  locale: string;
  diarize: boolean;
  status: 'live' | 'finalizing' | 'ready' | 'failed';
  /** The first seq not yet received without a gap before it (chunks below it are all stored). */
  contiguous: number;
  maxSeq: number;
  chunkCount: number;
  bytes: number;
  /** Live captions: the next seq a final caption window starts at, and the audio time there. */
  captionSeq: number;
  captionMs: number;
  /** The transcript artifact (its id is chosen at start, so a retried finalize writes it once). */
  artifactId: string;
  missing: number[];
  error: string | null;
  createdBy: string | null;
  startedAt: Date;
  stoppedAt: Date | null;
  finalizedAt: Date | null;
}
/** A session as services see it (it holds no client JSON: the stored shape). */
export type TranscriptionSession = SessionDoc;

/** The session fields a chunk, a caption pass or the final pass reads and writes are keyed by session and workspace. */
export type SessionKey = Pick<SessionDoc, '_id' | 'workspaceId'>;

/** One stored chunk: its audio is a blob (`blobKey`); the first chunk of a seq wins. */
export interface ChunkRowDoc {
  _id: string;
  sessionId: string;
  workspaceId: string;
  seq: number;
  bytes: number;
  blobKey: string;
  createdAt: Date;
}
export type AudioChunk = ChunkRowDoc;

/** Audio staged for transcription (POST /v1/chat/attachments). */
export interface AttachmentDoc {
  _id: string;
  workspaceId: string;
  brainId: string | null;
  name: string;
  contentType: string;
  size: number;
  sha256: string;
  blobKey: string;
  createdBy: string | null;
  createdAt: Date;
}
export type Attachment = AttachmentDoc;

/** Vocabulary terms saved for a workspace (brainId null) or a brain. */
export interface VocabularyDoc {
  _id: string;
  workspaceId: string;
  brainId: string | null;
  terms: string[];
  updatedAt: Date;
}
