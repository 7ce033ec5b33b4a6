import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** The development JWT secret: fine on a laptop, refused in production (assertSafeForProduction). */
const DEV_JWT_SECRET = 'cortex-development-secret-change-me';

/**
 * The only place that reads process.env. Every other module receives a Config, so services
 * and tests can be built with explicit values instead of ambient state.
 */
/** A comma-separated setting, read as its trimmed, non-empty items (unset: none). */
const commaList = () =>
  z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    );

export const ConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  SNAKE_PORT: z.coerce.number().int().min(0).max(65535).default(8090),
  MONGODB_URI: z.string().default('mongodb://127.0.0.1:27017/'),
  MONGODB_DB: z.string().default('cortex'),
  // One Redis server, or a Redis Cluster: `redis+cluster://[user:password@]host:port,host:port` (rediss+ for TLS).
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  // A Redis Cluster by its seed nodes (comma-separated host:port; the others are discovered). Wins over REDIS_URL.
  REDIS_CLUSTER_NODES: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^\s*[^,\s]+:\d{1,5}\s*(,\s*[^,\s]+:\d{1,5}\s*)*$/, 'comma-separated host:port')
      .optional(),
  ),
  // Every key starts with it. No braces: a hash tag in the prefix would put every key in one cluster slot.
  REDIS_PREFIX: z
    .string()
    .regex(/^[^{}]*$/, 'must not contain { or }')
    .default('cortex:'),
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('cortex'),
  TEMPORAL_UI_URL: z.string().optional(),
  JWT_SECRET: z.string().min(16).default(DEV_JWT_SECRET),
  // The longest lifetime a JWT may claim (exp - iat, or exp - now without iat); a JWT without exp is refused (docs/roles.md).
  JWT_MAX_LIFETIME_SECONDS: z.coerce.number().int().min(60).default(86_400),
  // When set, a JWT must carry this `iss` / `aud` (unset: not checked).
  JWT_ISSUER: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  JWT_AUDIENCE: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  BOOTSTRAP_API_KEY: z.string().min(16).optional(),
  BOOTSTRAP_WORKSPACE_ID: z.uuid().optional(),
  BOOTSTRAP_BRAIN_ID: z.uuid().optional(),
  // Per credential (an API key may carry its own, set by an admin): 3,000 requests per 10 s, so an
  // integration client running several requests in parallel never meets it; it stops runaway loops.
  RATE_LIMIT_POINTS: z.coerce.number().int().positive().default(3000),
  RATE_LIMIT_DURATION_S: z.coerce.number().int().positive().default(10),
  // Per workspace, all its credentials together, per RATE_LIMIT_DURATION_S: a workspace cannot multiply its
  // rate by minting keys (docs/operations.md, "Fair share"). Unset: four times RATE_LIMIT_POINTS.
  WORKSPACE_RATE_LIMIT_POINTS: z.coerce.number().int().positive().optional(),
  // Failed authentications per client address per minute before that address gets 429s.
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(30),
  // Behind a reverse proxy: trust X-Forwarded-For for the client address (hops to trust; 0 = none).
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DEFAULT_MODEL: z.string().default('local/echo'),
  OPENAI_BASE_URL: z.string().optional(),
  OPENAI_API_KEY: z.string().optional(),
  ANTHROPIC_API_KEY: z.string().optional(),
  ANTHROPIC_BASE_URL: z.string().optional(),
  // Model fallbacks (docs/neurons.md, "Model fallbacks"), for a model that has a fallback after it:
  // the longest Retry-After a run waits for it before the next model answers instead, and how long
  // its call may go without a first token before the next model answers instead.
  MODEL_RETRY_AFTER_PATIENCE_MS: z.coerce.number().int().min(0).default(10_000),
  MODEL_FIRST_TOKEN_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  GLADIA_API_KEY: z.string().optional(),
  // Secrets at rest (OAuth tokens, integration client secrets): "<key id>:<32 bytes base64>"; old keys still readable.
  SECRETS_KEY: z.string().optional(),
  SECRETS_KEYS_OLD: commaList(),
  // Where OAuth providers send the browser back (the API's public address); unset: http://HOST:PORT.
  PUBLIC_BASE_URL: z.url().optional(),
  // Where a connect flow may send the browser afterwards (callbackUrl): origins, comma separated.
  OAUTH_CALLBACK_ALLOW: commaList(),
  // Environment variables an integration may name as its OAuth client secret (client_secret_env), comma
  // separated; empty (the default): none, every client secret is stored sealed (PUT /v1/integrations/:id).
  OAUTH_CLIENT_SECRET_ENVS: commaList(),
  // Outbound HTTP (tool servers, OAuth, file URLs) refuses private and loopback addresses; these
  // hosts (comma separated, host or host:port) are allowed anywhere, for self-hosted tool servers.
  OUTBOUND_ALLOW_HOSTS: commaList(),
  // Signed webhooks (docs/webhooks.md): the first retry of a failed delivery waits this long, doubling to 1 h, for 24 h.
  WEBHOOK_RETRY_INITIAL_MS: z.coerce.number().int().min(10).default(5000),
  // The webhook outbox's follower (docs/webhooks.md, "Delivery guarantees"): how often an idle one
  // looks for recorded events (a change in the same process wakes it at once), and whether this
  // process runs one (`false`: it records events but never fans them out; some process must follow).
  WEBHOOK_OUTBOX_POLL_MS: z.coerce.number().int().min(20).max(60_000).default(500),
  WEBHOOK_OUTBOX_FOLLOW: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  // Prometheus metrics: GET /metrics on the API (with METRICS_TOKEN set, only with "Authorization: Bearer <token>"),
  // and on the worker at WORKER_METRICS_PORT (unset: not served).
  METRICS_TOKEN: z.string().min(16).optional(),
  WORKER_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  // The worker's Temporal SDK metrics (task latencies, slots, polls) in Prometheus format at this
  // host:port (unset: not served). Separate from WORKER_METRICS_PORT: the SDK's core serves them itself.
  TEMPORAL_METRICS_ADDRESS: z
    .string()
    .regex(/^[\w.-]+:\d{1,5}$/, 'host:port')
    .optional(),
  // OpenTelemetry traces (docs/observability.md): the OTLP/HTTP collector base URL (spans go to
  // <endpoint>/v1/traces); unset: no spans are recorded or sent. Protocol: protobuf (default) or JSON.
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
  // Requests through share links, per minute: per token, and per client address.
  SHARE_REQUESTS_PER_MINUTE: z.coerce.number().int().positive().default(120),
  // Server-to-server requests (the internal stimulus route) are signed with this secret; unset: derived from JWT_SECRET.
  INTERNAL_SIGNING_SECRET: z.string().min(32).optional(),
  // Where chat and email providers reach the webhook ingress (the bots host); unset: http://HOST:PORT.
  CHAT_WEBHOOK_BASE_URL: z.url().optional(),
  // Run the schedule reconciler when the API starts (repairs drift between scheduled receptors and Temporal Schedules).
  /** How often the usage reconciler runs (its Temporal Schedule `usage-reconcile`, docs/usage.md). */
  USAGE_RECONCILE_EVERY_S: z.coerce.number().int().min(60).default(600),
  // Retention (docs/operations.md, "Retention"): platform defaults in seconds for how long ended jobs,
  // traces (with their engrams), answered interventions, finished webhook deliveries, ended transcripts
  // and usage ledger rows are kept; 0 keeps them forever. A workspace admin may set its own.
  RETENTION_JOBS_S: z.coerce.number().int().min(0).default(0),
  RETENTION_TRACES_S: z.coerce.number().int().min(0).default(0),
  RETENTION_INTERVENTIONS_S: z.coerce.number().int().min(0).default(0),
  RETENTION_WEBHOOK_DELIVERIES_S: z.coerce.number().int().min(0).default(0),
  RETENTION_TRANSCRIPTS_S: z.coerce.number().int().min(0).default(0),
  RETENTION_USAGE_ROWS_S: z.coerce.number().int().min(0).default(0),
  /** How often the retention sweep runs (its Temporal Schedule `retention-sweep`), and how many rows one batch deletes. */
  RETENTION_EVERY_S: z.coerce.number().int().min(60).default(3600),
  RETENTION_BATCH: z.coerce.number().int().min(1).max(10_000).default(500),
  /**
   * Largest workspace archive an import accepts (the body as sent, gzip-compressed): a larger
   * declared Content-Length is refused at once, a body that grows past it is cut off (413).
   */
  IMPORT_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(4 * 1024 * 1024 * 1024),
  /** The platform operator's bearer token (operator routes: delete and import a workspace); unset: those routes answer 401. */
  OPERATOR_TOKEN: z.string().min(32).optional(),
  RECONCILE_SCHEDULES_ON_START: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  /**
   * The run reconcile at API start (src/reconcile, docs/operations.md "Backup and restore"): open jobs
   * whose workflow is missing or closed, and job workflows whose job is missing or long ended, are
   * put right. At most RECONCILE_RUNS_LIMIT of each are looked at; runs younger than
   * RECONCILE_RUNS_GRACE_S are left to the start sweep and to the runs themselves.
   */
  RECONCILE_RUNS_ON_START: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  RECONCILE_RUNS_LIMIT: z.coerce.number().int().min(1).max(100_000).default(1000),
  RECONCILE_RUNS_GRACE_S: z.coerce.number().int().min(0).default(30),
  /** `true` (default): the API starts an invoke's first model turn itself and the workflow adopts it (src/runs/first-turns.ts). */
  FIRST_TURN_IN_API: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  // Knowledge (docs/knowledge.md). Blob bodies: files under DATA_DIR/blobs, or any S3-compatible store.
  DATA_DIR: z.string().default('.data'),
  BLOB_STORE: z.enum(['fs', 's3']).default('fs'),
  S3_ENDPOINT: z.url().optional(),
  S3_REGION: z.string().default('us-east-1'),
  S3_BUCKET: z.string().optional(),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  S3_FORCE_PATH_STYLE: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  // Largest asset body (upload or URL) and largest body whose text is extracted (bigger ones are stored, not chunked).
  ASSET_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(100 * 1024 * 1024),
  EXTRACT_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024),
  // Chunking, in tokens (cl100k): size and overlap of each chunk.
  CHUNK_SIZE_TOKENS: z.coerce.number().int().min(32).max(8192).default(400),
  CHUNK_OVERLAP_TOKENS: z.coerce.number().int().min(0).max(2048).default(60),
  // Embeddings: `local/wink-sg-100d` (offline word vectors shipped in an npm package) or `openai/<model>`
  // through EMBEDDING_BASE_URL (default OPENAI_BASE_URL) with EMBEDDING_API_KEY (default OPENAI_API_KEY).
  EMBEDDING_MODEL: z.string().default('local/wink-sg-100d'),
  EMBEDDING_BASE_URL: z.string().optional(),
  EMBEDDING_API_KEY: z.string().optional(),
  EMBEDDING_DIMENSION: z.coerce.number().int().positive().optional(),
  EMBED_BATCH_SIZE: z.coerce.number().int().min(1).max(2048).default(64),
  /** Search (docs/search.md): reciprocal rank fusion constant and the default weight of each leg. */
  SEARCH_RRF_K: z.coerce.number().int().min(1).max(1000).default(60),
  SEARCH_LEXICAL_WEIGHT: z.coerce.number().min(0).max(100).default(1),
  SEARCH_VECTOR_WEIGHT: z.coerce.number().min(0).max(100).default(0.5),
  /** How long a search waits for this process's index to apply its workspace's earlier writes (read your writes). */
  SEARCH_FRESH_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(3000),
  /** How long a search waits for the index's first build before answering 503 with Retry-After (docs/search.md). */
  SEARCH_BUILD_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(2000),
  /**
   * Where the search index lives (docs/search.md): `embedded` (default: in each API and worker process,
   * rebuilt from the store at start) or `weaviate` (at WEAVIATE_URL; processes hold no index, a sync keeps it).
   */
  CORTEX_SEARCH: z.enum(['embedded', 'weaviate']).default('embedded'),
  /** Weaviate's REST address (`http://127.0.0.1:8080`); its gRPC address is WEAVIATE_GRPC_ADDRESS (`127.0.0.1:50051`). */
  WEAVIATE_URL: z.url().optional(),
  WEAVIATE_GRPC_ADDRESS: z.string().optional(),
  WEAVIATE_API_KEY: z.string().optional(),
  /**
   * With the index in Weaviate one process at a time writes the feed into it (the syncer, elected by
   * a hold in the store, src/kernel/store/claims.ts): its lease. A syncer that dies is replaced within about
   * this long (docs/search.md, "One syncer per index").
   */
  SEARCH_SYNC_LEASE_MS: z.coerce.number().int().min(1000).max(60_000).default(5000),
  /** The resource feed keeps about this many newest entries, its partitions together (a follower that falls further behind re-syncs from the store). */
  RESOURCE_FEED_MAXLEN: z.coerce.number().int().min(100).max(10_000_000).default(100_000),
  /**
   * The resource feed is this many streams (partitions), a workspace's events all in one of them, so
   * no one Redis key carries every workspace's writes (docs/scaling.md). The same on every process.
   */
  RESOURCE_FEED_PARTITIONS: z.coerce.number().int().min(1).max(1024).default(16),
  // Where the offline word vectors are kept in their compact form (converted once from the npm package).
  // Speech to text (docs/meetings.md). auto: Gladia when GLADIA_API_KEY is set, else the OpenAI-compatible
  // endpoint when STT_BASE_URL is set, else pocketsphinx (offline, Debian's pocketsphinx-en-us model).
  STT_PROVIDER: z.enum(['auto', 'pocketsphinx', 'gladia', 'openai']).default('auto'),
  GLADIA_BASE_URL: z.url().default('https://api.gladia.io'),
  STT_BASE_URL: z.string().optional(),
  STT_API_KEY: z.string().optional(),
  STT_MODEL: z.string().default('whisper-1'),
  POCKETSPHINX_BIN: z.string().default('pocketsphinx_continuous'),
  POCKETSPHINX_MODEL_DIR: z.string().default('/usr/share/pocketsphinx/model/en-us'),
  SOX_BIN: z.string().default('sox'),
  // Live chunks (decoded linear16 bytes) and staged chat attachments: larger ones are refused.
  TRANSCRIPTION_CHUNK_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(320)
    .default(256 * 1024),
  ATTACHMENT_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(25 * 1024 * 1024),
  // Live captions: audio per final caption window.
  LIVE_CAPTION_WINDOW_MS: z.coerce.number().int().min(500).max(60_000).default(4000),
  // Bounded waits and load shedding (docs/operations.md). Every non-streaming request has a deadline;
  // past it the request is answered 503 with Retry-After and its remaining store work is abandoned.
  REQUEST_DEADLINE_MS: z.coerce.number().int().min(100).max(600_000).default(5000),
  // Uploads (multipart bodies) read their body within the request, so they get a longer deadline.
  UPLOAD_DEADLINE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(120_000),
  // Admission control: non-streaming requests running at once, queued beyond that (fair between
  // workspaces), and how long a queued request may wait before it is answered 503.
  ADMISSION_MAX_INFLIGHT: z.coerce.number().int().min(1).max(10_000).default(48),
  ADMISSION_MAX_QUEUE: z.coerce.number().int().min(0).max(100_000).default(256),
  ADMISSION_QUEUE_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  // Per-workspace shares of the shared capacities (docs/operations.md, "Fair share"): a workspace may hold at most
  // this percent of the non-streaming requests running at once on an API process (beyond it its requests queue,
  // round robin with the other workspaces'), and this percent of the admission queue.
  ADMISSION_WORKSPACE_SHARE_PERCENT: z.coerce.number().int().min(1).max(100).default(50),
  // The same while another workspace has sent a request to this API process within the last minute: at most this
  // many of one workspace's requests run at once (the rest wait in its queue), so one workspace's burst of starts is
  // a short line in the store the other workspaces' requests wait behind, not a long one.
  ADMISSION_WORKSPACE_SHARED_SLOTS: z.coerce.number().int().min(1).max(10_000).default(16),
  // MCP sessions one API process keeps at most (a new one past it: 503), and the percent one workspace may hold (429).
  MCP_MAX_SESSIONS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  MCP_WORKSPACE_SHARE_PERCENT: z.coerce.number().int().min(1).max(100).default(25),
  // SSE streams (job, trace, meeting, resource-event and share streams) one API process keeps open at most
  // (a new one past it: 503), and the percent one workspace may hold (429).
  SSE_MAX_STREAMS: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  SSE_WORKSPACE_SHARE_PERCENT: z.coerce.number().int().min(1).max(100).default(25),
  // Runs (neuron invokes, pathway runs, receptor fires, share-link runs) a workspace may have started and not ended
  // at once while no other workspace has started a run lately, counted platform-wide from the jobs store; a start
  // past it waits in the workspace's queue (202, current_step "queued") and starts as the workspace's runs end.
  WORKSPACE_MAX_ACTIVE_RUNS: z.coerce.number().int().min(1).max(1_000_000).default(50),
  // The same while other workspaces run too (one started a run within the last minute): the workspace's share of
  // the platform's runs. Past it starts wait in the queue, so one tenant's flood does not slow the others.
  WORKSPACE_RUN_SHARE: z.coerce.number().int().min(1).max(1_000_000).default(10),
  // Runs a workspace may have waiting in its queue; a start past it is answered 429 with Retry-After and nothing
  // is stored.
  WORKSPACE_MAX_QUEUED_RUNS: z.coerce.number().int().min(0).max(1_000_000).default(1000),
  // The API's V8 heap grows by at most this percent over what survived its last full collection
  // (V8's own factor is 1.1–4× and chosen by allocation rate: under streaming load it let a heap
  // of 80 MB live grow to 280 MB). 0 leaves V8's default (docs/operations.md, "Memory").
  API_HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(300).default(25),
  // A Redis command not answered within this is failed (the blocking stream readers are exempt).
  REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(2000),
  // Dependency breakers: each of MongoDB, Redis and Temporal is probed this often; a probe not
  // answered within the timeout opens its breaker, and requests that need it answer 503 at once.
  BREAKER_PROBE_INTERVAL_MS: z.coerce.number().int().min(50).max(60_000).default(500),
  BREAKER_PROBE_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  // Background work (ingest: chunking, describing, embedding) running at once per worker process.
  BACKGROUND_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
  // Idempotency-Key: how long a key's outcome is kept (a repeat within it returns the first response).
  IDEMPOTENCY_TTL_S: z.coerce
    .number()
    .int()
    .min(60)
    .max(30 * 86_400)
    .default(86_400),
  EMBEDDINGS_CACHE_DIR: z
    .string()
    .default(path.join(process.env.CORTEX_CACHE ?? path.join(os.homedir(), '.cache', 'cortex'), 'embeddings')),
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

