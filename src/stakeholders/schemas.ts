import { z } from 'zod';
import { IsoDate, Uuid, paging, PageTotal, pageFields } from '../kernel/schemas.js';

/**
 * Stakeholder maps (docs/stakeholder-maps.md): the live graph's
 * element shapes, the patch operations that change it, and the request and response shapes of
 * both route families. The patch ops are the one way the graph changes: the DSL and the
 * meeting extraction both compile to them.
 */

const Influence = z.enum(['low', 'medium', 'high']);
const Stance = z.enum(['supportive', 'neutral', 'opposed', 'unknown']);
/** An edge's polarity (alliance, tension or neither); interactions carry the same scale as their sentiment. */
const Polarity = z.enum(['positive', 'neutral', 'negative']);
const InteractionKind = z.enum(['meeting', 'call', 'email', 'message', 'note', 'other']);
const Severity = z.enum(['low', 'medium', 'high']);
const RiskStatus = z.enum(['open', 'mitigated', 'closed']);

const Name = z.string().trim().min(1).max(200);
const Text = (max: number) => z.string().trim().max(max);
const Tags = z.array(z.string().trim().min(1).max(60)).max(30);
/** A stakeholder reference: a UUID names an existing stakeholder; anything else is a name (created when absent, where the op says so). */
const StakeholderRef = z.string().trim().min(1).max(200);

export const StakeholderOp = z
  .discriminatedUnion('op', [
    z
      .object({
        op: z.literal('upsert_stakeholder'),
        id: Uuid.optional().meta({
          description:
            'an existing stakeholder (rename by sending a new name); absent: matched by name, created when new',
        }),
        name: Name.optional(),
        role: Text(200).nullable().optional(),
        organization: Text(200).nullable().optional(),
        influence: Influence.nullable().optional(),
        stance: Stance.optional(),
        notes: Text(4000).nullable().optional(),
        tags: Tags.optional(),
      })
      .strict()
      .refine((o) => o.id || o.name, 'upsert_stakeholder needs an id or a name'),
    z.object({ op: z.literal('remove_stakeholder'), stakeholder: StakeholderRef }).strict(),
    z
      .object({
        op: z.literal('add_interaction'),
        summary: Text(4000).min(1),
        participants: z.array(StakeholderRef).min(1).max(50),
        occurred_at: IsoDate.optional(),
        kind: InteractionKind.optional(),
        sentiment: Polarity.optional(),
        topics: Tags.optional(),
      })
      .strict(),
    z.object({ op: z.literal('remove_interaction'), id: Uuid }).strict(),
    z
      .object({
        op: z.literal('set_edge'),
        from: StakeholderRef,
        to: StakeholderRef,
        polarity: Polarity,
        strength: z.number().min(0).max(1).optional().meta({ description: '0..1, default 0.5' }),
        relation: Text(200).nullable().optional(),
      })
      .strict(),
    z.object({ op: z.literal('remove_edge'), from: StakeholderRef, to: StakeholderRef }).strict(),
    z
      .object({
        op: z.literal('upsert_risk'),
        id: Uuid.optional(),
        title: Name.optional(),
        description: Text(4000).nullable().optional(),
        severity: Severity.optional(),
        status: RiskStatus.optional(),
        stakeholders: z.array(StakeholderRef).max(50).optional(),
      })
      .strict()
      .refine((o) => o.id || o.title, 'upsert_risk needs an id or a title'),
    z
      .object({ op: z.literal('remove_risk'), id: Uuid.optional(), title: Name.optional() })
      .strict()
      .refine((o) => o.id || o.title, 'remove_risk needs an id or a title'),
    z.object({ op: z.literal('set_summary'), summary: Text(20_000) }).strict(),
  ])
  .meta({ id: 'StakeholderMapOp' });
export type StakeholderOp = z.infer<typeof StakeholderOp>;
const StakeholderOps = z.array(StakeholderOp).min(1).max(500);

// ---- the live graph (stored and returned in this shape) ----

