import type { Config } from '../config.js';
import { createGladia } from './gladia.js';
import { createOpenAICompatibleStt } from './openai.js';
import { createPocketsphinx } from './pocketsphinx.js';

/** One stretch of speech (a meeting's `transcript_segments`). Times are milliseconds from the start of the audio. */
export interface Segment {
  speaker: string;
  text: string;
  start_ms?: number;
  end_ms?: number;
}
export interface Transcript {
  text: string;
  segments: Segment[];
}
export interface TranscribeOptions {
  /** BCP 47 (en-US) or ISO 639-1 (en). */
  locale: string;
  diarize: boolean;
  /** Vocabulary hints (docs/meetings.md, Vocabulary); each provider uses them its own way, or not at all (`hints`). */
  hints: string[];
  /** A short stretch of live audio (captions) rather than a whole recording: providers with a live protocol use it. */
  live?: boolean;
}
export type SttName = 'pocketsphinx' | 'gladia' | 'openai';

/**
 * The one interface over speech-to-text providers. Audio is always 16 kHz mono linear16 PCM
 * (src/stt/audio.ts converts anything else first); a provider wraps it as its API wants.
 */
export interface SpeechToText {
  readonly name: SttName;
  /** How the provider uses vocabulary hints, as GET /v1/transcription/runtime reports it. */
  readonly hints: 'custom_vocabulary' | 'prompt' | 'none';
  /** Whether it can run here; `reason` says why not. */
  check(): Promise<{ available: boolean; reason?: string }>;
  transcribe(pcm: Buffer, opts: TranscribeOptions): Promise<Transcript>;
}

/** The provider STT_PROVIDER names (auto: Gladia with a key, else an OpenAI-compatible endpoint when configured, else pocketsphinx). */
export function activeSttName(c: Config): SttName {
  if (c.STT_PROVIDER !== 'auto') return c.STT_PROVIDER;
  if (c.GLADIA_API_KEY) return 'gladia';
  if (c.STT_BASE_URL) return 'openai';
  return 'pocketsphinx';
}

export function createStt(c: Config, name: SttName = activeSttName(c)): SpeechToText {
  if (name === 'gladia') return createGladia({ apiKey: c.GLADIA_API_KEY, baseUrl: c.GLADIA_BASE_URL });
  if (name === 'openai')
    return createOpenAICompatibleStt({
      baseURL: c.STT_BASE_URL ?? c.OPENAI_BASE_URL,
      apiKey: c.STT_API_KEY ?? c.OPENAI_API_KEY,
      model: c.STT_MODEL,
    });
  return createPocketsphinx({ bin: c.POCKETSPHINX_BIN, modelDir: c.POCKETSPHINX_MODEL_DIR });
}

/** 'en-US' → 'en' (the ISO 639-1 code Gladia and OpenAI-compatible servers take). */
export const languageOf = (locale: string): string => locale.split(/[-_]/)[0].toLowerCase();

/** Joins segment texts into the transcript text. */
export const textOf = (segments: Segment[]): string =>
  segments
    .map((s) => s.text)
    .filter(Boolean)
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
