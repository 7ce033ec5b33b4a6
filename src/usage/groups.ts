import { createHash } from 'node:crypto';

/** The facets whose `invokeCount` counts runs (neuron: jobs; receptor and pathway: top runs). */
export type InvokeFacet = 'neuron' | 'receptor' | 'pathway';

/** What a billed provider call served (the facets usage is reported by). */
export interface UsageAttribution {
  brainId: string | null;
  userId: string | null;
  apiKeyId: string | null;
  jobId: string | null;
  traceId: string | null;
  receptorId: string | null;
  neuronId: string | null;
  pathwayId: string | null;
  /** The share link the call was made through (its token budget sums these rows). */
  shareTokenId?: string | null;
  /**
   * The run a caller started (the job it follows): the job itself, or for a pathway's neuron node
   * or a delegate, the top job. A receptor's or pathway's `invokeCount` counts these.
   */
  runId?: string | null;
}

/**
 * One immutable row per billed provider call (the usage ledger). `_id` is the call's idempotency
 * key (job, call kind, turn and attempt), so a retried write never adds a second row. Cost is an
 * integer in nano-USD so that every sum over rows is exact in any order; it is USD only at the API.
 */
export interface UsageRowDoc extends UsageAttribution {
  _id: string;
  workspaceId: string;
  kind: 'chat' | 'embedding' | 'transcription';
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  totalTokens: number;
  costNanos: number;
  priced: boolean;
  priceVersion: string;
  /** `failed`: the call broke after the provider had started to bill it (tokens streamed); `estimated`: counts estimated, not reported. */
  outcome: 'ok' | 'failed';
  estimated: boolean;
  at: Date;
  /** Transcription rows: the audio sent, which is what speech providers bill (their tokens are 0). */
  audioMs?: number;
  /**
   * The facets this row is the run's first row of (`neuron`: the first of its job for its neuron;
   * `receptor`, `pathway`: the first of its run for them): what `invokeCount` counts, decided once
   * when the row is written (src/usage/counters.ts), so an invocation counts once in any sum.
   */
  firstOf?: InvokeFacet[];
}

/**
 * What a rollup groups by: every facet the usage routes report by or filter on. A group is one
 * combination of them, so the caller's filters (user or API key, receptor) combine with every facet.
 */
export interface UsageGroupKey {
  provider: string;
  model: string;
  priced: boolean;
  receptorId: string | null;
  neuronId: string | null;
  pathwayId: string | null;
  shareTokenId: string | null;
  userId: string | null;
  apiKeyId: string | null;
}
/** A group of ledger rows: the sums every usage figure is made of. */
export interface UsageSums {
  tokens: number;
  costNanos: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  rows: number;
}
/** The sums of one group: tokens, cost, counts, and the invocations that started in it. */
export interface UsageGroupSums extends UsageSums {
  neuronInvokes: number;
  receptorInvokes: number;
  pathwayInvokes: number;
}
export type UsageGroup = UsageGroupKey & UsageGroupSums;
export const GROUP_SUMS: (keyof UsageGroupSums)[] = [
  'tokens',
  'costNanos',
  'inputTokens',
  'outputTokens',
  'cachedInputTokens',
  'rows',
  'neuronInvokes',
  'receptorInvokes',
  'pathwayInvokes',
];

export const groupKeyOf = (r: UsageRowDoc): UsageGroupKey => ({
  provider: r.provider,
  model: r.model,
  priced: r.priced,
  receptorId: r.receptorId ?? null,
  neuronId: r.neuronId ?? null,
  pathwayId: r.pathwayId ?? null,
  shareTokenId: r.shareTokenId ?? null,
  userId: r.userId ?? null,
  apiKeyId: r.apiKeyId ?? null,
});
/** A group's id: its key's facets in a fixed order (the same for a row, a Redis counter and a stored rollup). */
export const groupIdOf = (k: UsageGroupKey): string =>
  createHash('sha1')
    .update(
      JSON.stringify([
        k.provider,
        k.model,
        k.priced,
        k.receptorId,
        k.neuronId,
        k.pathwayId,
        k.shareTokenId,
        k.userId,
        k.apiKeyId,
      ]),
    )
    .digest('hex')
    .slice(0, 16);
/** What one row adds to its group. */
export const rowSums = (r: UsageRowDoc): UsageGroupSums => ({
  tokens: r.totalTokens,
  costNanos: r.costNanos,
  inputTokens: r.inputTokens,
  outputTokens: r.outputTokens,
  cachedInputTokens: r.cachedInputTokens,
  rows: 1,
  neuronInvokes: r.firstOf?.includes('neuron') ? 1 : 0,
  receptorInvokes: r.firstOf?.includes('receptor') ? 1 : 0,
  pathwayInvokes: r.firstOf?.includes('pathway') ? 1 : 0,
});
/** Adds groups into `into` (by group id); returns it. */
export function mergeGroups(into: Map<string, UsageGroup>, groups: Iterable<UsageGroup>): Map<string, UsageGroup> {
  for (const g of groups) {
    const id = groupIdOf(g);
    const cur = into.get(id);
    if (!cur) {
      into.set(id, { ...g });
      continue;
    }
    for (const m of GROUP_SUMS) cur[m] += g[m];
  }
  return into;
}
/** Ledger rows summed by group (the rollup of any set of rows). */
export const groupRows = (rows: Iterable<UsageRowDoc>): Map<string, UsageGroup> => {
  const out = new Map<string, UsageGroup>();
  for (const r of rows) mergeGroups(out, [{ ...groupKeyOf(r), ...rowSums(r) }]);
  return out;
};

/** `a − b` by group id (sums subtract; a group left with nothing is dropped). */
export function subtractGroups(a: Iterable<UsageGroup>, b: Iterable<UsageGroup>): UsageGroup[] {
  const out = mergeGroups(new Map(), a);
  for (const g of b) {
    const id = groupIdOf(g);
    const cur = out.get(id) ?? { ...g, ...Object.fromEntries(GROUP_SUMS.map((m) => [m, 0])) };
    for (const m of GROUP_SUMS) cur[m] -= g[m];
    out.set(id, cur);
  }
  return [...out.values()].filter((g) => GROUP_SUMS.some((m) => g[m] !== 0));
}
