import { z } from 'zod';

/** Health, session, API keys and brains: the platform's own small resources. */
export const Health = z.object({
  status: z.enum(['healthy', 'unhealthy']), version: z.string(),
  components: z.record(z.string(), z.enum(['up', 'down'])).optional(),
  workspace: z.object({ id: z.string(), slug: z.string(), name: z.string() }).optional(),
}).meta({ id: 'Health' });

export const ApiKeyCreateBody = z.object({
  name: z.string().trim().min(1).max(100),
  roles: z.array(z.enum(['workspace_admin', 'core_admin', 'member'])).max(3).optional(),
}).meta({ id: 'ApiKeyCreateBody' });
export const ApiKey = z.object({
  id: z.string(), name: z.string(), prefix: z.string(), roles: z.array(z.string()),
  created_at: z.string(), last_used_at: z.string().nullable(),
}).meta({ id: 'ApiKey' });
export const ApiKeyCreated = ApiKey.extend({ key: z.string().meta({ description: 'shown once; store it now' }) });

export const BrainCreateBody = z.object({ name: z.string().trim().min(1).max(200) }).meta({ id: 'BrainCreateBody' });
export const Brain = z.object({ id: z.string(), workspace_id: z.string(), name: z.string(), created_at: z.string() }).meta({ id: 'Brain' });

export const SessionContext = z.object({
  workspace: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
  brain: Brain.nullable(), brains: z.array(Brain),
  user_id: z.string().nullable(), api_key_id: z.string().nullable(), roles: z.array(z.string()), credential: z.string(),
}).meta({ id: 'SessionContext' });
