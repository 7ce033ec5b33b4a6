import { wavOf } from './audio.js';
import {
  languageOf,
  textOf,
  type Segment,
  type SpeechToText,
  type TranscribeOptions,
  type Transcript,
} from './speech.js';

interface Utterance {
  text?: string;
  start?: number;
  end?: number;
  speaker?: number | string;
  channel?: number;
}
const toSegment = (u: Utterance, diarize: boolean): Segment => ({
  speaker: diarize && u.speaker !== undefined ? `speaker_${u.speaker}` : `speaker_${u.channel ?? 0}`,
  text: (u.text ?? '').trim(),
  ...(typeof u.start === 'number' ? { start_ms: Math.round(u.start * 1000) } : {}),
  ...(typeof u.end === 'number' ? { end_ms: Math.round(u.end * 1000) } : {}),
});

/** Bytes of audio per WebSocket frame (100 ms of linear16), as Gladia's live examples stream it. */
const FRAME_BYTES = 3200;
const POLL_MS = 1000;
const JOB_TIMEOUT_MS = 15 * 60_000;

/**
 * Gladia (GLADIA_API_KEY), following its documented v2 protocols:
 * - batch: `POST /v2/upload` (multipart, field `audio`) → `audio_url`; `POST /v2/pre-recorded`
 *   → `id`; `GET /v2/pre-recorded/:id` until `status` is `done` (utterances) or `error`;
 * - live (caption windows): `POST /v2/live` (encoding wav/pcm, 16 bit, 16 kHz, mono) → `url`;
 *   binary audio frames on that WebSocket, then `{ type: "stop_recording" }`; `transcript`
 *   messages with `data.is_final` carry the utterances; the session ends when Gladia closes it.
 * Vocabulary hints are its custom vocabulary. Every request carries `x-gladia-key`.
 */
export function createGladia(o: { apiKey?: string; baseUrl: string }): SpeechToText {
  const base = o.baseUrl.replace(/\/+$/, '');
  const headers = () => ({ 'x-gladia-key': o.apiKey ?? '' });
  async function call<T>(path: string, init: RequestInit): Promise<T> {
    const res = await fetch(`${base}${path}`, {
      ...init,
      headers: { ...headers(), ...(init.headers ?? {}) },
      signal: AbortSignal.timeout(120_000),
    });
    const text = await res.text();
    if (!res.ok)
      throw new Error(`Gladia ${init.method ?? 'GET'} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  }
  const vocabulary = (hints: string[]) =>
    hints.length ? { custom_vocabulary: true, custom_vocabulary_config: { vocabulary: hints.slice(0, 1000) } } : {};

  async function batch(pcm: Buffer, opts: TranscribeOptions): Promise<Transcript> {
    const form = new FormData();
    form.append('audio', new Blob([new Uint8Array(wavOf(pcm))], { type: 'audio/wav' }), 'audio.wav');
    const up = await call<{ audio_url: string }>('/v2/upload', { method: 'POST', body: form });
    const job = await call<{ id: string }>('/v2/pre-recorded', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        audio_url: up.audio_url,
        language_config: { languages: [languageOf(opts.locale)], code_switching: false },
        diarization: opts.diarize,
        ...vocabulary(opts.hints),
      }),
    });
    const until = Date.now() + JOB_TIMEOUT_MS;
    for (;;) {
      const r = await call<{
        status: string;
        error_code?: number;
        result?: { transcription?: { full_transcript?: string; utterances?: Utterance[] } };
      }>(`/v2/pre-recorded/${encodeURIComponent(job.id)}`, { method: 'GET' });
      if (r.status === 'done') {
        const segments = (r.result?.transcription?.utterances ?? [])
          .map((u) => toSegment(u, opts.diarize))
          .filter((s) => s.text);
        return { text: r.result?.transcription?.full_transcript?.trim() || textOf(segments), segments };
      }
      if (r.status === 'error') throw new Error(`Gladia transcription ${job.id} failed (${r.error_code ?? 'no code'})`);
      if (Date.now() > until) throw new Error(`Gladia transcription ${job.id} did not finish in time`);
      await new Promise((res) => setTimeout(res, POLL_MS));
    }
  }

  async function live(pcm: Buffer, opts: TranscribeOptions): Promise<Transcript> {
    const session = await call<{ id: string; url: string }>('/v2/live', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        encoding: 'wav/pcm',
        bit_depth: 16,
        sample_rate: 16000,
        channels: 1,
        language_config: { languages: [languageOf(opts.locale)], code_switching: false },
        realtime_processing: vocabulary(opts.hints),
        messages_config: { receive_partial_transcripts: false, receive_final_transcripts: true },
      }),
    });
    const segments: Segment[] = [];
    const { default: WebSocket } = await import('ws'); // loaded only when a live session uses Gladia
    await new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(session.url);
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error(`Gladia live session ${session.id} did not end in time`));
      }, 120_000);
      ws.on('open', () => {
        for (let k = 0; k < pcm.length; k += FRAME_BYTES) ws.send(pcm.subarray(k, k + FRAME_BYTES));
        ws.send(JSON.stringify({ type: 'stop_recording' }));
      });
      ws.on('message', (raw, isBinary) => {
        if (isBinary) return;
        let m: { type?: string; data?: { is_final?: boolean; utterance?: Utterance } };
        try {
          m = JSON.parse(String(raw)) as typeof m;
        } catch {
          return;
        }
        if (m.type === 'transcript' && m.data?.is_final && m.data.utterance)
          segments.push(toSegment(m.data.utterance, opts.diarize));
        if (m.type === 'end_session') ws.close(1000);
      });
      ws.on('error', (e) => {
        clearTimeout(timer);
        reject(new Error(`Gladia live WebSocket: ${e.message}`));
      });
      ws.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const kept = segments.filter((s) => s.text);
    return { text: textOf(kept), segments: kept };
  }

  return {
    name: 'gladia',
    hints: 'custom_vocabulary',
    async check() {
      return o.apiKey ? { available: true } : { available: false, reason: 'GLADIA_API_KEY is not set' };
    },
    transcribe: (pcm, opts) => (opts.live ? live(pcm, opts) : batch(pcm, opts)),
  };
}
