import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob, type Blob } from '../kernel/store/codec.js';
import { isDuplicateKey } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import { page, pageIndexes, type Page, type PageQuery, type PageSort } from '../kernel/store/paging.js';
import { createFiringOps, type ChannelBindingDoc } from './firings.mongo.js';
import { searchReader } from '../kernel/store/rows.js';

export type { Page, PageQuery, PageSort };
export type { ActionPlan, ActionPlanDoc, ChannelBinding, ChannelBindingDoc, Firing } from './firings.mongo.js';

/** `plasticity_pass` is the older name of `action_plan`; it is stored as `action_plan`. */
export type ReceptorTargetKind = 'neuron' | 'pathway' | 'action_plan' | 'plasticity_pass' | 'system_job';

/**
 * What a receptor dispatches when it fires. `id` names the neuron or pathway (an action plan's
 * pathway); `job` names the maintenance job of a system_job target (null: the stimulus key that fired).
 */
export interface ExecutableTarget {
  kind: ReceptorTargetKind;
  id: string | null;
  autoExecute?: boolean;
  job?: string | null;
}

/** How a scheduled receptor's Temporal Schedule is shaped (source_config.timing, validated by src/receptors/schemas.ts). */
export interface ScheduleTiming {
  cron: string[];
  intervals: { everyS: number; offsetS: number }[];
  timezone: string;
  overlap: 'skip' | 'buffer_one' | 'buffer_all' | 'cancel_other' | 'allow_all';
  catchupWindowS: number;
  jitterS: number;
  startAt: string | null;
  endAt: string | null;
}

/**
 * A trigger that listens on channels and dispatches its target (docs/receptors.md).
 * For neuron and pathway targets, `isActive` and `scope` mirror the target. The parts the
 * platform queries (stimulus keys, activation, the schedule) are first-class fields; the rest of
 * source_config is a blob.
 */
export interface ReceptorDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  slug: string;
  activeChannels: string[];
  config: Blob;
  isActive: boolean;
  scope: 'brain' | 'workspace' | 'core';
  sourceConfig: Blob;
  executableTarget: ExecutableTarget;
  sensoryReflexId: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** target: created with its neuron or pathway (removed with it); subscription: created by POST /v1/receptors/subscribe. */
  origin?: 'target' | 'subscription';
  /** Keys it subscribes to (source_config.stimulus_keys). */
  stimulusKeys?: string[];
  activation?: 'event' | 'schedule' | null;
  /** Set when activation is schedule: the Temporal Schedule's shape, and a pause asked for by a person (with its note). */
  timing?: ScheduleTiming | null;
  schedulePause?: { paused: boolean; note: string | null; at: Date | null } | null;
  createdBy?: string | null;
}

type Json = Record<string, unknown>;
/** A receptor as the repository returns it: config and source_config decoded. */
export type Receptor = Omit<ReceptorDoc, 'config' | 'sourceConfig'> & { config: Json; sourceConfig: Json };
/** The fields a change may set. */
export type ReceptorChange = Partial<Omit<Receptor, '_id' | 'workspaceId' | 'createdAt'>>;
/** What a list shows: the workspace's receptors, visible in `brainId` when given, of a target kind, among `ids`. */
export interface ReceptorListWhere {
  brainId?: string;
  targetKind?: ReceptorTargetKind;
  ids?: string[];
}

const toReceptor = (d: ReceptorDoc): Receptor => ({
  ...d,
  config: decodeBlob<Json>(d.config, {}),
  sourceConfig: decodeBlob<Json>(d.sourceConfig, {}),
});
/** The stored form of a change: blob fields encoded. */
function encodeChange(set: ReceptorChange): Partial<ReceptorDoc> {
  const { config, sourceConfig, ...rest } = set;
  return {
    ...rest,
    ...(config !== undefined ? { config: encodeBlob(config) } : {}),
    ...(sourceConfig !== undefined ? { sourceConfig: encodeBlob(sourceConfig) } : {}),
  };
}

export const receptorIndexes: IndexSpec[] = [
  { collection: 'receptors', keys: { workspaceId: 1, slug: 1 }, unique: true, name: 'ws_slug_unique' },
  {
    collection: 'receptors',
    keys: { workspaceId: 1, 'executableTarget.kind': 1, 'executableTarget.id': 1 },
    name: 'ws_target',
  },
  { collection: 'receptors', keys: { workspaceId: 1, brainId: 1, createdAt: -1 }, name: 'ws_brain_created' },
  // GET /v1/receptors pages by (sort field, _id); brain visibility and the target filter are checked on the workspace's rows read in that order.
  ...pageIndexes('receptors', ['workspaceId'], ['createdAt', 'updatedAt', 'slug']),
  { collection: 'receptors', keys: { workspaceId: 1, stimulusKeys: 1 }, name: 'ws_stimulus' },
  { collection: 'receptors', keys: { activation: 1 }, name: 'activation' },
  { collection: 'receptor_firings', keys: { workspaceId: 1, receptorId: 1, firedAt: -1 }, name: 'ws_receptor_fired' },
  {
    collection: 'receptor_channel_bindings',
    keys: { channel: 1, externalId: 1 },
    unique: true,
    name: 'channel_external_unique',
  },
  { collection: 'receptor_channel_bindings', keys: { workspaceId: 1, receptorId: 1 }, name: 'ws_receptor' },
  // GET /v1/receptor-channel-bindings pages by (createdAt, _id) (src/kernel/store/paging.ts).
  ...pageIndexes('receptor_channel_bindings', ['workspaceId'], ['createdAt']),
  ...pageIndexes('receptor_channel_bindings', ['workspaceId', 'receptorId'], ['createdAt']),
  ...pageIndexes('receptor_channel_bindings', ['workspaceId', 'channel'], ['createdAt']),
  { collection: 'action_plans', keys: { workspaceId: 1, createdAt: -1 }, name: 'ws_created' },
];

