import type { TokenUsage } from './types.js';

/**
 * Model prices for usage rollups (`usageByModel`, `totalCost`). The numbers are the providers'
 * public list prices in USD per one million tokens at the time of writing; they change, and
 * negotiated prices differ, so every lookup takes the table as a parameter and deployments can
 * pass their own (`{ ...DEFAULT_PRICES, 'openai/my-model': { input: 1, output: 2 } }`).
 */

/** USD per 1M input and output tokens of one model. */
export interface ModelPrice {
  input: number;
  output: number;
}

/** Prices keyed by full model id `provider/model`. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * List prices (USD / 1M tokens) when this file was written. Dated snapshots
 * (`gpt-4o-2024-08-06`, `claude-sonnet-4-20250514`, `…-latest`) are priced as their base name.
 */
export const DEFAULT_PRICES: PriceTable = {
  'openai/gpt-4o': { input: 2.5, output: 10 },
  'openai/gpt-4o-mini': { input: 0.15, output: 0.6 },
  'openai/gpt-4.1': { input: 2, output: 8 },
  'openai/gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'openai/gpt-4.1-nano': { input: 0.1, output: 0.4 },
  'openai/o3': { input: 2, output: 8 },
  'openai/o3-mini': { input: 1.1, output: 4.4 },
  'openai/o4-mini': { input: 1.1, output: 4.4 },
  'anthropic/claude-opus-4': { input: 15, output: 75 },
  'anthropic/claude-sonnet-4': { input: 3, output: 15 },
  'anthropic/claude-sonnet-4-5': { input: 3, output: 15 },
  'anthropic/claude-3-7-sonnet': { input: 3, output: 15 },
  'anthropic/claude-3-5-haiku': { input: 0.8, output: 4 },
  'anthropic/claude-haiku-4-5': { input: 1, output: 5 },
};

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
export function costOf(modelId: string, usage: Pick<TokenUsage, 'inputTokens' | 'outputTokens'>, prices: PriceTable = DEFAULT_PRICES): Cost {
  const price = priceOf(modelId, prices);
  if (!price) return { costUsd: 0, priced: false };
  const costUsd = (usage.inputTokens * price.input + usage.outputTokens * price.output) / 1_000_000;
  return { costUsd, priced: true };
}

/** Model names of one provider in the table, for the model list when no live listing is used. */
export function pricedModels(provider: string, prices: PriceTable = DEFAULT_PRICES): string[] {
  const prefix = `${provider}/`;
  return Object.keys(prices).filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
}
