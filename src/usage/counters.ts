import type { Redis } from '../kernel/redis.js';
import type { BudgetPeriod, BudgetScope } from './budget-schemas.js';
import {
  GROUP_SUMS,
  groupIdOf,
  groupKeyOf,
  rowSums,
  type InvokeFacet,
  type UsageGroup,
  type UsageRowDoc,
} from './groups.js';
import { hourOf } from './model.js';

/**
 * The usage counters (docs/usage.md, "Counters and rollups"): a cache in Redis, added to as each
 * ledger row is written and rebuilt from the ledger by the reconciler. Redis applies a script
 * atomically, so concurrent writers never lose an increment (FerretDB 1.x applies `$inc` as
 * read-modify-write), and a per-row marker set in the same script makes a row count once,
 * whatever retries. Every key of a workspace shares the hash tag `{<workspaceId>}`, so a script's
 * keys are in one slot on Redis Cluster.
 *
 * - `spend:<scope>:<target>`: per budget target (the workspace, a receptor, a neuron, a share
 *   link) the tokens and nano-USD of each UTC day (`d2026-01-31`), month (`m2026-01`) and in all
 *   (`all`): what a budget check reads (one round trip for every budget covering a call);
 * - `h:<epoch hour>`: per hour, the sums of each group of facets (`<group id>:<measure>`, and
 *   `<group id>` = the group's facets as JSON): the open hour and the hours not yet stored as rollups;
 * - `hours`: the epoch hours that have counters (a sorted set), so a range reads only those;
 * - `row:<ledger id>`: the row is counted (kept ROW_MARK_S, longer than the reconciler looks back);
 * - `first:<facet>:<value>:<run>`: the ledger id of the run's first row for that facet value;
 * - `built`: the counters of the workspace were rebuilt from (or checked against) the whole ledger
 *   in this Redis (no expiry). Missing (a Redis that lost everything, an upgrade from a version
 *   without it, a workspace not reconciled yet): budgets and the usage routes read the ledger
 *   until the reconciler's full rebuild sets it again;
 * - `rebuilding`: the token of a full rebuild under way; `built` is set only while it is still
 *   there, so a Redis flushed during a rebuild is not marked built by it.
 */

/** A row's marker outlives the reconciler's look-back (RECONCILE_LOOKBACK_H), so a replay never counts a row twice. */
const ROW_MARK_S = 3 * 86_400;
/** An hour's counters are kept this long after their last write; closed hours are stored as rollups well before. */
const HOUR_KEEP_S = 8 * 86_400;
/** How long a full rebuild holds its workspace (a reconciler that died mid-rebuild frees it then). */
const REBUILD_HOLD_S = 15 * 60;
/** A run that continues after this long without a first-row marker counts as a new invocation. */
const FIRST_MARK_S = 40 * 86_400;

/** The facet values and run a row's `firstOf` is decided for. */
const INVOKE_OF: Record<InvokeFacet, { field: 'neuronId' | 'receptorId' | 'pathwayId'; per: 'jobId' | 'runId' }> = {
  neuron: { field: 'neuronId', per: 'jobId' },
  receptor: { field: 'receptorId', per: 'runId' },
  pathway: { field: 'pathwayId', per: 'runId' },
};

/** KEYS: row marker, hour hash, hours set, spend hashes…; ARGV: see `count`. */
const COUNT_LUA = `
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then return 0 end
local names = {${GROUP_SUMS.map((m) => `'${m}'`).join(',')}}
local gid = ARGV[4]
redis.call('HSET', KEYS[2], gid, ARGV[5])
for i, n in ipairs(names) do
  local v = tonumber(ARGV[5 + i])
  if v ~= 0 then redis.call('HINCRBY', KEYS[2], gid .. ':' .. n, v) end
end
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[3])
local at = 6 + #names
for k = 4, #KEYS do
  for _, p in ipairs({ARGV[at], ARGV[at + 1], 'all'}) do
    redis.call('HINCRBY', KEYS[k], p .. ':tokens', ARGV[at + 2])
    redis.call('HINCRBY', KEYS[k], p .. ':cost', ARGV[at + 3])
  end
end
return 1
`;

