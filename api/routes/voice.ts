import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  Attachment,
  PrewarmBody,
  PrewarmResult,
  TranscribeBody,
  TranscriptionRuntime,
  VocabularyDefaults,
  VocabularyDefaultsQuery,
} from '../../src/meetings/index.js';
import { streamUpload } from '../multipart.js';
import { presentAttachment } from '../presenters/meetings.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ config: s.config, transcription: s.transcription, vocabulary: s.vocabulary }));

const tags = ['voice'];

/** Voice vocabulary, batch transcription and audio staging (docs/meetings.md). */
export default [
  route({
    method: 'get',
    path: '/v1/voice/stt-vocabulary/defaults',
    summary: 'Read the built-in speech vocabulary',
    query: VocabularyDefaultsQuery,
    response: VocabularyDefaults,
    tags,
    description: "The static vocabulary: core terms, the vertical's (vertical_id, default general) and both merged",
    handler: async ({ query, services }) => services.vocabulary.defaults(query.vertical_id),
  }),
  route({
    method: 'post',
    path: '/v1/voice/stt-vocabulary/prewarm',
    summary: "Merge and cache a brain's speech vocabulary",
    body: PrewarmBody,
    response: PrewarmResult,
    tags,
    description:
      "Merges core, vertical, workspace and brain terms and caches them for transcription hints; workspace_id must be the credential's (403), brain_id one of its brains (404)",
    handler: async ({ body, scope, services }) => services.vocabulary.prewarm(scope, body),
  }),
  route({
    method: 'get',
    path: '/v1/transcription/runtime',
    summary: 'Show the active speech-to-text provider',
    response: TranscriptionRuntime,
    tags,
    description:
      'Which speech-to-text provider is active, whether it can run (reason when not) and whether GLADIA_API_KEY is set',
    handler: async ({ services }) => services.transcription.runtime(),
  }),
  route({
    method: 'post',
    path: '/v1/transcribe',
    summary: 'Transcribe an attachment or audio asset',
    status: 202,
    brain: 'optional',
    body: TranscribeBody,
    response: z.object({ job_id: z.string() }),
    tags,
    description:
      'Transcribes a staged attachment or an audio asset as a `transcription` job; its result is { text, segments }',
    handler: async ({ body, scope, services }) => ({
      job_id: (await services.transcription.transcribe(scope, body)).jobId,
    }),
  }),
  route({
    method: 'post',
    path: '/v1/chat/attachments',
    summary: 'Upload an audio attachment',
    status: 201,
    brain: 'optional',
    response: Attachment,
    tags,
    description:
      'multipart/form-data, field "file": audio (WAV, FLAC, Ogg, MP3, AIFF; type sniffed from the bytes, 415 otherwise) up to ATTACHMENT_MAX_BYTES (413)',
    handler: async ({ ctx, scope, services }) => {
      const id = randomUUID();
      const { file } = await streamUpload(ctx, {
        maxBytes: services.config.ATTACHMENT_MAX_BYTES,
        onFile: (stream, info) =>
          services.transcription.stageAttachment(scope, id, {
            stream,
            fileName: info.filename,
            declaredType: info.mimeType,
          }),
      });
      return presentAttachment(file);
    },
  }),
];
