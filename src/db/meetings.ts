import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from './client.js';
import { page, pageIndexes, type PageQuery } from './paging.js';

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
/** Vocabulary terms saved for a workspace (brainId null) or a brain. */
export interface VocabularyDoc {
  _id: string;
  workspaceId: string;
  brainId: string | null;
  terms: string[];
  updatedAt: Date;
}

export const meetingIndexes: IndexSpec[] = [
  // GET /v1/meetings pages by (updatedAt, _id) (src/db/paging.ts), workspace-wide or in one brain, with or without ?transcription_status.
  ...pageIndexes('meetings', ['workspaceId'], ['updatedAt']),
  ...pageIndexes('meetings', ['workspaceId', 'brainId'], ['updatedAt']),
  ...pageIndexes('meetings', ['workspaceId', 'brainId', 'transcriptionStatus'], ['updatedAt']),
  { collection: 'meeting_versions', keys: { meetingId: 1, version: -1 }, name: 'meeting_version' },
  {
    collection: 'transcription_sessions',
    keys: { workspaceId: 1, meetingId: 1, startedAt: -1 },
    name: 'ws_meeting_started',
  },
  { collection: 'transcription_sessions', keys: { jobId: 1 }, name: 'job' },
  { collection: 'transcription_chunks', keys: { sessionId: 1, seq: 1 }, name: 'session_seq' },
  { collection: 'attachments', keys: { workspaceId: 1, createdAt: -1 }, name: 'ws_created' },
];

export function createMeetingRepo(db: Db) {
  const meetings = db.collection<MeetingDoc>('meetings');
  return {
    meetings,
    versions: db.collection<MeetingVersionDoc>('meeting_versions'),
    sessions: db.collection<SessionDoc>('transcription_sessions'),
    chunks: db.collection<ChunkRowDoc>('transcription_chunks'),
    attachments: db.collection<AttachmentDoc>('attachments'),
    vocabulary: db.collection<VocabularyDoc>('stt_vocabulary'),
    /** A page of the workspace's meetings, most recently changed first. */
    list: (filter: Filter<MeetingDoc> & { workspaceId: string }, q: PageQuery) =>
      page(meetings, filter, { field: 'updatedAt', dir: -1 }, q),
  };
}
export type MeetingRepo = ReturnType<typeof createMeetingRepo>;
