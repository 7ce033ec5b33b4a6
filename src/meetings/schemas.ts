import { z } from 'zod';
import { JsonObject, paging, Uuid, PageTotal, pageFields } from '../kernel/schemas.js';

/** A transcript stretch (a meeting's `transcript_segments`; docs/meetings.md). */
export const TranscriptSegment = z
  .object({
    speaker: z.string().max(200),
    text: z.string().max(20_000),
    start_ms: z.number().int().min(0).optional(),
    end_ms: z.number().int().min(0).optional(),
  })
  .meta({ id: 'TranscriptSegment' });
const TranscriptionStatus = z
  .enum(['idle', 'live', 'finalizing', 'ready', 'failed'])
  .meta({ description: 'idle (never transcribed), live, finalizing, ready (final transcript saved), failed' });
export const MeetingTranscription = z
  .object({
    status: TranscriptionStatus,
    finalized_at: z.iso.datetime().nullable().optional(),
    session_id: z.string().optional(),
    job_id: z.string().optional(),
    artifact_id: z.string().optional(),
    error: z.string().max(2000).optional(),
    missing_seqs: z
      .array(z.number().int())
      .max(1000)
      .optional()
      .meta({ description: 'chunk seqs never received when the transcript was finalized' }),
  })
  .meta({ id: 'MeetingTranscription' });
const ActionItem = z.object({
  text: z.string().min(1).max(2000),
  owner: z.string().max(200).optional(),
  due: z.string().max(40).optional(),
  done: z.boolean().optional(),
});

/** A text's non-blank lines, trimmed: a list part sent as one text holds one item per line. */
const linesOf = (text: string): string[] =>
  text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);

/**
 * A list of text items (agenda, decisions) sent as a list, or as one text (one item per non-blank
 * line); stored and returned as the list.
 */
const textList = (itemMax: number, max: number, what: string) => {
  const list = z.array(z.string().max(itemMax)).max(max);
  return z
    .union([
      list,
      z
        .string()
        .max(itemMax * 10)
        .transform(linesOf)
        .pipe(list),
    ])
    .meta({ description: `${what}: a list of texts, or one text with an item per line (stored as the list)` });
};

/** A text part (notes, summary) sent as a text, or as a list of texts (joined with line breaks); stored as the text. */
const textPart = (max: number, what: string) => {
  const text = z.string().max(max);
  return z
    .union([
      text,
      z
        .array(z.string())
        .max(10_000)
        .transform((parts) => parts.join('\n'))
        .pipe(text),
    ])
    .meta({ description: `${what}: a text, or a list of texts (joined with line breaks; stored as the text)` });
};

/** Action items: objects, or texts (each `{ text }`), or one text with an item per line. */
const ActionItemOrText = z.union([
  ActionItem,
  z
    .string()
    .min(1)
    .max(2000)
    .transform((text) => ({ text })),
]);
const ActionItems = z
  .union([
    z.array(ActionItemOrText).max(500),
    z
      .string()
      .max(200_000)
      .transform((t) => linesOf(t).map((text) => ({ text })))
      .pipe(z.array(ActionItem).max(500)),
  ])
  .meta({
    description:
      'action items: { text, owner?, due?, done? } objects or plain texts (each becomes { text }), or one text with an item per line',
  });

/**
 * The structured body's known fields (docs/meetings.md); other keys are kept as sent. The text
 * parts take text or a list and are stored in one shape each: agenda, decisions and action_items
 * as lists, notes and summary as text.
 */
const bodyFields = {
  agenda: textList(2000, 200, 'agenda').optional(),
  notes: textPart(200_000, 'notes').optional(),
  summary: textPart(50_000, 'summary').optional(),
  decisions: textList(5000, 500, 'decisions').optional(),
  action_items: ActionItems.optional(),
  transcript_segments: z.array(TranscriptSegment).max(20_000).optional(),
  transcription: MeetingTranscription.optional(),
};
export const MeetingBody = z.object(bodyFields).catchall(z.unknown()).meta({ id: 'MeetingBody' });
export type MeetingBody = z.infer<typeof MeetingBody>;

export const MeetingCreateBody = z
  .object({
    title: z.string().trim().min(1).max(300),
    description: z.string().max(5000).optional(),
    body: MeetingBody.optional(),
    brain_id: Uuid.optional(),
  })
  .strict()
  .meta({ id: 'MeetingCreateBody' });