/**
 * Receptor storage: receptors, their firings, channel bindings and action plans. Every query
 * filters by workspace, except the schedule reconciler's scan, the webhook ingress's lookup of a
 * conversation (unique on the platform) and the fire workflow's own record (keyed by its workflow id).
 */
export function createReceptorRepo(db: Db) {
  const receptors = db.collection<ReceptorDoc>('receptors');
  const bindings = db.collection<ChannelBindingDoc>('receptor_channel_bindings');
  const search = searchReader(receptors, toReceptor);
  const one = async (filter: Filter<ReceptorDoc>) => {
    const d = await receptors.findOne(filter);
    return d && toReceptor(d);
  };
  const many = async (filter: Filter<ReceptorDoc>) => (await receptors.find(filter).toArray()).map(toReceptor);
  const targetOf = (workspaceId: string, kind: ReceptorTargetKind, id: string): Filter<ReceptorDoc> => ({
    workspaceId,
    'executableTarget.kind': kind,
    'executableTarget.id': id,
  });
  return {
    findById: async (workspaceId: string, id: string) => {
      const d = await findById(receptors, id, { workspaceId });
      return d && toReceptor(d);
    },
    /** Whether the receptor exists in the workspace. */
    exists: async (workspaceId: string, id: string) =>
      (await findById(receptors, id, { workspaceId }, { projection: { _id: 1 } })) !== null,
    findBySlug: (workspaceId: string, slug: string) => one({ workspaceId, slug }),
    /** The receptor a target owns (subscriptions to it left out), or null. */
    ownReceptorOf: (workspaceId: string, kind: ReceptorTargetKind, id: string) =>
      one({ ...targetOf(workspaceId, kind, id), origin: { $ne: 'subscription' } }),
    /** Every receptor that dispatches this target (its own and subscriptions to it). */
    allForTarget: (workspaceId: string, kind: ReceptorTargetKind, id: string) => many(targetOf(workspaceId, kind, id)),
    /** Slugs and target kinds by id (usage reports). */
    labelsOf: async (workspaceId: string, ids: string[]): Promise<Map<string, { slug: string; kind: string }>> =>
      new Map(
        ids.length === 0
          ? []
          : (await receptors.find({ workspaceId, _id: { $in: ids } }).toArray()).map((r) => [
              r._id,
              { slug: r.slug, kind: r.executableTarget?.kind ?? 'receptor' },
            ]),
      ),
    page: async (
      workspaceId: string,
      where: ReceptorListWhere,
      sort: PageSort,
      q: PageQuery,
    ): Promise<Page<Receptor>> => {
      const filter: Filter<ReceptorDoc> = { workspaceId };
      if (where.brainId) filter.$or = [{ brainId: where.brainId }, { scope: { $in: ['workspace', 'core'] } }];
      if (where.targetKind) filter['executableTarget.kind'] = where.targetKind;
      if (where.ids) filter._id = { $in: where.ids };
      const p = await page(receptors, filter, sort, q);
      return { ...p, items: p.items.map(toReceptor) };
    },
    /** A new receptor; false when its slug is taken in the workspace. */
    async create(r: Receptor): Promise<boolean> {
      try {
        await receptors.insertOne({ ...r, config: encodeBlob(r.config), sourceConfig: encodeBlob(r.sourceConfig) });
        return true;
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
    },
    async update(workspaceId: string, id: string, set: ReceptorChange): Promise<void> {
      await receptors.updateOne({ _id: id, workspaceId }, { $set: encodeChange(set) });
    },
    /** Removes a receptor and its channel bindings. */
    async remove(workspaceId: string, id: string): Promise<void> {
      await receptors.deleteOne({ _id: id, workspaceId });
      await bindings.deleteMany({ workspaceId, receptorId: id });
    },
    /** The stimulus receptors of a workspace that subscribe to any of these patterns (event activation). */
    subscribers: (workspaceId: string, patterns: string[]) =>
      many({ workspaceId, activation: 'event', stimulusKeys: { $in: patterns }, activeChannels: 'stimulus' }),
    /** Every receptor with a schedule, across workspaces (the start-up reconciler). */
    scheduled: () => many({ activation: 'schedule' }),
    /** The search index's reads: receptors by id (any workspace) and a walk of them all. */
    searchRows: search.byIds,
    allSearchRows: search.all,
    ...createFiringOps(db),
  };
}
export type ReceptorRepo = ReturnType<typeof createReceptorRepo>;