/** KEYS: first-row markers; ARGV: ledger id, ttl. Returns 1 per key whose first row is this one. */
const FIRST_LUA = `
local out = {}
for i, k in ipairs(KEYS) do
  redis.call('SET', k, ARGV[1], 'NX', 'EX', ARGV[2])
  if redis.call('GET', k) == ARGV[1] then out[i] = 1 else out[i] = 0 end
end
return out
`;

/** KEYS: spend hashes; ARGV: field, delta per key (the reconciler's correction). */
const ADJUST_LUA = `
for i, k in ipairs(KEYS) do redis.call('HINCRBY', k, ARGV[2 * i - 1], ARGV[2 * i]) end
return 1
`;

/** KEYS: one spend hash; ARGV: field, delta, field, delta… (the rebuild's correction). */
const ADJUST_FIELDS_LUA = `
for i = 1, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
`;

/** KEYS: rebuilding, built; ARGV: the rebuild's token. Marks the counters built if the rebuild was not interrupted by a flush. */
const FINISH_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], '1')
redis.call('DEL', KEYS[1])
return 1
`;

interface CounterRedis {
  cortexUsageCount(...args: (string | number)[]): Promise<number>;
  cortexUsageFirst(...args: (string | number)[]): Promise<number[]>;
  cortexUsageAdjust(...args: (string | number)[]): Promise<number>;
  cortexUsageFinish(...args: (string | number)[]): Promise<number>;
  cortexUsageAdjustFields(...args: (string | number)[]): Promise<number>;
}

/** The period key of a budget period at a time (UTC). */
export function periodKey(period: BudgetPeriod, at: Date): string {
  const iso = at.toISOString();
  return period === 'day' ? `d${iso.slice(0, 10)}` : period === 'month' ? `m${iso.slice(0, 7)}` : 'all';
}

/** A budget's counter: which target's hash and which field. */
export interface SpendKey {
  workspaceId: string;
  scope: BudgetScope;
  targetId: string | null;
  period: BudgetPeriod;
  measure: 'tokens' | 'usd';
}

/** The Redis keys of the counters (every key of a workspace under the hash tag `{<workspaceId>}`). */
function keysOf(prefix: string) {
  const base = (ws: string) => `${prefix}usage:{${ws}}:`;
  return {
    row: (ws: string, id: string) => `${base(ws)}row:${id}`,
    hour: (ws: string, hour: number) => `${base(ws)}h:${hour}`,
    hours: (ws: string) => `${base(ws)}hours`,
    spend: (ws: string, scope: BudgetScope, target: string | null) => `${base(ws)}spend:${scope}:${target ?? '-'}`,
    first: (ws: string, facet: InvokeFacet, value: string, run: string) => `${base(ws)}first:${facet}:${value}:${run}`,
    budgets: (ws: string) => `${base(ws)}budgets`,
    built: (ws: string) => `${base(ws)}built`,
    rebuilding: (ws: string) => `${base(ws)}rebuilding`,
  };
}

/** What the counters' groups share: the Redis client (with the scripts defined on it) and the keys. */
interface CountersContext {
  redis: Redis;
  r: CounterRedis;
  keys: ReturnType<typeof keysOf>;
}

const fieldOf = (k: SpendKey, at: Date) => `${periodKey(k.period, at)}:${k.measure === 'usd' ? 'cost' : 'tokens'}`;

/** Parses an hour hash into its groups. */
function groupsOf(hash: Record<string, string>): UsageGroup[] {
  const out: UsageGroup[] = [];
  for (const [field, json] of Object.entries(hash)) {
    if (field.includes(':')) continue;
    const g = { ...(JSON.parse(json) as UsageGroup) };
    for (const m of GROUP_SUMS) g[m] = Number(hash[`${field}:${m}`] ?? 0);
    out.push(g);
  }
  return out;
}

/** Counting ledger rows (once each, by their markers) and deciding which invocations a row starts. */
function createRowCounters({ redis, r, keys }: CountersContext) {
  /** The spend hashes a row adds to: its workspace's, and its receptor's, neuron's and share link's. */
  const spendKeysOf = (row: UsageRowDoc) => [
    keys.spend(row.workspaceId, 'workspace', null),
    ...(row.receptorId ? [keys.spend(row.workspaceId, 'receptor', row.receptorId)] : []),
    ...(row.neuronId ? [keys.spend(row.workspaceId, 'neuron', row.neuronId)] : []),
    ...(row.shareTokenId ? [keys.spend(row.workspaceId, 'share_token', row.shareTokenId)] : []),
  ];

  return {
    /**
     * Which facets a row about to be written is its run's first row of (one round trip; none for
     * a row that serves no neuron, receptor or pathway). A repeat of the same ledger id gets the
     * same answer, so a retried write stores the same row.
     */
    async firstOf(
      row: Pick<UsageRowDoc, '_id' | 'workspaceId' | 'neuronId' | 'receptorId' | 'pathwayId' | 'jobId' | 'runId'>,
    ): Promise<InvokeFacet[]> {
      const asked = (Object.keys(INVOKE_OF) as InvokeFacet[]).flatMap((f) => {
        const value = row[INVOKE_OF[f].field];
        const run = row[INVOKE_OF[f].per];
        return value && run ? [{ f, key: keys.first(row.workspaceId, f, value, run) }] : [];
      });
      if (asked.length === 0) return [];
      const got = await r.cortexUsageFirst(asked.length, ...asked.map((a) => a.key), row._id, FIRST_MARK_S);
      return asked.filter((_, i) => Number(got[i]) === 1).map((a) => a.f);
    },

    /** Adds a stored ledger row to every counter it belongs to, once (false: it was counted already). */
    async count(row: UsageRowDoc): Promise<boolean> {
      const ks = [
        keys.row(row.workspaceId, row._id),
        keys.hour(row.workspaceId, hourOf(row.at)),
        keys.hours(row.workspaceId),
        ...spendKeysOf(row),
      ];
      const key = groupKeyOf(row);
      const sums = rowSums(row);
      const added = await r.cortexUsageCount(
        ks.length,
        ...ks,
        ROW_MARK_S,
        HOUR_KEEP_S,
        hourOf(row.at),
        groupIdOf(key),
        JSON.stringify(key),
        ...GROUP_SUMS.map((m) => sums[m]),
        periodKey('day', row.at),
        periodKey('month', row.at),
        row.totalTokens,
        row.costNanos,
      );
      return added === 1;
    },

    /** Counts many rows (the reconciler's replay), pipelined; returns how many were not counted before. */
    async countAll(rows: UsageRowDoc[]): Promise<number> {
      let added = 0;
      for (let i = 0; i < rows.length; i += 500) {
        const res = await Promise.all(rows.slice(i, i + 500).map((row) => this.count(row)));
        added += res.filter(Boolean).length;
      }
      return added;
    },

    /**
     * For ledger rows stored without `firstOf` (written before it existed, or around the counters),
     * which invocations each starts: in `at` order, a row is the first of its run for a facet value
     * unless a row with `firstOf` already is (`claimed`: `<facet>:<value>:<run>`) or the run's
     * first-row marker names another row. Sets the markers, so later rows of the run count nothing.
     */
    async decideFirsts(ws: string, rows: UsageRowDoc[], claimed: Set<string>): Promise<Map<string, InvokeFacet[]>> {
      const out = new Map<string, InvokeFacet[]>();
      const asks: { row: UsageRowDoc; f: InvokeFacet; key: string }[] = [];
      for (const row of rows)
        for (const f of Object.keys(INVOKE_OF) as InvokeFacet[]) {
          const value = row[INVOKE_OF[f].field];
          const run = row[INVOKE_OF[f].per];
          if (value && run && !claimed.has(`${f}:${value}:${run}`))
            asks.push({ row, f, key: keys.first(ws, f, value, run) });
        }
      for (let i = 0; i < asks.length; i += 500) {
        const batch = asks.slice(i, i + 500);
        const p = redis.pipeline();
        for (const a of batch) {
          p.set(a.key, a.row._id, 'EX', FIRST_MARK_S, 'NX');
          p.get(a.key);
        }
        const res = (await p.exec()) ?? [];
        batch.forEach((a, j) => {
          const [err, v] = res[2 * j + 1];
          if (err) throw err;
          if (v === a.row._id) out.set(a.row._id, [...(out.get(a.row._id) ?? []), a.f]);
        });
      }
      return out;
    },

    /** The `claimed` key of each facet a row with `firstOf` starts (see `decideFirsts`). */
    claimedBy: (row: UsageRowDoc): string[] =>
      (row.firstOf ?? []).flatMap((f) => {
        const value = row[INVOKE_OF[f].field];
        const run = row[INVOKE_OF[f].per];
        return value && run ? [`${f}:${value}:${run}`] : [];
      }),

    /** Sets the first-row markers of rows whose `firstOf` the reconciler decided (rows written around the counters). */
    async markFirst(
      ws: string,
      marks: { facet: InvokeFacet; value: string; run: string; rowId: string }[],
    ): Promise<void> {
      if (marks.length === 0) return;
      const p = redis.pipeline();
      for (const m of marks) p.set(keys.first(ws, m.facet, m.value, m.run), m.rowId, 'EX', FIRST_MARK_S, 'NX');
      await p.exec();
    },
  };
}

/** The spend counters budgets read (per target, per UTC day, month and in all), their corrections and the budget version. */
function createSpendCounters({ redis, r, keys }: CountersContext) {
  return {
    /** What budgets have spent (raw: tokens or nano-USD), one round trip for all of them. */
    async spent(list: SpendKey[], now = new Date()): Promise<number[]> {
      if (list.length === 0) return [];
      const p = redis.pipeline();
      for (const k of list) p.hget(keys.spend(k.workspaceId, k.scope, k.targetId), fieldOf(k, now));
      const res = (await p.exec()) ?? [];
      return res.map(([err, v]) => {
        if (err) throw err;
        return Number(v ?? 0);
      });
    },

    /**
     * The same, in the same round trip as the workspaces' `built` markers: null when a workspace's
     * counters are not known to be complete (the caller sums the ledger instead).
     */
    async spentIfBuilt(list: SpendKey[], now = new Date()): Promise<(number | null)[]> {
      if (list.length === 0) return [];
      const wss = [...new Set(list.map((k) => k.workspaceId))];
      const p = redis.pipeline();
      for (const ws of wss) p.exists(keys.built(ws));
      for (const k of list) p.hget(keys.spend(k.workspaceId, k.scope, k.targetId), fieldOf(k, now));
      const res = (await p.exec()) ?? [];
      for (const [err] of res) if (err) throw err;
      const built = new Map(wss.map((ws, i) => [ws, Number(res[i][1]) === 1]));
      return list.map((k, i) => (built.get(k.workspaceId) ? Number(res[wss.length + i][1] ?? 0) : null));
    },

    /** The raw spend hash of a target (period field → value), for the rebuild's comparison. */
    async spendHash(ws: string, scope: BudgetScope, target: string | null): Promise<Record<string, string>> {
      return redis.hgetall(keys.spend(ws, scope, target));
    },

    /** Adds deltas to fields of a target's spend hash (the rebuild's correction). */
    async adjustFields(
      ws: string,
      scope: BudgetScope,
      target: string | null,
      deltas: [string, number][],
    ): Promise<void> {
      if (deltas.length === 0) return;
      await r.cortexUsageAdjustFields(1, keys.spend(ws, scope, target), ...deltas.flat());
    },

    /** Adds `delta` to a budget's counter (the reconciler's correction). */
    async adjust(k: SpendKey, delta: number, now = new Date()): Promise<void> {
      await r.cortexUsageAdjust(1, keys.spend(k.workspaceId, k.scope, k.targetId), fieldOf(k, now), delta);
    },

    /** The workspace's budget version: changed by every budget write, so a cached list of budgets is known to be current. */
    budgetVersion: async (ws: string): Promise<string> => (await redis.get(keys.budgets(ws))) ?? '0',
    bumpBudgetVersion: async (ws: string): Promise<void> => {
      await redis.incr(keys.budgets(ws));
    },
  };
}

/** The workspace's `built` marker and the full rebuild's hold (whether the counters can be read instead of the ledger). */
function createRebuildMarkers({ redis, r, keys }: CountersContext) {
  return {
    /** Whether the workspace's counters are known to be complete (its `built` marker). */
    isBuilt: async (ws: string): Promise<boolean> => (await redis.exists(keys.built(ws))) === 1,

    /**
     * Starts a full rebuild: its token, which `finishRebuild` needs, or null while another rebuild
     * of the workspace is under way (two at once would correct the same counters twice).
     */
    async beginRebuild(ws: string): Promise<string | null> {
      const token = `${Date.now()}:${Math.random().toString(36).slice(2)}`;
      const ok = await redis.set(keys.rebuilding(ws), token, 'EX', REBUILD_HOLD_S, 'NX');
      return ok === 'OK' ? token : null;
    },

    /** Marks the counters built unless Redis lost the rebuild's token meanwhile (true: marked). */
    finishRebuild: async (ws: string, token: string): Promise<boolean> =>
      (await r.cortexUsageFinish(2, keys.rebuilding(ws), keys.built(ws), token)) === 1,

    /** Forgets the marker (a check found the counters behind the ledger): reads go to the ledger until a rebuild. */
    async unbuilt(ws: string): Promise<void> {
      await redis.del(keys.built(ws));
    },
  };
}

/** The hour counters: which hours have them, their groups, and forgetting those stored as rollups. */
function createHourCounters({ redis, keys }: CountersContext) {
  return {
    /** The epoch hours in [from, to) that have counters (null: unbounded). */
    async hoursWithCounters(ws: string, from: number | null, to: number | null): Promise<number[]> {
      const got = await redis.zrangebyscore(
        keys.hours(ws),
        from === null ? '-inf' : from,
        to === null ? '+inf' : `(${to}`,
      );
      return got.map(Number);
    },

    /** The groups counted in each of these hours (one round trip). */
    async hourGroups(ws: string, hours: number[]): Promise<Map<number, UsageGroup[]>> {
      const out = new Map<number, UsageGroup[]>();
      if (hours.length === 0) return out;
      const p = redis.pipeline();
      for (const h of hours) p.hgetall(keys.hour(ws, h));
      const res = (await p.exec()) ?? [];
      hours.forEach((h, i) => {
        const [err, v] = res[i];
        if (err) throw err;
        out.set(h, groupsOf(v as Record<string, string>));
      });
      return out;
    },

    /** Forgets hours that are stored as rollups and older than `before` (their counters expire anyway). */
    async forgetHours(ws: string, before: number): Promise<void> {
      await redis.zremrangebyscore(keys.hours(ws), '-inf', `(${before}`);
    },
  };
}

/** The usage counters of the comment above: the scripts defined once on the client, and each group over one context. */
export function createUsageCounters(redis: Redis, prefix: string) {
  const keys = keysOf(prefix);
  const scripts: [string, string][] = [
    ['cortexUsageCount', COUNT_LUA],
    ['cortexUsageFirst', FIRST_LUA],
    ['cortexUsageAdjust', ADJUST_LUA],
    ['cortexUsageFinish', FINISH_LUA],
    ['cortexUsageAdjustFields', ADJUST_FIELDS_LUA],
  ];
  for (const [name, lua] of scripts)
    if (typeof (redis as unknown as Record<string, unknown>)[name] !== 'function') redis.defineCommand(name, { lua });
  const r = redis as unknown as CounterRedis;
  const ctx: CountersContext = { redis, r, keys };
  return {
    keys,
    ...createRowCounters(ctx),
    ...createSpendCounters(ctx),
    ...createRebuildMarkers(ctx),
    ...createHourCounters(ctx),
  };
}
export type UsageCounters = ReturnType<typeof createUsageCounters>;
