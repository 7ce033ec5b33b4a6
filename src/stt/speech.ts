/** The speech-to-text interface and the helpers its providers share (a leaf: `index.ts` imports the providers, the providers import this). */
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
