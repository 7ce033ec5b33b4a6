import type { Config } from '../kernel/config.js';
import { createGladia } from './gladia.js';
import { createOpenAICompatibleStt } from './openai.js';
import { createPocketsphinx } from './pocketsphinx.js';
import type { SpeechToText, SttName } from './speech.js';

// The interface's types for the rest of the code (the providers import them from speech.ts).
export type { Segment, SpeechToText, TranscribeOptions, Transcript } from './speech.js';

/** The provider STT_PROVIDER names (auto: Gladia with a key, else an OpenAI-compatible endpoint when configured, else pocketsphinx). */
function activeSttName(c: Config): SttName {
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
