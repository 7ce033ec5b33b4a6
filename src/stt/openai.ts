import OpenAI, { toFile } from 'openai';
import { wavOf } from './audio.js';
import { languageOf, textOf, type Segment, type SpeechToText } from './speech.js';

/**
 * Any OpenAI-compatible `POST /v1/audio/transcriptions` endpoint (OpenAI, and the self-hosted
 * speech servers that copy its API), through the official SDK with `maxRetries: 0` (Temporal
 * retries the activity). Vocabulary hints become the `prompt`, the documented way to bias
 * spelling; `verbose_json` gives segments with times. There is no diarization: one speaker.
 */
export function createOpenAICompatibleStt(o: { baseURL?: string; apiKey?: string; model: string }): SpeechToText {
  const client =
    o.baseURL || o.apiKey
      ? new OpenAI({ baseURL: o.baseURL, apiKey: o.apiKey ?? 'none', maxRetries: 0, timeout: 300_000 })
      : null;
  return {
    name: 'openai',
    hints: 'prompt',
    async check() {
      return client
        ? { available: true }
        : { available: false, reason: 'STT_PROVIDER=openai needs STT_BASE_URL (or OPENAI_BASE_URL / OPENAI_API_KEY)' };
    },
    async transcribe(pcm, opts) {
      if (!client) throw new Error('no OpenAI-compatible speech endpoint is configured');
      const res = await client.audio.transcriptions.create({
        file: await toFile(wavOf(pcm), 'audio.wav', { type: 'audio/wav' }),
        model: o.model,
        language: languageOf(opts.locale),
        response_format: 'verbose_json',
        ...(opts.hints.length ? { prompt: opts.hints.join(', ').slice(0, 800) } : {}),
      });
      const raw = res as unknown as { text?: string; segments?: { start?: number; end?: number; text?: string }[] };
      const segments: Segment[] = (raw.segments ?? [])
        .map((s) => ({
          speaker: 'speaker_0',
          text: (s.text ?? '').trim(),
          ...(typeof s.start === 'number' ? { start_ms: Math.round(s.start * 1000) } : {}),
          ...(typeof s.end === 'number' ? { end_ms: Math.round(s.end * 1000) } : {}),
        }))
        .filter((s) => s.text);
      return { text: (raw.text ?? '').trim() || textOf(segments), segments };
    },
  };
}
