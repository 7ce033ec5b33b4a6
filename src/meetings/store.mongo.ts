import type { Db, Filter } from 'mongodb';
import { validationError } from '../kernel/errors.js';
import { updateHeld, type HoldDoc } from '../kernel/store/claims.js';
import { findById, findByIds, type IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { page, pageIndexes, type Page, type PageQuery } from '../kernel/store/paging.js';
import { createTranscriptionStore } from './transcription.mongo.js';
import type { Meeting, MeetingChange, MeetingDoc, MeetingListFilter, MeetingVersionDoc } from './model.js';
import type { MeetingStore } from './store.js';

/** A meeting body is stored as at most this many characters of JSON. */
const MAX_MEETING_BODY_CHARS = 8_000_000;

export const meetingIndexes: IndexSpec[] = [
  // GET /v1/meetings pages by (updatedAt, _id) (src/kernel/store/paging.ts), workspace-wide or in one brain, with or without ?transcription_status.
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

const toMeeting = ({ body, ...rest }: MeetingDoc): Meeting => ({
  ...rest,
  body: decodeBlob<Record<string, unknown>>(body, {}),
});

function encodeBody(body: Record<string, unknown>): string {
  const s = encodeBlob(body);
  if (s.length > MAX_MEETING_BODY_CHARS)
    throw validationError(`body: at most ${MAX_MEETING_BODY_CHARS} characters of JSON`);
  return s;
}

/** Meetings, their versions, and (createTranscriptionStore) their transcription sessions, chunks, attachments and vocabulary. */
export function createMeetingRepo(db: Db): MeetingStore {
  const meetings = db.collection<MeetingDoc>('meetings');
  const versions = db.collection<MeetingVersionDoc>('meeting_versions');
  const holds = db.collection<HoldDoc>('meeting_holds');
  const versionRow = (m: MeetingDoc, changes: string[], by: string | null, at: Date): MeetingVersionDoc => ({
    _id: `${m._id}:${m.version}`,
    meetingId: m._id,
    workspaceId: m.workspaceId,
    version: m.version,
    title: m.title,
    description: m.description,
    body: m.body,
    changes,
    createdBy: by,
    createdAt: at,
  });
  return {
    meeting: async (workspaceId: string, id: string): Promise<Meeting | null> => {
      const m = await findById(meetings, id, { workspaceId });
      return m ? toMeeting(m) : null;
    },
    /** A page of the workspace's meetings, most recently changed first. */
    page: async (f: MeetingListFilter, q: PageQuery): Promise<Page<Meeting>> => {
      const filter: Filter<MeetingDoc> = { workspaceId: f.workspaceId };
      if (f.brainId) filter.brainId = f.brainId;
      if (f.transcriptionStatus) filter.transcriptionStatus = f.transcriptionStatus;
      const p = await page(meetings, filter, { field: 'updatedAt', dir: -1 }, q);
      return { ...p, items: p.items.map(toMeeting) };
    },
    /** Stores a new meeting (version 1) and its first version row; a body too large is a 400. */
    create: async (m: Meeting): Promise<void> => {
      const doc: MeetingDoc = { ...m, body: encodeBody(m.body) };
      await meetings.insertOne(doc);
      await versions.insertOne(versionRow(doc, ['created'], doc.createdBy, doc.createdAt));
    },
    /**
     * Makes `next` the meeting's next version if it is still at `cur.version` (optimistic): the
     * head is updated and the version row written. Null when another writer changed it first. The
     * version guard is checked under the meeting's hold (FerretDB 1.x applies an update as
     * read-modify-write, so two guarded updates could both pass without it).
     */
    recordVersion: async (
      cur: Meeting,
      next: MeetingChange,
      o: { changes: string[]; by: string | null; at: Date },
    ): Promise<Meeting | null> => {
      const set = { ...next, body: encodeBody(next.body), version: cur.version + 1, updatedAt: o.at };
      const changed = await updateHeld(
        holds,
        meetings,
        { _id: cur._id, workspaceId: cur.workspaceId, version: cur.version },
        set,
      );
      if (!changed) return null;
      await versions.insertOne(versionRow({ ...cur, ...set }, o.changes, o.by, o.at));
      return { ...cur, ...next, version: set.version, updatedAt: o.at };
    },
    /** Meetings by id in bulk, in any workspace (the search index's re-reads; the caller checks each one's workspace). */
    findMany: async (ids: string[]): Promise<Meeting[]> => (await findByIds(meetings, ids)).map(toMeeting),
    /** Every meeting, a page at a time (the search index's snapshot walk). */
    async *walk(pageSize: number): AsyncIterable<Meeting[]> {
      let batch: Meeting[] = [];
      for await (const m of meetings.find({})) {
        batch.push(toMeeting(m));
        if (batch.length >= pageSize) {
          yield batch;
          batch = [];
        }
      }
      if (batch.length) yield batch;
    },
    ...createTranscriptionStore(db),
  };
}
