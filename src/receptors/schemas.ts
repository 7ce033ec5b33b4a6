import { z } from 'zod';
import {
  IsoDate,
  JsonObject,
  QueryBool,
  SortDirection,
  Uuid,
  paging,
  PageTotal,
  pageFields,
} from '../kernel/schemas.js';
import { MultitaskStrategy, NeuronTaskOptions } from '../jobs/index.js';

/** Channels a receptor listens on (a receptor's `active_channels`). */
const CHANNELS = [
  'http',
  'cron',
  'stimulus',
  'slack',
  'teams',
  'discord',
  'telegram',
  'whatsapp',
  'email',
  'webchat',
] as const;
const Channel = z.enum(CHANNELS);
/** Chat and email channels: the ones a channel binding and the webhook ingress serve. */
const CHAT_CHANNELS = ['slack', 'teams', 'discord', 'telegram', 'whatsapp', 'email', 'webchat'] as const;

const DURATION_RE = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;
const UNIT_S: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
/** A duration as seconds: a number of seconds, or '90s', '15m', '2h', '1d'. */
const Duration = z.union([z.number().nonnegative(), z.string()]).transform((v, ctx) => {
  if (typeof v === 'number') return v;
  const m = DURATION_RE.exec(v.trim());
  if (!m) {
    ctx.addIssue({ code: 'custom', message: 'must be seconds or a duration like 30s, 15m, 2h, 1d' });
    return z.NEVER;
  }
  return Number(m[1]) * UNIT_S[m[2] ?? 's'];
});

/** An IANA time zone the runtime knows (Temporal resolves DST with the same database). */
const TimeZone = z.string().refine((tz) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}, 'must be an IANA time zone such as Europe/Berlin');

