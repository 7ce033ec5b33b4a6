import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from './client.js';
import type { Blob } from './codec.js';
import { findById } from './client.js';
import { page, pageIndexes, type PageQuery, type PageSort } from './paging.js';

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

/** How a scheduled receptor's Temporal Schedule is shaped (source_config.timing, validated by src/schemas/receptors.ts). */
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

/** One firing of a receptor: the fire workflow's record (id = that workflow's id). */
export interface FiringDoc {
  _id: string;
  workspaceId: string;
  receptorId: string;
  jobId: string;
  source: 'http' | 'schedule' | 'stimulus' | 'channel' | 'share';
  /** The stimulus event or channel message that fired it (deduplication key with the receptor). */
  eventId: string | null;
  stimulusKey: string | null;
  /** The trigger payload (blob): kept here so the workflow input carries ids only. */
  trigger: Blob;
  status: 'pending' | 'running' | 'completed' | 'failed' | 'skipped';
  reason: string | null;
  firedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** Maps an external chat or email conversation to a receptor (docs/receptors.md, "Channel bindings and the webhook ingress"). */
export interface ChannelBindingDoc {
  _id: string;
  workspaceId: string;
  receptorId: string;
  channel: string;
  externalId: string;
  /** The thread the conversation continues (neuron targets). */
  traceId: string;
  metadata: Blob;
  isActive: boolean;
  /** Bumped by a secret rotation: the webhook secret is derived from the binding id and this number, never stored. */
  secretVersion: number;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** An action plan written when an action_plan receptor fires (searchable later as `action_plans`). */
export interface ActionPlanDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  receptorId: string;
  pathwayId: string;
  jobId: string;
  input: Blob;
  status: 'proposed' | 'executed';
  executionJobId: string | null;
  createdAt: Date;
  updatedAt: Date;
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
  // GET /v1/receptor-channel-bindings pages by (createdAt, _id) (src/db/paging.ts).
  ...pageIndexes('receptor_channel_bindings', ['workspaceId'], ['createdAt']),
  ...pageIndexes('receptor_channel_bindings', ['workspaceId', 'receptorId'], ['createdAt']),
  ...pageIndexes('receptor_channel_bindings', ['workspaceId', 'channel'], ['createdAt']),
  { collection: 'action_plans', keys: { workspaceId: 1, createdAt: -1 }, name: 'ws_created' },
];

/** Receptor storage; every query filters by workspace (the schedule reconciler's scan is the one exception). */
export function createReceptorRepo(db: Db) {
  const receptors = db.collection<ReceptorDoc>('receptors');
  const firings = db.collection<FiringDoc>('receptor_firings');
  const bindings = db.collection<ChannelBindingDoc>('receptor_channel_bindings');
  const actionPlans = db.collection<ActionPlanDoc>('action_plans');
  return {
    receptors,
    firings,
    bindings,
    actionPlans,
    findById: (workspaceId: string, id: string) => findById(receptors, id, { workspaceId }),
    findBySlug: (workspaceId: string, slug: string) => receptors.findOne({ workspaceId, slug }),
    forTarget: (workspaceId: string, kind: ReceptorTargetKind, id: string) =>
      receptors.findOne({ workspaceId, 'executableTarget.kind': kind, 'executableTarget.id': id }),
    list: (filter: Filter<ReceptorDoc> & { workspaceId: string }, sort: PageSort, q: PageQuery) =>
      page(receptors, filter, sort, q),
    /** Every receptor with a schedule, across workspaces (the start-up reconciler). */
    scheduled: () => receptors.find({ activation: 'schedule' }).toArray(),
  };
}
export type ReceptorRepo = ReturnType<typeof createReceptorRepo>;
