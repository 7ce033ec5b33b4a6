import { z } from 'zod';

/** Health, session, API keys and brains: the platform's own small resources. */
export const Health = z
  .object({
    status: z.enum(['healthy', 'unhealthy']),
    version: z.string(),
    components: z.record(z.string(), z.enum(['up', 'down'])).optional(),
    workspace: z.object({ id: z.string(), slug: z.string(), name: z.string() }).optional(),
    search_index: z
      .object({
        state: z.enum(['building', 'ready']).meta({
          description:
            'building until the first snapshot of the store is in; searches then wait at most SEARCH_BUILD_WAIT_MS and answer 503 with Retry-After',
        }),
        resyncing: z.boolean().meta({
          description:
            'a re-sync from the store runs (the feed lost entries or went backwards); the previous index keeps answering',
        }),
        syncer: z.boolean().meta({
          description:
            'this process writes the feed into the index: always with the embedded index (each process keeps its own); with Weaviate only the one elected syncer, the others read its stored position',
        }),
        applied: z.string().meta({ description: 'the last resource-feed entry applied' }),
        lag: z
          .number()
          .int()
          .nullable()
          .meta({ description: "feed entries written after it, at the follower's last look" }),
        entries: z.number().int(),
        builds: z.number().int(),
        batches: z.number().int(),
        events: z.number().int(),
        last_build: z
          .object({
            reason: z.string(),
            started_at: z.string(),
            ms: z.number().int().nullable(),
            resources: z.number().int(),
          })
          .nullable(),
      })
      .optional()
      .meta({
        description: "With a credential: this API process's search index (docs/search.md); it never makes health fail",
      }),
  })
  .meta({ id: 'Health' });

export const ApiKeyCreateBody = z
  .object({
    name: z.string().trim().min(1).max(100),
    roles: z
      .array(z.enum(['workspace_admin', 'core_admin', 'member']))
      .max(3)
      .optional(),
  })
  .meta({ id: 'ApiKeyCreateBody' });
const RateLimitShape = z.object({
  points: z.number().int().min(1).max(1_000_000).meta({ description: 'requests allowed per window' }),
  duration_s: z.number().int().min(1).max(3600).meta({ description: 'window length in seconds' }),
});
export const ApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    roles: z.array(z.string()),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
    created_by: z
      .string()
      .nullable()
      .meta({ description: 'the user the key acts for (null: created by the platform)' }),
    rate_limit: RateLimitShape.nullable().meta({ description: "the key's own limit (null: the platform default)" }),
  })
  .meta({ id: 'ApiKey' });
export const ApiKeyPatchBody = z.object({ rate_limit: RateLimitShape.nullable() }).meta({ id: 'ApiKeyPatchBody' });
export const WorkspacePatchBody = z
  .object({
    slug: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .meta({ description: 'unique; lowercase letters, digits and dashes; not a UUID' }),
    name: z.string().trim().min(1).max(200).optional(),
  })
  .refine((b) => b.slug !== undefined || b.name !== undefined, 'send slug or name')
  .meta({ id: 'WorkspacePatchBody' });
export const Workspace = z.object({ id: z.string(), slug: z.string(), name: z.string() }).meta({ id: 'Workspace' });
export const ApiKeyCreated = ApiKey.extend({ key: z.string().meta({ description: 'shown once; store it now' }) });

export const BrainCreateBody = z.object({ name: z.string().trim().min(1).max(200) }).meta({ id: 'BrainCreateBody' });
export const Brain = z
  .object({ id: z.string(), workspace_id: z.string(), name: z.string(), created_at: z.string() })
  .meta({ id: 'Brain' });

export const SessionContext = z
  .object({
    workspace: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
    brain: Brain.nullable(),
    brains: z.array(Brain),
    user_id: z.string().nullable(),
    api_key_id: z.string().nullable(),
    roles: z.array(z.string()),
    credential: z.string(),
    temporal: z
      .object({
        namespace: z.string(),
        ui_url: z.string().nullable().meta({
          description:
            "the Temporal UI (TEMPORAL_UI_URL; null when unset): a job's workflow is <ui_url>/namespaces/<namespace>/workflows/<job_id>",
        }),
      })
      .meta({ description: "where a job's workflow is seen (its workflow id is the job id)" }),
  })
  .meta({ id: 'SessionContext' });
