import { IdParams } from '../../src/kernel/schemas.js';
import { Artifact } from '../../src/knowledge/index.js';
import {
  ArtifactParams,
  ChunkAck,
  ChunkBody,
  LiveEventsQuery,
  LiveHistory,
  LiveHistoryQuery,
  LiveSession,
  LiveStartBody,
  LiveStopBody,
  Meeting,
  MeetingCreateBody,
  MeetingList,
  MeetingListQuery,
  SessionParams,
} from '../../src/meetings/index.js';
import { presentArtifact } from '../presenters/knowledge.js';
import { presentMeeting } from '../presenters/meetings.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';
import { resumeCursor, sseStream } from '../sse.js';

const route = areaRoutes((s) => ({ meetings: s.meetings, streams: s.streams, transcription: s.transcription }));

const tags = ['meetings'];
const base = '/v1/meetings/:id/transcription';

/** Meetings and their live transcription (docs/meetings.md). */
export default [
  route({
    method: 'get',
    path: '/v1/meetings',
    summary: 'List meetings',
    brain: 'optional',
    query: MeetingListQuery,
    response: MeetingList,
    tags,
    description: 'Meeting heads of the active brain (X-Brain-Id or brain_id), newest change first',
    handler: async ({ query, scope, services }) => {
      const p = await services.meetings.list(scope, query);
      return { meetings: p.items.map(presentMeeting), ...presentPage(p) };
    },
  }),
  route({
    method: 'post',
    path: '/v1/meetings',
    summary: 'Create a meeting',
    status: 201,
    brain: 'optional',
    body: MeetingCreateBody,
    response: Meeting,
    tags,
    handler: async ({ body, scope, services }) => presentMeeting(await services.meetings.create(scope, body)),
  }),
  route({
    method: 'get',
    path: '/v1/meetings/:id',
    summary: 'Read a meeting',
    brain: 'optional',
    params: IdParams,
    response: Meeting,
    tags,
    handler: async ({ params, scope, services }) => presentMeeting(await services.meetings.get(scope, params.id)),
  }),
  route({
    method: 'post',
    path: `${base}/live/start`,
    summary: 'Start a live transcription session',
    status: 201,
    brain: 'optional',
    params: IdParams,
    body: LiveStartBody,
    response: LiveSession,
    tags,
    description:
      'Starts a live session (a liveTranscription job): send 16 kHz mono linear16 chunks to .../chunk with its job_id; 409 while another session is live',
    handler: async ({ params, body, scope, services }) =>
      services.transcription.presentSession(await services.transcription.liveStart(scope, params.id, body)),
  }),
  route({
    method: 'post',
    path: `${base}/chunk`,
    summary: 'Send a chunk of meeting audio',
    brain: 'optional',
    params: IdParams,
    body: ChunkBody,
    response: ChunkAck,
    tags,
    description:
      'Stores one chunk (seq from 0; a repeated seq is accepted once; out of order is placed by seq; gaps are reported in missing_seqs); 400 for malformed or oversized audio',
    handler: async ({ params, body, scope, services }) => services.transcription.chunk(scope, params.id, body),
  }),
  route({
    method: 'get',
    path: `${base}/live/events/:session_id`,
    summary: "Stream a session's live captions",
    kind: 'stream',
    brain: 'optional',
    params: SessionParams,
    query: LiveEventsQuery,
    tags,
    description:
      'SSE captions: { type: partial | final, text, seq_from, seq_to, start_ms, end_ms }, { type: gap, missing_seqs }, then one { type: complete, artifact_id } or { type: error }; resume with after=<cursor>',
    handler: async ({ params, query, scope, services, ctx }) => {
      const s = await services.transcription.session(scope, params.id, params.session_id);
      return sseStream(ctx, {
        streams: services.streams,
        key: services.transcription.captionStreamKey(s),
        after: resumeCursor(ctx, query.after),
        endOnTerminal: true,
      });
    },
  }),
  route({
    method: 'get',
    path: `${base}/live/history`,
    summary: "List a meeting's transcription sessions",
    brain: 'optional',
    params: IdParams,
    query: LiveHistoryQuery,
    response: LiveHistory,
    tags,
    handler: async ({ params, query, scope, services }) => services.transcription.history(scope, params.id, query),
  }),
  route({
    method: 'post',
    path: `${base}/live/stop`,
    summary: 'Stop live transcription and finalize',
    status: 202,
    brain: 'optional',
    params: IdParams,
    body: LiveStopBody,
    response: LiveSession,
    tags,
    description:
      'Stops the newest (or the named) session: a final pass over all stored audio saves the transcript artifact and patches the meeting (transcription.status ready); follow the job',
    handler: async ({ params, body, scope, services }) =>
      services.transcription.presentSession(await services.transcription.liveStop(scope, params.id, body)),
  }),
  route({
    method: 'get',
    path: `${base}/artifacts/:artifact_id`,
    summary: "Read a meeting's transcript artifact",
    brain: 'optional',
    params: ArtifactParams,
    response: Artifact,
    tags,
    handler: async ({ params, scope, services }) =>
      presentArtifact(await services.transcription.artifact(scope, params.id, params.artifact_id)),
  }),
];
