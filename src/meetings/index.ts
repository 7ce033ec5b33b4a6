/**
 * Meetings (docs/meetings.md): the area's only door. Meetings and the stored shapes (`model.ts`),
 * their store (the contract `store.ts`, MeetingStore and its part TranscriptionStore; the adapter
 * `store.mongo.ts`), transcription, batch and live (`transcription.ts` and `transcription/`,
 * sessions and chunks in `transcription.mongo.ts`), captions, and the request shapes (`schemas.ts`). Routes, activities,
 * the composition root and other areas import from here. The stored shapes are `MeetingRecord`
 * and `AttachmentRecord` here, as `Meeting` and `Attachment` name the response schemas.
 */
export { createMeetingRepo, meetingIndexes } from './store.mongo.js';
export type { Attachment as AttachmentRecord, Meeting as MeetingRecord, MeetingDoc } from './model.js';
export * from './schemas.js';
export * from './voice-schemas.js';
export * from './service.js';
export * from './transcription.js';
export * from './vocabulary.js';