export const Stakeholder = z
  .object({
    id: z.string(),
    name: z.string(),
    role: z.string().nullable(),
    organization: z.string().nullable(),
    influence: Influence.nullable(),
    stance: Stance,
    notes: z.string().nullable(),
    tags: z.array(z.string()),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Stakeholder' });
export type Stakeholder = z.infer<typeof Stakeholder>;
export const Interaction = z
  .object({
    id: z.string(),
    occurred_at: z.string(),
    kind: InteractionKind,
    summary: z.string(),
    participants: z.array(z.string()),
    sentiment: Polarity,
    topics: z.array(z.string()),
    source: z.object({ type: z.enum(['manual', 'meeting', 'text']), id: z.string().nullable() }),
    created_at: z.string(),
  })
  .meta({ id: 'StakeholderInteraction' });
export type Interaction = z.infer<typeof Interaction>;
export const Edge = z
  .object({
    id: z.string(),
    from: z.string(),
    to: z.string(),
    polarity: Polarity,
    strength: z.number(),
    relation: z.string().nullable(),
    updated_at: z.string(),
  })
  .meta({ id: 'StakeholderEdge' });
export type Edge = z.infer<typeof Edge>;
export const Risk = z
  .object({
    id: z.string(),
    title: z.string(),
    description: z.string().nullable(),
    severity: Severity,
    status: RiskStatus,
    stakeholders: z.array(z.string()),
    updated_at: z.string(),
  })
  .meta({ id: 'StakeholderRisk' });
export type Risk = z.infer<typeof Risk>;

export const Counts = z.object({
  stakeholders: z.number(),
  interactions: z.number(),
  edges: z.number(),
  risks: z.number(),
});
export type Counts = z.infer<typeof Counts>;

/** A graph as returned: limited by stakeholder_limit and interaction_limit, with the full counts. */
const GraphView = z
  .object({
    summary: z.string(),
    stakeholders: z.array(Stakeholder),
    interactions: z.array(Interaction),
    edges: z.array(Edge),
    risks: z.array(Risk),
    counts: Counts,
    truncated: z.object({ stakeholders: z.boolean(), interactions: z.boolean() }),
  })
  .meta({ id: 'StakeholderGraph' });

// ---- requests ----

const limits = {
  stakeholder_limit: z.coerce.number().int().min(1).max(1000).default(100),
  interaction_limit: z.coerce.number().int().min(1).max(5000).default(50),
};
export const GraphLimitsQuery = z.object(limits);
export type GraphLimits = z.infer<typeof GraphLimitsQuery>;
export const LiveQuery = z.object({ ...limits, resource_id: Uuid.optional() });
/** `live` or a positive integer version number, as a query string. */
export const VersionRef = z
  .string()
  .regex(/^(live|[1-9]\d{0,8})$/, 'must be live or a positive integer version')
  .transform((s): 'live' | number => (s === 'live' ? 'live' : Number(s)));
export type VersionRef = z.output<typeof VersionRef>;
export const DiffQuery = z.object({ ...limits, from: VersionRef, to: VersionRef, resource_id: Uuid.optional() });
export type DiffQuery = z.infer<typeof DiffQuery>;
export const MapListQuery = z.object({ brain_id: Uuid.optional(), ...paging(20) });
export const MapCreateBody = z
  .object({
    name: Name,
    description: Text(2000).optional(),
    brain_id: Uuid.optional(),
  })
  .strict()
  .meta({ id: 'StakeholderMapCreateBody' });
export type MapCreateBody = z.infer<typeof MapCreateBody>;
export const MapParams = z.object({ resourceId: Uuid });
export const MapVersionParams = z.object({
  resourceId: Uuid,
  version: z.coerce.number().int().min(1).max(999_999_999),
});
export const HistoryQuery = z.object(paging(20));
export const BriefingParams = z.object({ id: Uuid.meta({ description: 'the stakeholder id' }) });
export const BriefingQuery = z.object({ interaction_limit: z.coerce.number().int().min(1).max(100).default(10) });
export const VersionSaveBody = z
  .object({ label: Text(200).optional(), resource_id: Uuid.optional() })
  .strict()
  .meta({ id: 'StakeholderMapVersionSaveBody' });
export const VersionListQuery = z.object({ resource_id: Uuid.optional(), ...paging(20) });
/** A saved version by its id (UUID) or by its number on the brain's default map. */
export const VersionIdParams = z.object({
  id: z
    .string()
    .regex(
      /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[1-9]\d{0,8})$/,
      'must be a version id (UUID) or a positive version number',
    ),
});

export const PatchBody = z
  .object({
    patch_mode: z
      .enum(['stakeholder_map_live', 'stakeholder_map_record_version'])
      .default('stakeholder_map_live')
      .meta({
        description:
          'stakeholder_map_live applies ops or dsl to the live graph; stakeholder_map_record_version also records a version of the result',
      }),
    ops: StakeholderOps.optional(),
    dsl: z
      .string()
      .max(200_000)
      .optional()
      .meta({ description: 'the line DSL of docs/stakeholder-maps.md; compiled to the same ops' }),
    label: Text(200).optional(),
    base_revision: z
      .number()
      .int()
      .min(0)
      .optional()
      .meta({ description: 'refuse with 409 unless the live graph is still at this revision' }),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.ops && b.dsl !== undefined)
      ctx.addIssue({ code: 'custom', path: ['dsl'], message: 'send ops or dsl, not both' });
    if (b.patch_mode === 'stakeholder_map_live' && !b.ops && b.dsl === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['ops'],
        message: 'send ops or dsl (or patch_mode stakeholder_map_record_version)',
      });
    if (b.label !== undefined && b.patch_mode !== 'stakeholder_map_record_version')
      ctx.addIssue({
        code: 'custom',
        path: ['label'],
        message: 'label belongs to patch_mode stakeholder_map_record_version',
      });
  })
  .meta({ id: 'StakeholderMapPatchBody' });
