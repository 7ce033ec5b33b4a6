import type { Blob } from '../kernel/store/codec.js';

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

/** A firing as the repository returns it: the trigger decoded (null when unreadable). */
export type Firing = Omit<FiringDoc, 'trigger'> & { trigger: unknown };
/** A channel binding as the repository returns it: the metadata decoded. */
export type ChannelBinding = Omit<ChannelBindingDoc, 'metadata'> & { metadata: Json };
/** An action plan as the repository returns it: the input decoded. */
export type ActionPlan = Omit<ActionPlanDoc, 'input'> & { input: unknown };

/** Which bindings a list shows (all of the workspace's, or those of a receptor, a channel, an id). */
export interface BindingListWhere {
  receptorId?: string;
  channel?: string;
  id?: string;
}
/** The fields a binding change may set. */
export type BindingChange = Partial<
  Pick<ChannelBinding, 'receptorId' | 'externalId' | 'metadata' | 'isActive' | 'secretVersion' | 'updatedAt'>
>;