/**
 * The value of an environment variable that a tenant's setting names (an integration's
 * client_secret_env), read only when the operator lists it in OAUTH_CLIENT_SECRET_ENVS: the one
 * place a name that came from a tenant reaches the environment (null for any other name).
 */
export function allowedClientSecretEnv(config: Config, name: string): string | null {
  if (!config.OAUTH_CLIENT_SECRET_ENVS.includes(name) || !Object.hasOwn(process.env, name)) return null;
  return process.env[name] ?? null;
}

/**
 * In production the API and the worker refuse to start with the development JWT secret or one
 * shorter than 32 bytes: anyone who knows the secret can mint an admin token. Returns the one
 * line to print (null when safe).
 */
export function productionProblem(config: Config): string | null {
  if (config.NODE_ENV !== 'production') return null;
  if (config.JWT_SECRET === DEV_JWT_SECRET)
    return 'JWT_SECRET is the development default: set JWT_SECRET to a random value of at least 32 bytes (for example: openssl rand -base64 48)';
  if (Buffer.byteLength(config.JWT_SECRET, 'utf8') < 32)
    return `JWT_SECRET is ${Buffer.byteLength(config.JWT_SECRET, 'utf8')} bytes: set it to a random value of at least 32 bytes (for example: openssl rand -base64 48)`;
  if (!config.SECRETS_KEY)
    return 'SECRETS_KEY is not set: set it to "<key id>:<32 random bytes, base64>" (for example: echo "k1:$(openssl rand -base64 32)")';
  return null;
}

/**
 * The platform's release version (semantic versioning, CHANGELOG.md), read once from the
 * repository's package.json: /health, the OpenAPI document and telemetry name it. The file is
 * found by walking up from this module, so the TypeScript sources (src/) and the compiled
 * services (dist/src/) both find it.
 */
export const VERSION: string = readPackageVersion();

function readPackageVersion(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'cortex' && pkg.version) return pkg.version;
    }
    if (path.dirname(dir) === dir) throw new Error('package.json of cortex not found above src/kernel/config.ts');
  }
}
