import type { z } from 'zod';
import type { ApiKeyDoc, BrainDoc, WorkspaceDoc, ApiKey, Brain } from '../../src/platform/index.js';

/** Wire shape of an API key (never the secret or its hash). */
export const presentApiKey = (k: ApiKeyDoc): z.input<typeof ApiKey> => ({
  id: k._id,
  name: k.name,
  prefix: k.prefix,
  roles: k.roles,
  created_at: k.createdAt.toISOString(),
  last_used_at: k.lastUsedAt?.toISOString() ?? null,
  created_by: k.createdBy ?? null,
  rate_limit: k.rateLimit ? { points: k.rateLimit.points, duration_s: k.rateLimit.durationS } : null,
});
export const presentBrain = (b: BrainDoc): z.input<typeof Brain> => ({
  id: b._id,
  workspace_id: b.workspaceId,
  name: b.name,
  created_at: b.createdAt.toISOString(),
});
export const presentWorkspace = (w: WorkspaceDoc) => ({ id: w._id, slug: w.slug, name: w.name });
