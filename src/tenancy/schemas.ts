import { z } from 'zod';
import { RETENTION_KINDS } from './model.js';

const Seconds = z
  .number()
  .int()
  .min(0)
  .max(100 * 365 * 86_400);
const windowShape = Object.fromEntries(RETENTION_KINDS.map((k) => [k, Seconds])) as Record<
  (typeof RETENTION_KINDS)[number],
  typeof Seconds
>;

const RetentionWindowsSchema = z.object(windowShape).meta({ id: 'RetentionWindows' });
export const RetentionSettings = z
  .object({
    effective: RetentionWindowsSchema,
    own: RetentionWindowsSchema.partial(),
  })
  .meta({
    id: 'RetentionSettings',
    description: "Seconds each kind is kept (0: forever); own: the workspace's, the rest platform defaults",
  });
export const RetentionPatchBody = z
  .strictObject(
    Object.fromEntries(RETENTION_KINDS.map((k) => [k, Seconds.nullable().optional()])) as Record<
      (typeof RETENTION_KINDS)[number],
      z.ZodOptional<z.ZodNullable<typeof Seconds>>
    >,
  )
  .meta({ id: 'RetentionPatchBody', description: 'Seconds per kind; null returns the kind to the platform default' });
export const RetentionRun = z
  .object({ deleted: z.record(z.string(), z.number().int()), more: z.boolean() })
  .meta({ id: 'RetentionRun' });
export const WorkspaceStorage = z
  .object({
    workspace_id: z.string(),
    rows: z.number().int(),
    store_bytes: z.number().int(),
    blob_bytes: z.number().int(),
    collections: z.record(z.string(), z.object({ rows: z.number().int(), bytes: z.number().int() })),
  })
  .meta({
    id: 'WorkspaceStorage',
    description:
      'Rows are counted in the store; store bytes are estimated (each collection: the mean size of a sample of ' +
      'its rows times their count); blob bytes are the sizes the rows record, summed in the store.',
  });
export const WorkspaceDeletion = z
  .object({
    id: z.uuid(),
    status: z.enum(['running', 'completed', 'failed']),
    progress: z.number().int(),
    current_step: z.string(),
    deleted: z.record(z.string(), z.number().int()),
    error: z.string().nullable(),
    started_at: z.iso.datetime(),
    finished_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'WorkspaceDeletion' });
export const WorkspaceIdParams = z.object({ workspaceId: z.uuid() });
export const WorkspaceImported = z
  .object({ workspace_id: z.string(), rows: z.record(z.string(), z.number().int()), blobs: z.number().int() })
  .meta({ id: 'WorkspaceImported' });
