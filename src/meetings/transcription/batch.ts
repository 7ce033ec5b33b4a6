import type { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { bestEffort } from '../../kernel/best-effort.js';
import type { Attachment } from '../model.js';
import { notFound, unsupportedMediaType, validationError } from '../../kernel/errors.js';
import { sniffContentType } from '../../knowledge/index.js';
import { systemScope, type Scope } from '../../kernel/scope.js';
import { AUDIO_TYPES, msOf, toLinear16 } from '../../stt/audio.js';
import type { TranscriptionInput } from '../../temporal/definitions.js';
import { MAX_PASS_BYTES, type TranscriptionCore, type TranscriptionDeps } from './common.js';
import { own } from '../../kernel/own.js';

/** Batch transcription: staged attachments (or assets) are converted with sox and transcribed by a `transcription` job. */
export function createBatchTranscription(d: TranscriptionDeps, core: TranscriptionCore) {
  const { repo, config } = d;

  /** The stored audio a batch job reads: its blob and content type. */
  async function sourceOf(i: TranscriptionInput): Promise<{ blobKey: string; type: string }> {
    if (i.source.kind === 'attachment') {
      const a = await repo.attachment(i.workspaceId, i.source.id);
      if (!a) throw notFound('Attachment');
      return { blobKey: a.blobKey, type: a.contentType };
    }
    const a = await d.documents.get(systemScope(i.workspaceId), i.source.id, 'asset');
    if (!a.blobKey) throw validationError('the asset has no body');
    return { blobKey: a.blobKey, type: a.contentType ?? '' };
  }

  return {
    /** POST /v1/chat/attachments: the file streams into the blob store, is sniffed, and must be audio the platform can convert. */
    async stageAttachment(
      scope: Scope,
      id: string,
      file: { stream: Readable; fileName: string; declaredType: string },
    ) {
      const key = `attachments/${scope.workspaceId}/${id}`;
      const blob = await d.blobs.put(key, file.stream, {
        maxBytes: config.ATTACHMENT_MAX_BYTES,
        contentType: file.declaredType,
      });
      const sniffed = await sniffContentType(blob.head, { declared: file.declaredType, name: file.fileName });
      const type =
        sniffed === 'audio/x-wav' || sniffed === 'audio/vnd.wave' || sniffed === 'audio/wave' ? 'audio/wav' : sniffed;
      if (!own(AUDIO_TYPES, type)) {
        await bestEffort(d.log, "deleting a refused attachment's blob", d.blobs.delete(key));
        throw unsupportedMediaType(
          `audio (${[...new Set(Object.values(AUDIO_TYPES))].join(', ')}); this file is ${type}`,
        );
      }
      const doc: Attachment = {
        _id: id,
        workspaceId: scope.workspaceId,
        brainId: scope.brainId ?? null,
        name: file.fileName.slice(0, 300),
        contentType: type,
        size: blob.size,
        sha256: blob.sha256,
        blobKey: key,
        createdBy: core.by(scope),
        createdAt: new Date(),
      };
      await repo.recordAttachment(doc);
      return doc;
    },

    /** POST /v1/transcribe: checks the source now (404, 400), then a `transcription` job does the work. */
    async transcribe(scope: Scope, b: { source: { type: string; id: string }; locale: string; diarize: boolean }) {
      const kind: 'attachment' | 'asset' = b.source.type.startsWith('attachment') ? 'attachment' : 'asset';
      let brainId: string | null = scope.brainId ?? null;
      if (kind === 'attachment') {
        const a = await repo.attachment(scope.workspaceId, b.source.id);
        if (!a) throw notFound('Attachment');
        brainId = a.brainId ?? brainId;
      } else {
        const a = await d.documents.get(scope, b.source.id, 'asset');
        if (!a.blobKey || !own(AUDIO_TYPES, a.contentType ?? ''))
          throw validationError(`source: asset ${a._id} is ${a.contentType ?? 'empty'}, not audio`);
        brainId = a.brainId;
      }
      const jobId = randomUUID();
      const { job } = await d.jobs.create(scope, { id: jobId, kind: 'transcription', brainId });
      const input: TranscriptionInput = {
        jobId,
        workspaceId: scope.workspaceId,
        brainId,
        source: { kind, id: b.source.id },
        locale: b.locale,
        diarize: b.diarize,
      };
      await d.jobs.startWorkflow(job, 'transcription', [input], `transcription of ${kind} ${b.source.id}`);
      return { jobId };
    },

    /** The `transcription` workflow's step: read, convert, transcribe, and end the job with `{ text, segments }`. */
    async batchRun(i: TranscriptionInput, attempt = 1) {
      await d.jobs.transition(i.workspaceId, i.jobId, { status: 'running', currentStep: 'converting', progress: 10 });
      const { blobKey, type } = await sourceOf(i);
      const body = await d.blobs.read(blobKey, Math.max(config.ATTACHMENT_MAX_BYTES, config.ASSET_MAX_BYTES));
      const pcm = await toLinear16(body, type, config.SOX_BIN);
      if (pcm.length > MAX_PASS_BYTES) throw validationError('the recording is longer than two hours');
      await d.jobs.transition(i.workspaceId, i.jobId, { status: 'running', currentStep: 'transcribing', progress: 30 });
      const hints = await d.vocabulary.hintsFor(i.workspaceId, i.brainId);
      const t = await core.transcribe(
        pcm,
        { locale: i.locale, diarize: i.diarize, hints },
        { key: `batch:${attempt}`, workspaceId: i.workspaceId, brainId: i.brainId, jobId: i.jobId },
      );
      await d.jobs.finalize(i.workspaceId, i.jobId, {
        status: 'completed',
        progress: 100,
        currentStep: 'completed',
        result: { text: t.text, segments: t.segments },
      });
      return { chars: t.text.length, segments: t.segments.length, durationMs: msOf(pcm.length) };
    },
    batchFail: (i: TranscriptionInput, reason: string) =>
      d.jobs
        .finalize(i.workspaceId, i.jobId, { status: 'failed', failedReason: reason, currentStep: 'failed' })
        .then(() => undefined),
  };
}
