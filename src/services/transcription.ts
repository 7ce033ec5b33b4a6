import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Client } from '@temporalio/client';
import { fromBuffer, type BlobStore } from '../blobs/store.js';
import type { Config } from '../config.js';
import { isDuplicateKey } from '../db/claims.js';
import type { AttachmentDoc, MeetingRepo, SessionDoc } from '../db/meetings.js';
import type { WorkspaceRepo } from '../db/workspaces.js';
import { conflict, notFound, unsupportedMediaType, validationError } from '../errors.js';
import { sniffContentType } from '../knowledge/extract.js';
import type { Logger } from '../logger.js';
import { systemScope, type Scope } from '../scope.js';
import { AUDIO_TYPES, BYTES_PER_MS, msOf, toLinear16 } from '../stt/audio.js';
import { createStt, type Segment, type SpeechToText, type TranscribeOptions, type Transcript } from '../stt/index.js';
import type { Streams } from '../streams.js';
import {
  chunkSignal,
  stopSignal,
  type CaptionOutcome,
  type LiveTranscriptionInput,
  type TranscriptionInput,
} from '../temporal/definitions.js';
import type { DocumentService } from './documents.js';
import type { JobService } from './jobs.js';
import type { MeetingService } from './meetings.js';
import type { UsageService } from './usage.js';
import type { VocabularyService } from './vocabulary.js';
import { findById } from '../db/client.js';
import { bestEffort } from '../best-effort.js';

/** A live session ends (and finalizes) after this long without a chunk. */
export const LIVE_IDLE_TIMEOUT_MS = 30 * 60_000;
/** New audio needed before another partial caption (ms). */
const PARTIAL_EVERY_MS = 1000;
/** Final caption windows made per caption pass (the workflow calls again while `more`). */
const WINDOWS_PER_PASS = 4;
/** Longest recording a finalize or batch pass reads into memory (2 h of linear16 ≈ 230 MB). */
const MAX_PASS_BYTES = 2 * 3600 * 1000 * BYTES_PER_MS;

const ms = (n: number) => Math.round(n);
const missingBelow = (have: number[], upTo: number, cap = 1000): number[] => {
  const set = new Set(have);
  const out: number[] = [];
  for (let s = 0; s <= upTo && out.length < cap; s++) if (!set.has(s)) out.push(s);
  return out;
};

/** Markdown of a final transcript: one line per segment with its time and speaker. */
export function transcriptMarkdown(title: string, segments: Segment[], missing: number[]): string {
  const clock = (t?: number) =>
    t === undefined
      ? ''
      : `[${String(Math.floor(t / 60_000)).padStart(2, '0')}:${String(Math.floor((t % 60_000) / 1000)).padStart(2, '0')}] `;
  const lines = segments.map((s) => `${clock(s.start_ms)}**${s.speaker}**: ${s.text}`);
  const gap = missing.length ? [`\n> Chunks never received: ${missing.join(', ')}`] : [];
  return [`# Transcript: ${title}`, '', ...lines, ...gap, ''].join('\n');
}

/**
 * Speech to text for meetings and files (docs/meetings.md). Live: the API stores each chunk
 * (blob + a row keyed by session and seq: the first of a seq wins) and signals the session's
 * `liveTranscription` workflow with the seq only; caption passes and the final pass read the
 * stored audio, so a worker restart loses nothing and no audio enters a Temporal history.
 * Batch: staged attachments (or assets) are converted with sox and transcribed by a
 * `transcription` job.
 */
