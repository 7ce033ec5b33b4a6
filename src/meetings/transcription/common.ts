import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { BlobStore } from '../../blobs/store.js';
import type { Config } from '../../kernel/config.js';
import type { TranscriptionSession } from '../model.js';
import type { MeetingStore } from '../store.js';
import type { WorkspaceRepo } from '../../platform/index.js';
import { notFound, validationError } from '../../kernel/errors.js';
import type { Logger } from '../../kernel/logger.js';
import type { Scope } from '../../kernel/scope.js';
import { BYTES_PER_MS, msOf } from '../../stt/audio.js';
import {
  createStt,
  type Segment,
  type SpeechToText,
  type TranscribeOptions,
  type Transcript,
} from '../../stt/index.js';
import type { Streams } from '../../kernel/streams.js';
import type { LiveTranscriptionInput } from '../../temporal/definitions.js';
import type { DocumentService } from '../../knowledge/index.js';
import type { JobService } from '../../jobs/index.js';
import type { Bus } from '../../kernel/events.js';
import type { MeetingService } from '../service.js';
import type { UsageService } from '../../usage/index.js';
import type { VocabularyService } from '../vocabulary.js';

/** What the transcription service is built from. */
export interface TranscriptionDeps {
  repo: MeetingStore;
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
  /** `transcript.finalized` is published on it (stakeholder extraction subscribes). */
  bus: Bus;
}

/** Who a provider call is billed to: `key` names the call within its job (with the activity attempt). */
export interface Billing {
  key: string;
  workspaceId: string;
  brainId: string | null;
  jobId: string;
}

/** Longest recording a finalize or batch pass reads into memory (2 h of linear16 ≈ 230 MB). */
export const MAX_PASS_BYTES = 2 * 3600 * 1000 * BYTES_PER_MS;

export const ms = (n: number) => Math.round(n);

/** The seqs in [0, upTo] not in `have` (at most `cap` of them). */
export const missingBelow = (have: number[], upTo: number, cap = 1000): number[] => {
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

/** The pieces every part of the service shares: the provider and its billing, sessions, stored audio, the wire shape. */
export function createTranscriptionCore(d: TranscriptionDeps) {
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
  async function transcribe(pcm: Buffer, opts: TranscribeOptions, bill: Billing): Promise<Transcript> {
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

  /** The session a workflow activity works on. */
  const load = async (i: LiveTranscriptionInput) => {
    const s = await repo.session(i.workspaceId, i.sessionId);
    if (!s) throw notFound('Transcription session');
    return s;
  };

  /** The PCM of chunks [from, to] in seq order (stored rows only). */
  async function audioOf(
    s: Pick<TranscriptionSession, '_id' | 'workspaceId'>,
    from: number,
    to: number,
  ): Promise<{ pcm: Buffer; seqs: number[] }> {
    const rows = await repo.chunksBetween(s, from, to);
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

  const presentSession = (s: TranscriptionSession, gaps?: number[]) => ({
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
    stt,
    transcribe,
    load,
    audioOf,
    presentSession,
    by: (scope: Scope) => scope.userId ?? scope.apiKeyId,
    captionKey: (s: Pick<TranscriptionSession, 'workspaceId' | '_id'>) => d.streams.keys.captions(s.workspaceId, s._id),
    chunkKey: (s: TranscriptionSession, seq: number) =>
      `audio/${s.workspaceId}/${s._id}/${String(seq).padStart(8, '0')}-${randomUUID().slice(0, 8)}.pcm`,
  };
}
export type TranscriptionCore = ReturnType<typeof createTranscriptionCore>;
