import { z } from 'zod';

/**
 * The snake service's environment, parsed once. Nothing else in snake/ reads process.env, so the app,
 * the agent client and the tests are all built from an explicit SnakeConfig.
 */
const SnakeEnv = z.object({
  CORTEX_API_URL: z.url().default('http://127.0.0.1:8080').meta({ description: 'platform public API base URL' }),
  CORTEX_API_KEY: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'server-held platform key; never sent to the browser' }),
  CORTEX_BRAIN_ID: z.string().min(1).optional().meta({ description: 'X-Brain-Id header value for platform calls' }),
  SNAKE_NEURON: z.string().min(1).default('snake-decider').meta({ description: 'decision neuron id or name' }),
  SNAKE_PATHWAY: z.string().min(1).max(200).optional().meta({
    description: 'decision pathway id or name: when set, every tick runs this pathway instead of invoking SNAKE_NEURON',
  }),
  SNAKE_HOST: z.string().min(1).default('127.0.0.1'),
  SNAKE_PORT: z.coerce.number().int().min(0).max(65535).default(8090),
  SNAKE_AGENT_TIMEOUT_MS: z.coerce.number().int().min(50).max(120_000).default(8000),
  SNAKE_POLL_MS: z.coerce.number().int().min(10).max(5000).default(150),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** Camel-cased config the code uses; built from SnakeEnv so env names live in one place. */
export const SnakeConfig = SnakeEnv.transform((e) => ({
  apiUrl: e.CORTEX_API_URL.replace(/\/+$/, ''),
  apiKey: e.CORTEX_API_KEY,
  brainId: e.CORTEX_BRAIN_ID,
  neuron: e.SNAKE_NEURON,
  pathway: e.SNAKE_PATHWAY,
  host: e.SNAKE_HOST,
  port: e.SNAKE_PORT,
  agentTimeoutMs: e.SNAKE_AGENT_TIMEOUT_MS,
  pollMs: e.SNAKE_POLL_MS,
  logLevel: e.LOG_LEVEL,
}));
export type SnakeConfig = z.output<typeof SnakeConfig>;

/**
 * Parses the environment (or a test's explicit map); a bad value stops start-up with a readable list.
 * The error names variables, never their values, so a malformed key cannot end up in a log.
 */
export function loadSnakeConfig(env: Record<string, string | undefined> = process.env): SnakeConfig {
  const parsed = SnakeConfig.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
    throw new Error(`Invalid snake configuration:\n${lines}`);
  }
  return parsed.data;
}