const OverlapPolicy = z.enum(['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'allow_all']);

/** source_config.timing of a scheduled receptor: cron and/or intervals, in a time zone. */
export const Timing = z
  .object({
    cron: z
      .union([z.string().min(1), z.array(z.string().min(1)).max(10)])
      .optional()
      .meta({
        description: 'cron expression(s), 5 fields (minute hour day-of-month month day-of-week) or @daily-style',
      }),
    interval: z
      .union([Duration, z.object({ every: Duration, offset: Duration.optional() })])
      .optional()
      .meta({ description: 'fire every N seconds (or "15m"), optionally offset' }),
    timezone: TimeZone.default('UTC'),
    overlap: OverlapPolicy.default('skip').meta({
      description: 'what happens when a fire is due while the previous run is still going',
    }),
    catchup_window: Duration.default(600).meta({
      description: 'fires missed while the platform was down are taken if they are at most this old',
    }),
    jitter: Duration.default(0),
    start_at: IsoDate.optional(),
    end_at: IsoDate.optional(),
  })
  .strict()
  .superRefine((t, ctx) => {
    if (!t.cron && t.interval === undefined) ctx.addIssue({ code: 'custom', message: 'timing needs cron or interval' });
    const every = typeof t.interval === 'number' ? t.interval : t.interval?.every;
    if (every !== undefined && every < 1)
      ctx.addIssue({ code: 'custom', path: ['interval'], message: 'interval must be at least 1 second' });
  });
export type Timing = z.infer<typeof Timing>;

export const SourceConfig = z
  .object({
    stimulus_keys: z.array(z.string().min(1).max(200)).max(50).default([]),
    activation: z.enum(['event', 'schedule']).default('event'),
    timing: Timing.optional(),
    /** What a scheduled fire sends as its trigger payload. */
    payload: JsonObject.optional(),
  })
  .passthrough()
  .superRefine((s, ctx) => {
    if (s.activation === 'schedule' && !s.timing)
      ctx.addIssue({
        code: 'custom',
        path: ['timing'],
        message: 'activation schedule needs timing (cron or interval)',
      });
  });
export type SourceConfig = z.infer<typeof SourceConfig>;

/**
 * PATCH's source_config: merged into the stored one (a key sent replaces it, a key left out is
 * kept; `timing` is replaced whole), and the result checked as a SourceConfig. No defaults here, so
 * `{ timing }` alone changes the timing of a schedule and nothing else.
 */
const SourceConfigPatch = z
  .object({
    stimulus_keys: z.array(z.string().min(1).max(200)).max(50).optional(),
    activation: z.enum(['event', 'schedule']).optional(),
    timing: Timing.optional(),
    payload: JsonObject.optional(),
  })
  .passthrough()
  .meta({
    description:
      'merged into the stored source_config: keys sent replace, keys left out are kept (timing is replaced whole)',
  });
type SourceConfigPatch = z.infer<typeof SourceConfigPatch>;

const TargetKind = z.enum(['neuron', 'pathway', 'action_plan', 'plasticity_pass', 'system_job']);
export const ExecutableTargetBody = z
  .object({
    kind: TargetKind,
    id: Uuid.optional().meta({ description: "the neuron or pathway (an action plan's pathway)" }),
    auto_execute: z
      .boolean()
      .optional()
      .meta({ description: 'action_plan: run the plan at once instead of leaving it proposed' }),
    job: z
      .string()
      .optional()
      .meta({ description: 'system_job: the maintenance key to run (default: the stimulus key that fired)' }),
  })
  .strict()
  .superRefine((t, ctx) => {
    if (
      (t.kind === 'neuron' || t.kind === 'pathway' || t.kind === 'action_plan' || t.kind === 'plasticity_pass') &&
      !t.id
    )
      ctx.addIssue({ code: 'custom', path: ['id'], message: `a ${t.kind} target needs id` });
    if (t.kind === 'system_job' && t.id)
      ctx.addIssue({ code: 'custom', path: ['id'], message: 'a system_job target has no id (name the job in job)' });
  });
export type ExecutableTargetBody = z.infer<typeof ExecutableTargetBody>;

export const ReceptorListQuery = z
  .object({
    target_type: z.enum(['neuron', 'pathway']).optional(),
    sortBy: z.enum(['created_at', 'updated_at', 'slug']).default('created_at'),
    sortDirection: SortDirection.default('desc'),
    ids: z
      .string()
      .optional()
      .transform((s, ctx) => {
        if (s === undefined || s.trim() === '') return undefined;
        const ids = s
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean);
        if (ids.length > 100) {
          ctx.addIssue({ code: 'custom', message: 'ids takes at most 100 UUIDs' });
          return z.NEVER;
        }
        const bad = ids.find((x) => !z.uuid().safeParse(x).success);
        if (bad !== undefined) {
          ctx.addIssue({ code: 'custom', message: `ids: "${bad.slice(0, 40)}" is not a UUID` });
          return z.NEVER;
        }
        return ids.map((x) => x.toLowerCase());
      }),
    ...paging(20),
  })
  .meta({ id: 'ReceptorListQuery' });
export type ReceptorListQuery = z.infer<typeof ReceptorListQuery>;

/** POST /v1/receptors/:id/fire: the receptor's slug or its id, as neurons' invoke takes a neuron's. */
export const ReceptorFireParams = z.object({
  id: z.string().min(1).max(200).meta({ description: "the receptor's slug or id" }),
});
export const ReceptorRefParams = z.object({
  workspace_slug: z.string().min(1).max(200),
  slug_or_id: z.string().min(1).max(200),
});
export const ReceptorGetQuery = z.object({
  preview: z.coerce
    .number()
    .int()
    .min(0)
    .max(50)
    .default(5)
    .meta({ description: 'how many next fire times to show for a schedule' }),
});

export const ReceptorPatchBody = z
  .object({
    active_channels: z.array(Channel).max(CHANNELS.length).optional(),
    config: JsonObject.optional(),
    is_active: z.boolean().optional(),
    source_config: SourceConfigPatch.optional(),
    executable_target: ExecutableTargetBody.optional(),
    sensory_reflex_id: Uuid.nullable().optional(),
  })
  .strict()
  .meta({ id: 'ReceptorPatchBody' });
export type ReceptorPatchBody = z.infer<typeof ReceptorPatchBody>;

const FIRE_KEYS = ['invoke', 'data', 'stream', 'trace_id', 'neuron_task_options', 'multitask_strategy'] as const;
/** POST /v1/receptors/:id/fire: the `invoke` wrapper, or top-level fields as the trigger payload. */
export const FireBody = z
  .object({
    invoke: JsonObject.optional(),
    data: JsonObject.optional(),
    stream: z.boolean().default(false),
    trace_id: Uuid.optional(),
    neuron_task_options: NeuronTaskOptions.optional(),
    multitask_strategy: MultitaskStrategy.optional(),
  })
  .catchall(z.unknown())
  .superRefine((b, ctx) => {
    const extra = Object.keys(b).filter((k) => !(FIRE_KEYS as readonly string[]).includes(k));
    if (b.invoke && extra.length)
      ctx.addIssue({
        code: 'custom',
        message: `with invoke, put the trigger payload inside it (unexpected: ${extra.slice(0, 5).join(', ')})`,
      });
    if (JSON.stringify(b).length > 256 * 1024)
      ctx.addIssue({ code: 'custom', message: 'the trigger payload is over 256 KB' });
  })
  .meta({ id: 'ReceptorFireBody' });
export type FireBody = z.infer<typeof FireBody>;
/** The trigger payload of a fire body: the invoke wrapper, or the top-level fields that are not fire options. */
export function triggerPayload(b: FireBody): Record<string, unknown> {
  if (b.invoke) return b.invoke;
  return Object.fromEntries(Object.entries(b).filter(([k]) => !(FIRE_KEYS as readonly string[]).includes(k)));
}

/**
 * POST /v1/receptors/subscribe: creates a receptor from a template (docs/receptors.md).
 * schedule: fires its target on a cron or interval; stimulus: fires its target on platform events.
 */
export const SubscribeBody = z
  .discriminatedUnion('template', [
    z
      .object({
        template: z.literal('schedule'),
        name: z.string().min(1).max(100),
        brain_id: Uuid.optional(),
        target: ExecutableTargetBody,
        timing: Timing,
        payload: JsonObject.optional(),
        stimulus_keys: z
          .array(z.string())
          .max(50)
          .optional()
          .meta({ description: 'schedulable keys the tick stands for (maintenance.*)' }),
        is_active: z.boolean().default(true),
      })
      .strict(),
    z
      .object({
        template: z.literal('stimulus'),
        name: z.string().min(1).max(100),
        brain_id: Uuid.optional(),
        target: ExecutableTargetBody,
        stimulus_keys: z.array(z.string().min(1)).min(1).max(50),
        config: JsonObject.optional(),
        is_active: z.boolean().default(true),
      })
      .strict(),
  ])
  .meta({ id: 'ReceptorSubscribeBody' });
export type SubscribeBody = z.infer<typeof SubscribeBody>;

export const PauseBody = z.object({ note: z.string().max(500).optional() }).strict();
export const TriggerBody = z
  .object({ overlap: OverlapPolicy.optional().meta({ description: "default: the schedule's own policy" }) })
  .strict();
/** POST /v1/schedules/preview: the next fire times of a timing that is not saved (docs/receptors.md, "Preview"). */
export const SchedulePreviewBody = z
  .object({
    timing: Timing,
    count: z.number().int().min(1).max(50).default(5).meta({ description: 'how many fire times (1 to 50)' }),
  })
  .strict()
  .meta({ id: 'SchedulePreviewBody' });
export type SchedulePreviewBody = z.infer<typeof SchedulePreviewBody>;
export const SchedulePreview = z
  .object({
    timezone: z.string(),
    next_fire_times: z
      .array(z.string())
      .meta({ description: 'ISO instants (UTC), at most count, within two years from now; jitter not applied' }),
  })
  .meta({ id: 'SchedulePreview' });

export const BackfillBody = z
  .object({
    start_at: IsoDate,
    end_at: IsoDate,
    overlap: OverlapPolicy.default('allow_all'),
  })
  .strict()
  .refine((b) => Date.parse(b.start_at) < Date.parse(b.end_at), 'start_at must be before end_at');

export const StimuliCatalogQuery = z.object({ schedulable: QueryBool.optional() });
export const StimulusEventBody = z
  .object({
    workspace_id: Uuid,
    key: z.string().min(1).max(200),
    event_id: z.string().min(1).max(200),
    payload: JsonObject.default({}),
  })
  .strict();
export type StimulusEventBody = z.infer<typeof StimulusEventBody>;

export const BindingCreateBody = z
  .object({
    receptor_id: Uuid,
    channel: z.enum(CHAT_CHANNELS),
    external_id: z.string().min(1).max(300),
    metadata: JsonObject.optional(),
    is_active: z.boolean().default(true),
  })
  .strict()
  .meta({ id: 'ReceptorChannelBindingCreate' });
export type BindingCreateBody = z.infer<typeof BindingCreateBody>;
export const BindingPatchBody = z
  .object({
    receptor_id: Uuid.optional(),
    external_id: z.string().min(1).max(300).optional(),
    metadata: JsonObject.optional(),
    is_active: z.boolean().optional(),
    rotate_secret: z
      .boolean()
      .optional()
      .meta({ description: 'issue a new webhook secret (the old one stops working)' }),
  })
  .strict();
export type BindingPatchBody = z.infer<typeof BindingPatchBody>;
export const BindingPatchByBody = BindingPatchBody.extend({ id: Uuid });
export const BindingListQuery = z.object({
  receptor_id: Uuid.optional(),
  channel: z.enum(CHAT_CHANNELS).optional(),
  id: Uuid.optional(),
  ...paging(50),
});
export const BindingIdQuery = z.object({ id: Uuid });
export const ChatWebhookParams = z.object({ provider: z.enum(CHAT_CHANNELS) });
export const ChatWebhookBody = z
  .object({
    external_id: z.string().min(1).max(300),
    event_id: z.string().min(1).max(200),
    message: z.string().min(1).max(100_000),
    sender: z.object({ id: z.string().max(300).optional(), name: z.string().max(300).optional() }).optional(),
    data: JsonObject.optional(),
  })
  .strict();
export type ChatWebhookBody = z.infer<typeof ChatWebhookBody>;

// ---------------------------------------------------------------- responses

const ScheduleView = z.object({
  schedule_id: z.string(),
  state: z.enum(['active', 'paused', 'missing']),
  note: z.string().nullable(),
  timezone: z.string(),
  cron: z.array(z.string()),
  interval_seconds: z.array(z.number()),
  overlap: OverlapPolicy,
  next_fire_times: z.array(z.string()),
  recent_fires: z.array(z.object({ scheduled_at: z.string(), started_at: z.string(), workflow_id: z.string() })),
  fires_taken: z.number(),
  skipped_overlap: z.number(),
  missed_catchup: z.number(),
});
export const Receptor = z
  .object({
    id: z.string(),
    slug: z.string(),
    workspace_id: z.string(),
    brain_id: z.string(),
    active_channels: z.array(z.string()),
    config: JsonObject,
    is_active: z.boolean(),
    scope: z.string(),
    source_config: JsonObject,
    executable_target: z.object({
      kind: z.string(),
      id: z.string().nullable(),
      auto_execute: z.boolean().optional(),
      job: z.string().nullable().optional(),
    }),
    sensory_reflex_id: z.string().nullable(),
    target_type: z.string(),
    origin: z.string(),
    schedule: ScheduleView.nullable().optional(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Receptor' });
export const ReceptorList = z.object({
  receptors: z.array(Receptor),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});
export const FireAccepted = z.object({
  job_id: z.string(),
  status: z.literal('pending'),
  trace_id: z.string().nullable().optional(),
  receptor_id: z.string(),
});
const StimulusKeyView = z.object({
  key: z.string(),
  description: z.string(),
  schedulable: z.boolean(),
  payload: JsonObject,
});
export const StimuliCatalog = z.object({ stimuli: z.array(StimulusKeyView) });
export const ChannelBinding = z
  .object({
    id: z.string(),
    receptor_id: z.string(),
    channel: z.string(),
    external_id: z.string(),
    trace_id: z.string(),
    metadata: JsonObject,
    is_active: z.boolean(),
    webhook_url: z.string(),
    webhook_secret: z.string().optional(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'ReceptorChannelBinding' });
