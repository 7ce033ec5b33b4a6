import { z } from 'zod';
import { IsoDate, Uuid } from '../kernel/schemas.js';

const Color = z.string().regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'must be a hex colour like #1f6feb');
/** https only (the page is same-origin; a logo from http would be mixed content), no credentials in the URL. */
const LogoUrl = z
  .url({ protocol: /^https$/, message: 'must be an https URL' })
  .max(2000)
  .refine((u) => !new URL(u).username && !new URL(u).password, 'must not carry credentials');

const Customization = z
  .object({
    title: z.string().max(120).optional(),
    greeting: z.string().max(1000).optional(),
    colors: z
      .object({ primary: Color.optional(), background: Color.optional(), text: Color.optional() })
      .strict()
      .optional(),
    logo_url: LogoUrl.optional(),
  })
  .strict();

const Budget = z
  .object({
    max_requests: z
      .number()
      .int()
      .positive()
      .nullable()
      .optional()
      .meta({ description: 'executes the link may start in all (null: no limit)' }),
    max_tokens: z
      .number()
      .int()
      .positive()
      .nullable()
      .optional()
      .meta({ description: "model tokens the link's runs may use in all (null: no limit)" }),
  })
  .strict();

export const ShareCreateBody = z
  .object({
    allow_files: z.boolean().default(false),
    customization: Customization.default({}),
    expires_at: IsoDate.nullable().optional(),
    budget: Budget.optional(),
  })
  .strict()
  .meta({ id: 'ShareCreateBody' });
export type ShareCreateBody = z.infer<typeof ShareCreateBody>;
/** Rotate may change the settings in the same call (omitted: kept). */
export const ShareRotateBody = ShareCreateBody.partial().meta({ id: 'ShareRotateBody' });
export type ShareRotateBody = z.infer<typeof ShareRotateBody>;

export const ShareView = z
  .object({
    id: z.string(),
    receptor_id: z.string(),
    receptor_slug: z.string(),
    token_prefix: z.string(),
    token: z.string().optional().meta({ description: 'the whole token: only when created or rotated' }),
    share_url: z
      .string()
      .optional()
      .meta({ description: 'the share page with the token: only when created or rotated' }),
    allow_files: z.boolean(),
    customization: Customization,
    expires_at: z.string().nullable(),
    budget: z.object({
      max_requests: z.number().nullable(),
      max_tokens: z.number().nullable(),
      used_requests: z.number(),
      used_tokens: z.number(),
    }),
    created_at: z.string(),
    rotated_at: z.string().nullable(),
  })
  .meta({ id: 'ShareToken' });

/** Share credentials in the query: `t`, scoped by workspace + receptor (slug or id) or receptor_id. */
export const ShareQuery = z.object({
  t: z.string().min(1).max(200).optional(),
  workspace: z.string().max(200).optional(),
  receptor: z.string().max(200).optional(),
  receptor_id: Uuid.optional(),
  after: z.string().optional(),
});
export const PublicSlugParams = z.object({ workspace: z.string().min(1).max(200), slug: z.string().min(1).max(200) });
export const PublicIdParams = z.object({ receptor_id: Uuid });
export const PublicExecuteBody = z
  .object({
    share_token: z.string().min(1).max(200).optional(),
    message: z.string().min(1).max(100_000),
    stream: z.boolean().default(false),
    trace_id: Uuid.optional().meta({ description: "continue this conversation (a trace of this link's receptor)" }),
    asset_ids: z.array(Uuid).max(10).optional().meta({ description: 'files uploaded through this link to attach' }),
  })
  .strict()
  .meta({ id: 'PublicExecuteBody' });
export type PublicExecuteBody = z.infer<typeof PublicExecuteBody>;
export const PublicReceptor = z.object({
  receptor: z.object({
    id: z.string(),
    slug: z.string(),
    target_type: z.string(),
    is_active: z.boolean(),
    workspace: z.string(),
  }),
  allow_files: z.boolean(),
  customization: Customization,
});
export const PublicJobRef = z.object({
  job_id: z.string(),
  status: z.literal('pending'),
  trace_id: z.string().nullable(),
  receptor_id: z.string(),
  stream_url: z.string(),
});
export const PublicUpload = z.object({
  asset: z.object({ id: z.string(), name: z.string(), content_type: z.string(), size: z.number() }),
});
