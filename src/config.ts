import { z } from 'zod';

/**
 * The only place that reads process.env. Every other module receives a Config, so services
 * and tests can be built with explicit values instead of ambient state.
 */
export const ConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  SNAKE_PORT: z.coerce.number().int().min(0).max(65535).default(8090),
  MONGODB_URI: z.string().default('mongodb://127.0.0.1:27017/'),
  MONGODB_DB: z.string().default('cortex'),
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  REDIS_PREFIX: z.string().default('cortex:'),
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('cortex'),
  TEMPORAL_UI_URL: z.string().optional(),
  JWT_SECRET: z.string().min(16).default('cortex-development-secret-change-me'),
  BOOTSTRAP_API_KEY: z.string().min(16).optional(),
  BOOTSTRAP_WORKSPACE_ID: z.uuid().optional(),
  BOOTSTRAP_BRAIN_ID: z.uuid().optional(),
  // Per credential: bursts up to 300 requests, 30 per second sustained (a polling client stays well below).
  RATE_LIMIT_POINTS: z.coerce.number().int().positive().default(300),
  RATE_LIMIT_DURATION_S: z.coerce.number().int().positive().default(10),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DEFAULT_MODEL: z.string().default('local/echo'),
  OPENAI_BASE_URL: z.string().optional(),
  OPENAI_API_KEY: z.string().optional(),
  ANTHROPIC_API_KEY: z.string().optional(),
  ANTHROPIC_BASE_URL: z.string().optional(),
  GLADIA_API_KEY: z.string().optional(),
});
export type Config = z.infer<typeof ConfigSchema>;

/** Parses the environment once; a bad value stops start-up with a readable message. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
    throw new Error(`Invalid configuration:\n${lines}`);
  }
  return { ...parsed.data, ...overrides };
}

/** The platform version reported by /health (kept in step with package.json by hand). */
export const VERSION = '0.1.0';