export function createTranscriptionService(d: {
  repo: MeetingRepo;
  workspaces: WorkspaceRepo;
  blobs: BlobStore;
  jobs: JobService;
  meetings: MeetingService;
  documents: DocumentService;
  vocabulary: VocabularyService;
  streams: Streams;
  temporal: Client;
  config: Config;
  log: Logger;
  stt?: SpeechToText;
  usage: UsageService;
  /** Called once a meeting's transcript is final (stakeholder extraction, docs/stakeholder-maps.md); bound late. */
  onFinalized?: () =>
    | ((
        workspaceId: string,
        meeting: { id: string; brainId: string; text: string; finalizedAt: Date },
      ) => Promise<unknown>)
    | null;
}) {
  const { repo, config } = d;
  const stt = d.stt ?? createStt(config);
  /** The model a ledger row names (docs/usage.md); pocketsphinx runs here and is billed by no one: null. */
  const billedModel =
    stt.name === 'openai' ? `openai/${config.STT_MODEL}` : stt.name === 'gladia' ? 'gladia/default' : null;
  /**
   * Transcribes and, for a provider that bills, writes the call's ledger row as soon as it
   * answered (kind transcription, audio length, priced per minute). `key` names the call within
   * its job and carries the activity attempt, so a retried write adds nothing and a retried call
   * (billed again) is a row of its own.
   */
  async function transcribe(
    pcm: Buffer,
    opts: TranscribeOptions,
    bill: { key: string; workspaceId: string; brainId: string | null; jobId: string },
  ): Promise<Transcript> {
    const t = await stt.transcribe(pcm, opts);
    if (billedModel) {
      await d.usage.record({
        key: `${bill.jobId}:stt:${bill.key}`,
        workspaceId: bill.workspaceId,
        kind: 'transcription',
        modelId: billedModel,
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        audioMs: msOf(pcm.length),
        attribution: {
          brainId: bill.brainId,
          userId: null,
          apiKeyId: null,
          jobId: bill.jobId,
          traceId: null,
          receptorId: null,
          neuronId: null,
          pathwayId: null,
        },
      });
    }
    return t;
  }
  const by = (scope: Scope) => scope.userId ?? scope.apiKeyId;
  const captionKey = (s: Pick<SessionDoc, 'workspaceId' | '_id'>) => d.streams.keys.captions(s.workspaceId, s._id);
  const chunkKey = (s: SessionDoc, seq: number) =>
    `audio/${s.workspaceId}/${s._id}/${String(seq).padStart(8, '0')}-${randomUUID().slice(0, 8)}.pcm`;

  async function session(scope: Scope, meetingId: string, sessionId: string): Promise<SessionDoc> {
    await d.meetings.get(scope, meetingId);
    const s = await findById(repo.sessions, sessionId, { workspaceId: scope.workspaceId, meetingId });
    if (!s) throw notFound('Transcription session');
    return s;
  }
  const load = async (i: LiveTranscriptionInput) => {
    const s = await findById(repo.sessions, i.sessionId, { workspaceId: i.workspaceId });
    if (!s) throw notFound('Transcription session');
    return s;
  };

  /** Advances the session's contiguous mark from the stored rows; returns it with the gaps below the highest seq. */
  async function advance(s: SessionDoc): Promise<{ contiguous: number; missing: number[]; maxSeq: number }> {
    const rows = await repo.chunks
      .find({ sessionId: s._id, seq: { $gte: s.contiguous } }, { projection: { seq: 1 } })
      .sort({ seq: 1 })
      .limit(5000)
      .toArray();
    let c = s.contiguous;
    for (const r of rows) {
      if (r.seq === c) c++;
      else if (r.seq > c) break;
    }
    const maxSeq = Math.max(s.maxSeq, rows.at(-1)?.seq ?? -1);
    if (c > s.contiguous) await repo.sessions.updateOne({ _id: s._id }, { $max: { contiguous: c } });
    const have = rows.map((r) => r.seq).filter((x) => x >= c);
    const missing: number[] = [];
    const set = new Set(have);
    for (let q = c; q < maxSeq && missing.length < 100; q++) if (!set.has(q)) missing.push(q);
    return { contiguous: c, missing, maxSeq };
  }

  /** The PCM of chunks [from, to] in seq order (stored rows only). */
  async function audioOf(sessionId: string, from: number, to: number): Promise<{ pcm: Buffer; seqs: number[] }> {
    const rows = await repo.chunks
      .find({ sessionId, seq: { $gte: from, $lte: to } })
      .sort({ seq: 1 })
      .toArray();
    const parts: Buffer[] = [];
    let n = 0;
    for (const r of rows) {
      const b = await d.blobs.read(r.blobKey, config.TRANSCRIPTION_CHUNK_MAX_BYTES);
      n += b.length;
      if (n > MAX_PASS_BYTES)
        throw validationError(`the recording is longer than ${MAX_PASS_BYTES / BYTES_PER_MS / 60_000} minutes`);
      parts.push(b);
    }
    return { pcm: Buffer.concat(parts), seqs: rows.map((r) => r.seq) };
  }

  const presentSession = (s: SessionDoc, gaps?: number[]) => ({
    session_id: s._id,
    job_id: s.jobId,
    meeting_id: s.meetingId,
    status: s.status,
    locale: s.locale,
    encoding: 'linear16' as const,
    sample_rate: 16000 as const,
    channels: 1 as const,
    max_chunk_bytes: config.TRANSCRIPTION_CHUNK_MAX_BYTES,
    chunk_count: s.chunkCount,
    received_ms: msOf(s.bytes),
    next_expected_seq: s.contiguous,
    missing_seqs: gaps ?? s.missing,
    artifact_id: s.status === 'ready' ? s.artifactId : null,
    started_at: s.startedAt.toISOString(),
    stopped_at: s.stoppedAt?.toISOString() ?? null,
    finalized_at: s.finalizedAt?.toISOString() ?? null,
    error: s.error,
  });

  return {
    presentSession,
    session,

    /** GET /v1/transcription/runtime: which provider is active and whether it can run. */
    async runtime() {
      const check = await stt.check();
      return {
        available: check.available,
        gladia_configured: !!config.GLADIA_API_KEY,
        ...(check.reason ? { reason: check.reason } : {}),
        provider: stt.name,
        hints: stt.hints,
        live: check.available,
        batch: check.available,
      };
    },

    // ---------------- live ----------------
    async liveStart(scope: Scope, meetingId: string, b: { locale: string; diarize: boolean }) {
      const m = await d.meetings.get(scope, meetingId);
      const open = await repo.sessions.findOne({
        workspaceId: scope.workspaceId,
        meetingId,
        status: { $in: ['live', 'finalizing'] },
      });
      if (open)
        throw conflict(
          `the meeting already has a ${open.status} session ${open._id} (job ${open.jobId}); stop it first`,
        );
      const now = new Date();
      const s: SessionDoc = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId: m.brainId,
        meetingId,
        jobId: randomUUID(),
        locale: b.locale,
        diarize: b.diarize,
        status: 'live',
        contiguous: 0,
        maxSeq: -1,
        chunkCount: 0,
        bytes: 0,
        captionSeq: 0,
        captionMs: 0,
        artifactId: randomUUID(),
        missing: [],
        error: null,
        createdBy: by(scope),
        startedAt: now,
        stoppedAt: null,
        finalizedAt: null,
      };
      await repo.sessions.insertOne(s);
      const { job } = await d.jobs.create(scope, { id: s.jobId, kind: 'transcription', brainId: m.brainId });
      await d.meetings.patchBody(scope.workspaceId, meetingId, {
        transcription: { status: 'live', finalized_at: null, session_id: s._id, job_id: s.jobId },
      });
      const input: LiveTranscriptionInput = {
        jobId: s.jobId,
        workspaceId: s.workspaceId,
        brainId: s.brainId,
        meetingId,
        sessionId: s._id,
        idleTimeoutMs: LIVE_IDLE_TIMEOUT_MS,
      };
      await d.jobs.startWorkflow(job, 'liveTranscription', [input], `live transcription of meeting ${m.title}`);
      return s;
    },

    /** POST .../transcription/chunk: stores the chunk (first of a seq wins), then tells the session. */
    async chunk(scope: Scope, meetingId: string, b: { job_id: string; seq: number; chunk_base64: string }) {
      await d.meetings.get(scope, meetingId);
      const s = await repo.sessions.findOne({ workspaceId: scope.workspaceId, meetingId, jobId: b.job_id });
      if (!s) throw notFound('Transcription session');
      if (b.chunk_base64.length % 4 !== 0)
        throw validationError('chunk_base64: not valid base64 (its length is not a multiple of 4)');
      if ((b.chunk_base64.length / 4) * 3 > config.TRANSCRIPTION_CHUNK_MAX_BYTES + 2)
        throw validationError(
          `chunk_base64: a chunk is at most ${config.TRANSCRIPTION_CHUNK_MAX_BYTES} bytes of audio`,
        );
      const pcm = Buffer.from(b.chunk_base64, 'base64');
      if (pcm.length === 0) throw validationError('chunk_base64: empty chunk');
      if (pcm.length % 2 !== 0)
        throw validationError('chunk_base64: linear16 audio has an even number of bytes (2 per sample)');
      if (pcm.length > config.TRANSCRIPTION_CHUNK_MAX_BYTES)
        throw validationError(
          `chunk_base64: a chunk is at most ${config.TRANSCRIPTION_CHUNK_MAX_BYTES} bytes of audio`,
        );
      const existing = await repo.chunks.findOne({ _id: `${s._id}:${b.seq}` }, { projection: { _id: 1 } });
      let duplicate = !!existing;
      if (!duplicate) {
        if (s.status !== 'live') throw conflict(`the session is ${s.status}: chunks are accepted while it is live`);
        const blob = await d.blobs.put(chunkKey(s, b.seq), fromBuffer(pcm), {
          maxBytes: config.TRANSCRIPTION_CHUNK_MAX_BYTES,
          contentType: 'audio/L16',
        });
        try {
          await repo.chunks.insertOne({
            _id: `${s._id}:${b.seq}`,
            sessionId: s._id,
            workspaceId: s.workspaceId,
            seq: b.seq,
            bytes: pcm.length,
            blobKey: blob.key,
            createdAt: new Date(),
          });
          await repo.sessions.updateOne(
            { _id: s._id },
            { $inc: { chunkCount: 1, bytes: pcm.length }, $max: { maxSeq: b.seq } },
          );
        } catch (e) {
          await bestEffort(d.log, "deleting an unrecorded chunk's blob", d.blobs.delete(blob.key));
          if (!isDuplicateKey(e)) throw e;
          duplicate = true;
        }
      }
      const fresh = (await repo.sessions.findOne({ _id: s._id }))!;
      const { contiguous, missing } = await advance(fresh);
      if (!duplicate) {
        // A lost signal loses nothing: the audio is stored, and the next signal or the final pass reads it.
        await d.temporal.workflow
          .getHandle(s.jobId)
          .signal(chunkSignal, { seq: b.seq })
          .catch((e: unknown) => d.log.warn({ err: e, session: s._id }, 'signalling a chunk failed'));
        if (missing.length)
          await d.streams.append(captionKey(s), { type: 'gap', missing_seqs: missing, next_expected_seq: contiguous });
      }
      return {
        accepted: !duplicate,
        duplicate,
        seq: b.seq,
        next_expected_seq: contiguous,
        missing_seqs: missing,
        gap: missing.length > 0,
        chunk_count: fresh.chunkCount,
      };
    },

    /** POST .../live/stop: the session stops taking chunks and finalizes (202; the job ends when the transcript is saved). */
    async liveStop(scope: Scope, meetingId: string, b: { session_id?: string }) {
      await d.meetings.get(scope, meetingId);
      const s = b.session_id
        ? await findById(repo.sessions, b.session_id, { workspaceId: scope.workspaceId, meetingId })
        : await repo.sessions
            .find({ workspaceId: scope.workspaceId, meetingId })
            .sort({ startedAt: -1 })
            .limit(1)
            .next();
      if (!s) throw notFound('Transcription session');
      if (s.status !== 'live') return s;
      const res = await repo.sessions.updateOne(
        { _id: s._id, status: 'live' },
        { $set: { status: 'finalizing', stoppedAt: new Date() } },
      );
      if (res.modifiedCount) {
        await d.meetings.patchBody(scope.workspaceId, meetingId, {
          transcription: { status: 'finalizing', finalized_at: null, session_id: s._id, job_id: s.jobId },
        });
        await d.temporal.workflow.getHandle(s.jobId).signal(stopSignal, {});
      }
      return (await repo.sessions.findOne({ _id: s._id }))!;
    },

    async history(scope: Scope, meetingId: string, q: { session_id?: string; limit: number }) {
      await d.meetings.get(scope, meetingId);
      const sessions = await repo.sessions
        .find({ workspaceId: scope.workspaceId, meetingId })
        .sort({ startedAt: -1 })
        .limit(q.limit)
        .toArray();
      const named = q.session_id ? await session(scope, meetingId, q.session_id) : sessions[0];
      const entries = named ? await d.streams.range(captionKey(named), undefined, 10_000) : [];
      const captions = entries
        .filter((e) => e.data.type === 'final')
        .map((e) => ({
          cursor: e.id,
          ...(e.data as {
            type: 'final';
            text: string;
            seq_from: number;
            seq_to: number;
            start_ms: number;
            end_ms: number;
          }),
        }));
      return { sessions: sessions.map((s) => presentSession(s)), captions };
    },

    captionStreamKey: (s: SessionDoc) => captionKey(s),

    /** The meeting's transcript artifact (it must be one of this meeting's sessions). */
    async artifact(scope: Scope, meetingId: string, artifactId: string) {
      await d.meetings.get(scope, meetingId);
      const s = await repo.sessions.findOne({ workspaceId: scope.workspaceId, meetingId, artifactId, status: 'ready' });
      if (!s) throw notFound('Transcript artifact');
      return d.documents.get(systemScope(scope.workspaceId), artifactId, 'artifact');
    },

    // ---- the liveTranscription workflow's activities ----
    async liveBegin(i: LiveTranscriptionInput) {
      await d.jobs.transition(i.workspaceId, i.jobId, { status: 'running', currentStep: 'live' });
    },

    /** One caption pass: final captions for every complete window of contiguous audio, then a partial for the rest. */
    async liveCaption(i: LiveTranscriptionInput, partialSeq: number, attempt = 1): Promise<CaptionOutcome> {
      const bill = (key: string) => ({
        key: `${key}:${attempt}`,
        workspaceId: i.workspaceId,
        brainId: i.brainId,
        jobId: i.jobId,
      });
      let s = await load(i);
      const windowBytes = config.LIVE_CAPTION_WINDOW_MS * BYTES_PER_MS;
      const hints = await d.vocabulary.hintsFor(i.workspaceId, i.brainId);
      const rows = await repo.chunks
        .find(
          { sessionId: s._id, seq: { $gte: s.captionSeq, $lt: s.contiguous } },
          { projection: { seq: 1, bytes: 1 } },
        )
        .sort({ seq: 1 })
        .toArray();
      let k = 0;
      let windows = 0;
      for (; windows < WINDOWS_PER_PASS; windows++) {
        let bytes = 0;
        let end = -1;
        for (let j = k; j < rows.length; j++) {
          bytes += rows[j].bytes;
          if (bytes >= windowBytes) {
            end = j;
            break;
          }
        }
        if (end < 0) break;
        const from = rows[k].seq;
        const to = rows[end].seq;
        const { pcm } = await audioOf(s._id, from, to);
        const t = await transcribe(
          pcm,
          { locale: s.locale, diarize: false, hints, live: true },
          bill(`window:${from}`),
        );
        // The window is claimed before its caption is written: a retried pass never captions it twice.
        const claimed = await repo.sessions.updateOne(
          { _id: s._id, captionSeq: from },
          { $set: { captionSeq: to + 1, captionMs: s.captionMs + msOf(pcm.length) } },
        );
        if (claimed.modifiedCount) {
          await d.streams.append(captionKey(s), {
            type: 'final',
            text: t.text,
            seq_from: from,
            seq_to: to,
            start_ms: ms(s.captionMs),
            end_ms: ms(s.captionMs + msOf(pcm.length)),
          });
        }
        s = await load(i);
        k = end + 1;
      }
      const tail = rows.slice(k);
      const tailBytes = tail.reduce((n, r) => n + r.bytes, 0);
      const lastSeq = tail.at(-1)?.seq ?? -1;
      if (tail.length && lastSeq > partialSeq && tailBytes >= PARTIAL_EVERY_MS * BYTES_PER_MS && s.status === 'live') {
        const { pcm } = await audioOf(s._id, tail[0].seq, lastSeq);
        const t = await transcribe(
          pcm,
          { locale: s.locale, diarize: false, hints, live: true },
          bill(`partial:${lastSeq}`),
        );
        await d.streams.append(captionKey(s), {
          type: 'partial',
          text: t.text,
          seq_from: tail[0].seq,
          seq_to: lastSeq,
          start_ms: ms(s.captionMs),
          end_ms: ms(s.captionMs + msOf(pcm.length)),
        });
        partialSeq = lastSeq;
      }
      // A full pass may have left complete windows behind: the workflow calls again at once.
      return { captionSeq: (await load(i)).captionSeq, partialSeq, more: windows === WINDOWS_PER_PASS };
    },

    /**
     * The final pass: all stored audio in seq order (gaps reported, never waited for), one
     * transcription, the transcript saved as an artifact (id fixed at start: written once),
     * segments and `transcription { status: ready }` patched onto the meeting, then the job.
     */
    async liveFinalize(i: LiveTranscriptionInput, attempt = 1) {
      const s = await load(i);
      if (s.status === 'live') {
        await repo.sessions.updateOne(
          { _id: s._id, status: 'live' },
          { $set: { status: 'finalizing', stoppedAt: new Date() } },
        );
        await d.meetings.patchBody(i.workspaceId, i.meetingId, {
          transcription: { status: 'finalizing', finalized_at: null, session_id: s._id, job_id: s.jobId },
        });
      }
      await d.jobs.transition(i.workspaceId, i.jobId, { status: 'running', currentStep: 'finalizing', progress: 50 });
      const { pcm, seqs } = await audioOf(s._id, 0, Number.MAX_SAFE_INTEGER);
      const missing = seqs.length ? missingBelow(seqs, seqs[seqs.length - 1]) : [];
      const hints = await d.vocabulary.hintsFor(i.workspaceId, i.brainId);
      const t = await transcribe(
        pcm,
        { locale: s.locale, diarize: s.diarize, hints },
        { key: `final:${attempt}`, workspaceId: i.workspaceId, brainId: i.brainId, jobId: i.jobId },
      );
      const meeting = await d.meetings.findUnscoped(i.workspaceId, i.meetingId);
      const title = meeting?.title ?? 'meeting';
      const finalizedAt = new Date();
      await d.documents.createArtifact(
        systemScope(i.workspaceId, i.brainId),
        {
          title: `Transcript: ${title} (${finalizedAt.toISOString().slice(0, 16).replace('T', ' ')})`,
          content: transcriptMarkdown(title, t.segments, missing),
          content_type: 'text/markdown',
          path: 'meetings/transcripts',
          brain_id: i.brainId,
          metadata: {
            kind: 'meeting_transcript',
            meeting_id: i.meetingId,
            session_id: s._id,
            job_id: s.jobId,
            provider: stt.name,
            duration_ms: msOf(pcm.length),
            missing_seqs: missing,
          },
        },
        s.artifactId,
      );
      if (meeting) {
        await d.meetings.patchBody(i.workspaceId, i.meetingId, {
          transcript_segments: t.segments,
          transcription: {
            status: 'ready',
            finalized_at: finalizedAt.toISOString(),
            session_id: s._id,
            job_id: s.jobId,
            artifact_id: s.artifactId,
            missing_seqs: missing,
          },
        });
      }
      await repo.sessions.updateOne({ _id: s._id }, { $set: { status: 'ready', finalizedAt, missing } });
      const hook = d.onFinalized?.();
      if (meeting && hook) {
        // A failed hook never fails the transcript: the extraction can be started again through its own route.
        const text = t.segments.map((x) => `${x.speaker ? `${x.speaker}: ` : ''}${x.text}`).join('\n');
        await hook(i.workspaceId, { id: i.meetingId, brainId: i.brainId, text, finalizedAt }).catch((e: unknown) =>
          d.log.warn(
            { err: (e as Error).message, meetingId: i.meetingId },
            'stakeholder extraction after finalize failed to start',
          ),
        );
      }
      await d.streams.append(
        captionKey(s),
        {
          type: 'complete',
          artifact_id: s.artifactId,
          text_chars: t.text.length,
          segment_count: t.segments.length,
          missing_seqs: missing,
        },
        { kind: 'terminal' },
      );
      await d.jobs.finalize(i.workspaceId, i.jobId, {
        status: 'completed',
        progress: 100,
        currentStep: 'completed',
        result: {
          text: t.text,
          segments: t.segments,
          meeting_id: i.meetingId,
          session_id: s._id,
          artifact_id: s.artifactId,
          duration_ms: msOf(pcm.length),
          missing_seqs: missing,
          provider: stt.name,
        },
      });
      return { artifactId: s.artifactId, chars: t.text.length };
    },

    async liveFail(i: LiveTranscriptionInput, reason: string) {
      await repo.sessions.updateOne(
        { _id: i.sessionId, workspaceId: i.workspaceId },
        { $set: { status: 'failed', error: reason.slice(0, 2000) } },
      );
      if (await d.meetings.findUnscoped(i.workspaceId, i.meetingId)) {
        await d.meetings.patchBody(i.workspaceId, i.meetingId, {
          transcription: {
            status: 'failed',
            finalized_at: null,
            session_id: i.sessionId,
            job_id: i.jobId,
            error: reason.slice(0, 2000),
          },
        });
      }
      await d.streams.append(
        d.streams.keys.captions(i.workspaceId, i.sessionId),
        { type: 'error', message: reason.slice(0, 2000) },
        { kind: 'terminal' },
      );
      await d.jobs.finalize(i.workspaceId, i.jobId, { status: 'failed', failedReason: reason, currentStep: 'failed' });
    },

    // ---------------- batch ----------------
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
      if (!AUDIO_TYPES[type]) {
        await bestEffort(d.log, "deleting a refused attachment's blob", d.blobs.delete(key));
        throw unsupportedMediaType(
          `audio (${[...new Set(Object.values(AUDIO_TYPES))].join(', ')}); this file is ${type}`,
        );
      }
      const doc: AttachmentDoc = {
        _id: id,
        workspaceId: scope.workspaceId,
        brainId: scope.brainId ?? null,
        name: file.fileName.slice(0, 300),
        contentType: type,
        size: blob.size,
        sha256: blob.sha256,
        blobKey: key,
        createdBy: by(scope),
        createdAt: new Date(),
      };
      await repo.attachments.insertOne(doc);
      return doc;
    },

    /** POST /v1/transcribe: checks the source now (404, 400), then a `transcription` job does the work. */
    async transcribe(scope: Scope, b: { source: { type: string; id: string }; locale: string; diarize: boolean }) {
      const kind: 'attachment' | 'asset' = b.source.type.startsWith('attachment') ? 'attachment' : 'asset';
      let brainId: string | null = scope.brainId ?? null;
      if (kind === 'attachment') {
        const a = await findById(repo.attachments, b.source.id, { workspaceId: scope.workspaceId });
        if (!a) throw notFound('Attachment');
        brainId = a.brainId ?? brainId;
      } else {
        const a = await d.documents.get(scope, b.source.id, 'asset');
        if (!a.blobKey || !AUDIO_TYPES[a.contentType ?? ''])
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
      let blobKey: string;
      let type: string;
      if (i.source.kind === 'attachment') {
        const a = await findById(repo.attachments, i.source.id, { workspaceId: i.workspaceId });
        if (!a) throw notFound('Attachment');
        blobKey = a.blobKey;
        type = a.contentType;
      } else {
        const a = await d.documents.get(systemScope(i.workspaceId), i.source.id, 'asset');
        if (!a.blobKey) throw validationError('the asset has no body');
        blobKey = a.blobKey;
        type = a.contentType ?? '';
      }
      const body = await d.blobs.read(blobKey, Math.max(config.ATTACHMENT_MAX_BYTES, config.ASSET_MAX_BYTES));
      const pcm = await toLinear16(body, type, config.SOX_BIN);
      if (pcm.length > MAX_PASS_BYTES) throw validationError('the recording is longer than two hours');
      await d.jobs.transition(i.workspaceId, i.jobId, { status: 'running', currentStep: 'transcribing', progress: 30 });
      const hints = await d.vocabulary.hintsFor(i.workspaceId, i.brainId);
      const t = await transcribe(
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
export type TranscriptionService = ReturnType<typeof createTranscriptionService>;
