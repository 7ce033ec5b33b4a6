import type { TokenUsage } from './types.js';
import { own } from '../kernel/own.js';

/**
 * Model prices for usage rollups (`usageByModel`, `totalCost`). The numbers are the providers'
 * public list prices in USD per one million tokens at the time of writing; they change, and
 * negotiated prices differ, so every lookup takes the table as a parameter and deployments can
 * pass their own (`{ ...DEFAULT_PRICES, 'openai/my-model': { input: 1, output: 2 } }`).
 */

/** USD per 1M input and output tokens of one model; cachedInput for prompt-cache reads (default: input). */
export interface ModelPrice {
  input: number;
  output: number;
  cachedInput?: number;
}

/** Prices keyed by full model id `provider/model`. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * List prices (USD / 1M tokens) when this file was written. Dated snapshots
 * (`gpt-4o-2024-08-06`, `claude-sonnet-4-20250514`, `…-latest`) are priced as their base name.
 */
export const DEFAULT_PRICES: PriceTable = {
  'openai/gpt-4o': { input: 2.5, output: 10, cachedInput: 1.25 },
  'openai/gpt-4o-mini': { input: 0.15, output: 0.6, cachedInput: 0.075 },
  'openai/gpt-4.1': { input: 2, output: 8, cachedInput: 0.5 },
  'openai/gpt-4.1-mini': { input: 0.4, output: 1.6, cachedInput: 0.1 },
  'openai/gpt-4.1-nano': { input: 0.1, output: 0.4, cachedInput: 0.025 },
  'openai/o3': { input: 2, output: 8, cachedInput: 0.5 },
  'openai/o3-mini': { input: 1.1, output: 4.4, cachedInput: 0.55 },
  'openai/o4-mini': { input: 1.1, output: 4.4, cachedInput: 0.275 },
  'openai/text-embedding-3-small': { input: 0.02, output: 0 },
  'openai/text-embedding-3-large': { input: 0.13, output: 0 },
  'anthropic/claude-opus-4': { input: 15, output: 75, cachedInput: 1.5 },
  'anthropic/claude-sonnet-4': { input: 3, output: 15, cachedInput: 0.3 },
  'anthropic/claude-sonnet-4-5': { input: 3, output: 15, cachedInput: 0.3 },
  'anthropic/claude-3-7-sonnet': { input: 3, output: 15, cachedInput: 0.3 },
  'anthropic/claude-3-5-haiku': { input: 0.8, output: 4, cachedInput: 0.08 },
  'anthropic/claude-haiku-4-5': { input: 1, output: 5, cachedInput: 0.1 },
};

/** USD per minute of audio of a speech-to-text model, keyed `provider/model`. */
export type AudioPriceTable = Readonly<Record<string, number>>;

/**
 * Speech-to-text list prices (USD per minute of audio) when this was written. Gladia is billed per
 * plan, not per model: its calls are recorded unpriced (cost 0, `priced: false`) until a
 * deployment adds its own price.
 */
const DEFAULT_AUDIO_PRICES: AudioPriceTable = {
  'openai/whisper-1': 0.006,
  'openai/gpt-4o-transcribe': 0.006,
  'openai/gpt-4o-mini-transcribe': 0.003,
};

/**
 * Price tables in force from a date on, oldest first. A usage row is priced with the table in
 * force when the call was made and records that table's version, so a later price change never
 * rewrites what past calls cost. Add a new entry (never edit an old one) when prices change.
 */
const PRICE_VERSIONS: readonly { version: string; since: string; prices: PriceTable; audio: AudioPriceTable }[] = [
  { version: '2025-06-01', since: '2025-06-01T00:00:00Z', prices: DEFAULT_PRICES, audio: DEFAULT_AUDIO_PRICES },
];

/** The price table in force at `at`, with its version. */
export function pricesAt(at: Date = new Date()): { version: string; prices: PriceTable; audio: AudioPriceTable } {
  let current = PRICE_VERSIONS[0];
  for (const v of PRICE_VERSIONS) if (Date.parse(v.since) <= at.getTime()) current = v;
  return current;
}

/** The offline provider costs nothing, and that is a real price, not a missing one. */
const FREE_PROVIDERS = new Set(['local']);

/** `-2024-08-06`, `-20250514` or `-latest` after a base model name. */
const SNAPSHOT_SUFFIX = /^-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$/;

/** Cost of one model turn; `priced: false` means the model is not in the table and 0 is a placeholder. */
export interface Cost {
  costUsd: number;
  priced: boolean;
}

/**
 * The price entry for a model id, or undefined. Accepts `provider/model` or a bare model name
 * (provider names never appear in model names of the table, so a bare name is unambiguous).
 */
export function priceOf(modelId: string, prices: PriceTable = DEFAULT_PRICES): ModelPrice | undefined {
  const slash = modelId.indexOf('/');
  const provider = slash >= 0 ? modelId.slice(0, slash) : undefined;
  const model = slash >= 0 ? modelId.slice(slash + 1) : modelId;
  if (provider !== undefined && FREE_PROVIDERS.has(provider)) return { input: 0, output: 0 };
  let best: { key: string; price: ModelPrice } | undefined;
  for (const [key, price] of Object.entries(prices)) {
    const keySlash = key.indexOf('/');
    if (provider !== undefined && key.slice(0, keySlash) !== provider) continue;
    const base = key.slice(keySlash + 1);
    if (model === base) return price;
    if (model.startsWith(base) && SNAPSHOT_SUFFIX.test(model.slice(base.length))) {
      if (!best || base.length > best.key.length) best = { key: base, price };
    }
  }
  return best?.price;
}

/**
 * USD cost of one call's usage. Unknown models cost 0 with `priced: false`, so rollups still add
 * up and the UI can say "unpriced" instead of pretending the call was free.
 */
export function costOf(
  modelId: string,
  usage: Pick<TokenUsage, 'inputTokens' | 'outputTokens' | 'cachedInputTokens'>,
  prices: PriceTable = DEFAULT_PRICES,
): Cost {
  const price = priceOf(modelId, prices);
  if (!price) return { costUsd: 0, priced: false };
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const costUsd =
    ((usage.inputTokens - cached) * price.input +
      cached * (price.cachedInput ?? price.input) +
      usage.outputTokens * price.output) /
    1_000_000;
  return { costUsd, priced: true };
}

/** Model names of one provider in the table, for the model list when no live listing is used. */
export function pricedModels(provider: string, prices: PriceTable = DEFAULT_PRICES): string[] {
  const prefix = `${provider}/`;
  return Object.keys(prices)
    .filter((k) => k.startsWith(prefix))
    .map((k) => k.slice(prefix.length));
}

/** USD cost of transcribing `audioMs` of audio; an unknown model costs 0 with `priced: false`. */
export function costOfAudio(modelId: string, audioMs: number, prices: AudioPriceTable = DEFAULT_AUDIO_PRICES): Cost {
  const perMinute = own(prices, modelId);
  if (perMinute === undefined) return { costUsd: 0, priced: false };
  return { costUsd: (audioMs / 60_000) * perMinute, priced: true };
}