export const MeetingListQuery = z.object({
  ...paging(20),
  brain_id: Uuid.optional(),
  transcription_status: TranscriptionStatus.optional(),
});

/**
 * The meeting patch envelope (POST /v1/resources/meeting/:id/patch): body fields at the top
 * level or under `body`; each one sent replaces that field. `base_version` makes it conditional (409).
 */
export const MeetingPatchBody = z
  .object({
    base_version: z.number().int().min(1).optional(),
    title: z.string().trim().min(1).max(300).optional(),
    description: z.string().max(5000).optional(),
    body: MeetingBody.optional(),
    ...bodyFields,
  })
  .catchall(z.unknown())
  .refine((b) => Object.keys(b).some((k) => k !== 'base_version'), 'send at least one field to change')
  .meta({ id: 'MeetingPatchBody' });
export type MeetingPatchBody = z.infer<typeof MeetingPatchBody>;

export const Meeting = z
  .object({
    id: z.string(),
    kind: z.literal('meeting'),
    brain_id: z.string(),
    title: z.string(),
    description: z.string(),
    body: JsonObject,
    transcription: MeetingTranscription,
    version: z.number(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Meeting' });
export const MeetingList = z.object({
  meetings: z.array(Meeting),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});

// ---- live transcription ----
export const LiveStartBody = z
  .object({
    locale: z
      .string()
      .regex(/^[a-zA-Z]{2,3}([-_][a-zA-Z0-9]{2,8})*$/, 'a language tag like en-US')
      .default('en-US'),
    diarize: z.boolean().default(false),
  })
  .strict();
export const LiveSession = z
  .object({
    session_id: z.string(),
    job_id: z.string(),
    meeting_id: z.string(),
    status: z.enum(['live', 'finalizing', 'ready', 'failed']),
    locale: z.string(),
    encoding: z.literal('linear16'),
    sample_rate: z.literal(16000),
    channels: z.literal(1),
    max_chunk_bytes: z.number(),
    chunk_count: z.number(),
    received_ms: z.number(),
    next_expected_seq: z.number(),
    missing_seqs: z.array(z.number()),
    artifact_id: z.string().nullable(),
    started_at: z.string(),
    stopped_at: z.string().nullable(),
    finalized_at: z.string().nullable(),
    error: z.string().nullable(),
  })
  .meta({ id: 'LiveTranscriptionSession' });
export const ChunkBody = z
  .object({
    job_id: Uuid,
    seq: z.number().int().min(0).max(10_000_000).meta({ description: 'monotonic chunk number, from 0' }),
    chunk_base64: z
      .string()
      .min(1)
      .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64')
      .meta({ description: '16 kHz mono linear16 PCM (little-endian), base64' }),
  })
  .strict();
export const ChunkAck = z
  .object({
    accepted: z.boolean(),
    duplicate: z.boolean(),
    seq: z.number(),
    next_expected_seq: z.number(),
    missing_seqs: z.array(z.number()),
    gap: z.boolean(),
    chunk_count: z.number(),
  })
  .meta({ id: 'TranscriptionChunkAck' });
export const LiveStopBody = z.object({ session_id: Uuid.optional() }).strict();
export const SessionParams = z.object({ id: Uuid, session_id: Uuid });
export const ArtifactParams = z.object({ id: Uuid, artifact_id: Uuid });
export const LiveEventsQuery = z.object({ after: z.string().optional() });
export const LiveHistoryQuery = z.object({
  session_id: Uuid.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});
const Caption = z.object({
  type: z.enum(['partial', 'final']),
  text: z.string(),
  seq_from: z.number(),
  seq_to: z.number(),
  start_ms: z.number(),
  end_ms: z.number(),
});
export const LiveHistory = z.object({
  sessions: z.array(LiveSession),
  captions: z
    .array(Caption.extend({ cursor: z.string() }))
    .meta({ description: 'final captions of the newest (or the named) session' }),
});
export const Attachment = z
  .object({
    id: z.string(),
    attachment_id: z.string(),
    name: z.string(),
    content_type: z.string(),
    size: z.number(),
    sha256: z.string(),
    brain_id: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'ChatAttachment' });
