import type { z } from 'zod';
import type { AttachmentRecord as StoredAttachment, MeetingRecord as StoredMeeting } from '../../src/meetings/index.js';
import type { Attachment, Meeting, MeetingTranscription } from '../../src/meetings/index.js';
import { transcriptionOf } from '../../src/meetings/index.js';

/** Wire shape of a meeting; `transcription` is lifted from the body for convenience (idle when never transcribed). */
export function presentMeeting(m: StoredMeeting): z.input<typeof Meeting> {
  const body = m.body;
  return {
    id: m._id,
    kind: 'meeting',
    brain_id: m.brainId,
    title: m.title,
    description: m.description,
    body,
    transcription: transcriptionOf(body) as z.input<typeof MeetingTranscription>,
    version: m.version,
    created_at: m.createdAt.toISOString(),
    updated_at: m.updatedAt.toISOString(),
  };
}

export function presentAttachment(a: StoredAttachment): z.input<typeof Attachment> {
  return {
    id: a._id,
    attachment_id: a._id,
    name: a.name,
    content_type: a.contentType,
    size: a.size,
    sha256: a.sha256,
    brain_id: a.brainId,
    created_at: a.createdAt.toISOString(),
  };
}