export type PatchBody = z.infer<typeof PatchBody>;

export const ExtractBody = z
  .object({
    text: z.string().trim().min(1).max(500_000).optional().meta({ description: 'a meeting transcript or notes' }),
    meeting_id: Uuid.optional().meta({
      description:
        'a meeting of the workspace: its finalized transcript is read (text, when also sent, is used instead and the meeting is the source)',
    }),
    resource_id: Uuid.optional().meta({ description: "the map to feed; default: the brain's default map" }),
    model: z.string().trim().min(1).max(200).optional().meta({ description: 'provider/model; default DEFAULT_MODEL' }),
  })
  .strict()
  .refine((b) => b.text !== undefined || b.meeting_id !== undefined, {
    message: 'send text or meeting_id',
    path: ['text'],
  })
  .meta({ id: 'StakeholderMapExtractBody' });
export type ExtractBody = z.infer<typeof ExtractBody>;

// ---- responses ----

export const MapHead = z
  .object({
    id: z.string(),
    kind: z.literal('stakeholder_map'),
    brain_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    is_default: z.boolean(),
    revision: z.number(),
    latest_version: z.number(),
    counts: Counts,
    summary: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'StakeholderMap' });
export const MapList = z.object({
  stakeholder_maps: z.array(MapHead),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
});
export const VersionMeta = z
  .object({
    id: z.string(),
    resource_id: z.string(),
    version: z.number(),
    label: z.string().nullable(),
    revision: z.number(),
    counts: Counts,
    created_by: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'StakeholderMapVersion' });
/**
 * A live map: what the live graph holds (stakeholders, interactions, edges, risks, summary, with
 * counts and truncation) at the top level, and the map's metadata beside it.
 */
export const LiveMap = GraphView.extend({
  resource_id: z.string(),
  brain_id: z.string(),
  revision: z.number(),
  latest_version: z.number(),
  updated_at: z.string(),
}).meta({ id: 'StakeholderMapLive' });
export const MapRead = z.object({ stakeholder_map: MapHead, live: GraphView });
export const VersionRead = z.object({ version: VersionMeta, graph: GraphView });
export const VersionList = z.object({
  resource_id: z.string(),
  versions: z.array(VersionMeta),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...pageFields,
  latest_version: z.number(),
});
const IdLists = z.object({
  stakeholders: z.array(z.string()),
  interactions: z.array(z.string()),
  edges: z.array(z.string()),
  risks: z.array(z.string()),
});
export const Changes = z.object({ added: IdLists, updated: IdLists, removed: IdLists, summary_changed: z.boolean() });
export type Changes = z.infer<typeof Changes>;
export const PatchResult = z.object({
  stakeholder_map: MapHead,
  revision: z.number(),
  changes: Changes,
  version: VersionMeta.nullable(),
});

const Changed = z.object({
  id: z.string(),
  name: z.string(),
  fields: z.record(z.string(), z.object({ from: z.unknown(), to: z.unknown() })),
});
const Section = <T extends z.ZodType>(el: T) =>
  z.object({ added: z.array(el), removed: z.array(el), changed: z.array(Changed) });
export const Diff = z
  .object({
    resource_id: z.string(),
    from: z.union([z.literal('live'), z.number()]),
    to: z.union([z.literal('live'), z.number()]),
    from_revision: z.number(),
    to_revision: z.number(),
    stakeholders: Section(Stakeholder),
    interactions: Section(Interaction),
    edges: Section(Edge),
    risks: Section(Risk),
    summary: z.object({ changed: z.boolean(), from: z.string(), to: z.string() }),
    counts: z.object({ from: Counts, to: Counts }),
    truncated: z.object({ stakeholders: z.boolean(), interactions: z.boolean() }),
  })
  .meta({ id: 'StakeholderMapDiff' });
export type Diff = z.infer<typeof Diff>;

const Related = z.object({
  stakeholder: z.object({
    id: z.string(),
    name: z.string(),
    role: z.string().nullable(),
    organization: z.string().nullable(),
    influence: Influence.nullable(),
    stance: Stance,
  }),
  relation: z.string().nullable(),
  strength: z.number(),
  inferred: z.boolean().meta({ description: 'no edge: read from the sentiment of shared interactions' }),
  shared_interactions: z.number(),
});
export type Related = z.infer<typeof Related>;
export const DiscussionPoint = z.object({
  text: z.string(),
  reason: z.enum(['risk', 'tension', 'alliance', 'stance', 'follow_up', 'reconnect']),
  refs: z.array(z.string()),
});
export type DiscussionPoint = z.infer<typeof DiscussionPoint>;
export const Briefing = z
  .object({
    resource_id: z.string(),
    brain_id: z.string(),
    revision: z.number(),
    stakeholder: Stakeholder,
    interaction_count: z.number(),
    last_interaction_at: z.string().nullable(),
    recent_interactions: z.array(Interaction),
    alliances: z.array(Related),
    tensions: z.array(Related),
    risks: z.array(Risk),
    suggested_discussion_points: z.array(DiscussionPoint),
  })
  .meta({ id: 'StakeholderBriefing' });
export type Briefing = z.infer<typeof Briefing>;
export const ExtractAccepted = z.object({ job_id: z.string(), resource_id: z.string(), status: z.string() });

/**
 * What the extraction step asks the model for (JSON Schema generated from this, so the request
 * and the check are one definition). Every field is required (nullable where unknown) so that
 * providers' strict structured-output modes accept the schema.
 */
export const ExtractionAnswer = z
  .object({
    stakeholders: z.array(
      z
        .object({
          name: z.string(),
          role: z.string().nullable(),
          organization: z.string().nullable(),
          influence: Influence.nullable(),
          stance: Stance,
        })
        .strict(),
    ),
    interactions: z.array(
      z
        .object({
          summary: z.string(),
          participants: z.array(z.string()),
          sentiment: Polarity,
          topics: z.array(z.string()),
        })
        .strict(),
    ),
    relationships: z.array(
      z
        .object({
          from: z.string(),
          to: z.string(),
          polarity: Polarity,
          relation: z.string().nullable(),
          strength: z.number().nullable(),
        })
        .strict(),
    ),
    risks: z.array(
      z
        .object({
          title: z.string(),
          description: z.string().nullable(),
          severity: Severity,
          stakeholders: z.array(z.string()),
        })
        .strict(),
    ),
    summary: z.string().nullable(),
  })
  .strict();
export type ExtractionAnswer = z.infer<typeof ExtractionAnswer>;
