import { z } from 'zod';
import type { Config } from '../kernel/config.js';
import { notFound, validationError } from '../kernel/errors.js';
import { JsonObject } from '../kernel/schemas.js';
import type { Scope } from '../kernel/scope.js';
import type { StreamEntry, Streams } from '../kernel/streams.js';
import type { InterventionService } from '../interventions/index.js';
import type { JobService } from '../jobs/index.js';
import { toNeuronSlug, type NeuronService } from '../neurons/index.js';
import type { PathwayRunService, PathwayService } from '../pathways/index.js';
import type { RunService } from '../runs/index.js';

/** At most this many tools are listed (neurons first, then pathways). */
const MAX_MCP_TOOLS = 500;
/** Progress notifications for streamed tokens are sent at most this often. */
const TOKEN_PROGRESS_EVERY_MS = 250;
/** How long one blocking read of a job stream waits before the job record is checked. */
const READ_BLOCK_MS = 5_000;
const PAGE = 200;

/** A JSON Schema object as MCP's `inputSchema` takes it (its root is always an object schema). */
interface ToolInputSchema {
  type: 'object';
  properties?: Record<string, object>;
  required?: string[];
  [key: string]: unknown;
}

/** What a tool runs: a neuron, or a pathway (whose arguments are its input when it declares an input schema). */
type ToolTarget =
  | { kind: 'neuron'; id: string; name: string; brainId: string }
  | { kind: 'pathway'; id: string; name: string; brainId: string; argumentsAreInput: boolean };

/** One tool of the catalog: the MCP definition and the resource behind it. */
export interface McpToolDef {
  name: string;
  title: string;
  description: string;
  inputSchema: ToolInputSchema;
  target: ToolTarget;
}

/** A progress notification's payload (MCP `notifications/progress` without its token). */
interface ToolProgress {
  progress: number;
  message?: string;
}

/** How a tool call ended. */
export type ToolOutcome =
  | { status: 'completed'; jobId: string; traceId: string | null; result: unknown; text: string }
  | { status: 'failed'; jobId: string; traceId: string | null; error: 'failed' | 'cancelled'; message: string }
  | {
      status: 'waiting';
      jobId: string;
      traceId: string | null;
      waitingFor: Record<string, unknown> | null;
      intervention: { id: string; title: string; options: string[]; pageUrl: string | null; apiUrl: string } | null;
    }
  | { status: 'aborted'; jobId: string; traceId: string | null };

interface CallOptions {
  /** Aborted when the MCP client cancels the request: the job is cancelled. */
  signal: AbortSignal;
  /** Called while the job runs (only when the client asked for progress). */
  onProgress?: (p: ToolProgress) => Promise<void>;
  /**
   * Whether an abort is the client's cancel (the job is cancelled) rather than the session closing
   * (the job, durable, goes on); default: always a cancel.
   */
  isCancel?: () => boolean;
  /** Where the approval page of a waiting job is served (PUBLIC_BASE_URL, else the request's origin). */
  baseUrl: string;
}

/** What the tool catalog is built from: the services a route would call. */
export interface McpToolDeps {
  neurons: NeuronService;
  pathways: PathwayService;
  runs: Pick<RunService, 'invoke'>;
  pathwayRuns: Pick<PathwayRunService, 'execute'>;
  jobs: JobService;
  interventions: Pick<InterventionService, 'get'>;
  streams: Streams;
  config: Config;
}

const NeuronArgs = z.object({ message: z.string().min(1).max(200_000), data: JsonObject.optional() }).strict();
const PathwayArgs = z.object({ input: JsonObject.optional() }).strict();

const NEURON_SCHEMA: ToolInputSchema = {
  type: 'object',
  properties: {
    message: { type: 'string', description: 'The message to the neuron (the human turn).' },
    data: { type: 'object', description: 'Structured data sent with the message.', additionalProperties: true },
  },
  required: ['message'],
  additionalProperties: false,
};
const FREE_PATHWAY_SCHEMA: ToolInputSchema = {
  type: 'object',
  properties: {
    input: {
      type: 'object',
      description: "The run's input (what the pathway's expressions read as `input`).",
      additionalProperties: true,
    },
  },
  additionalProperties: false,
};

/** The input schema a pathway's start node declares (`data.input_schema`, an object schema), if any. */
function pathwayInputSchema(graph: unknown): ToolInputSchema | null {
  const nodes = (graph as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) return null;
  const start = nodes.find((n): n is { data?: unknown } => (n as { type?: unknown } | null)?.type === 'start');
  const schema = (start?.data as { input_schema?: unknown } | undefined)?.input_schema;
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return null;
  const s = schema as Record<string, unknown>;
  if (s.type !== undefined && s.type !== 'object') return null;
  return { ...s, type: 'object' };
}

/** The text a finished job's result reads as: a neuron's reply, a pathway's output. */
function resultText(result: unknown): string {
  const r = result as { text?: unknown; output?: unknown } | null;
  if (r && typeof r.text === 'string') return r.text;
  if (r && 'output' in r) return typeof r.output === 'string' ? r.output : JSON.stringify(r.output ?? null);
  return JSON.stringify(result ?? null);
}

/** What the tools are built from (the catalog keeps no state of its own). */
interface McpToolsContext {
  d: McpToolDeps;
}

/** Every active neuron visible in the scope, by name. */
async function neuronTools({ d }: McpToolsContext, scope: Scope): Promise<McpToolDef[]> {
  const out: McpToolDef[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await d.neurons.list(scope, {
      limit: PAGE,
      offset: 0,
      cursor,
      sortBy: 'name',
      sortDirection: 'asc',
    });
    for (const v of page.items) {
      if (!v.doc.isActive || v.doc.deletedAt) continue;
      const description = v.doc.description?.trim();
      out.push({
        name: v.doc.name,
        title: v.doc.name,
        description: `${description || `The neuron "${v.doc.name}".`} Runs the neuron with the message and answers its reply.`,
        inputSchema: NEURON_SCHEMA,
        target: { kind: 'neuron', id: v.doc._id, name: v.doc.name, brainId: v.doc.brainId },
      });
    }
    if (!page.hasMore || !page.nextCursor || out.length >= MAX_MCP_TOOLS) return out;
    cursor = page.nextCursor;
  }
}

/** Every active pathway of the scope's brain (pathways live in a brain: none without X-Brain-Id). */
async function pathwayTools({ d }: McpToolsContext, scope: Scope): Promise<McpToolDef[]> {
  if (!scope.brainId) return [];
  const out: McpToolDef[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await d.pathways.list(scope, {
      limit: PAGE,
      offset: 0,
      cursor,
      sortBy: 'name',
      sortDirection: 'asc',
    });
    for (const p of page.items) {
      if (!p.isActive) continue;
      const declared = pathwayInputSchema(p.graph);
      const description = p.description?.trim();
      out.push({
        // Its slug, as execute and the OpenAI-compatible `pathway:<slug>` name it (MCP's name
        // rules allow a slug's characters); a name with no letter or digit has none.
        name: p.slug || toNeuronSlug(p.name) || `pathway_${p._id.slice(0, 8)}`,
        title: p.name,
        description: `${description || `The pathway "${p.name}".`} Runs the pathway and answers its output.`,
        inputSchema: declared ?? FREE_PATHWAY_SCHEMA,
        target: { kind: 'pathway', id: p._id, name: p.name, brainId: p.brainId, argumentsAreInput: !!declared },
      });
    }
    if (!page.hasMore || !page.nextCursor || out.length >= MAX_MCP_TOOLS) return out;
    cursor = page.nextCursor;
  }
}

/** The catalog: unique names (a repeated name gets its resource id's first 8 characters, then the whole id). */
async function list(ctx: McpToolsContext, scope: Scope): Promise<McpToolDef[]> {
  const [neurons, pathways] = await Promise.all([neuronTools(ctx, scope), pathwayTools(ctx, scope)]);
  const taken = new Set<string>();
  const out: McpToolDef[] = [];
  for (const t of [...neurons, ...pathways].slice(0, MAX_MCP_TOOLS)) {
    let name = t.name;
    if (taken.has(name)) name = `${t.name.slice(0, 100)}-${t.target.id.slice(0, 8)}`;
    if (taken.has(name)) name = `${t.name.slice(0, 90)}-${t.target.id}`;
    taken.add(name);
    out.push({ ...t, name });
  }
  return out;
}

/** Starts the job a tool runs: the same service calls as POST /v1/neurons/:id/invoke and /v1/pathways/:id/execute. */
async function start({ d }: McpToolsContext, scope: Scope, t: ToolTarget, args: Record<string, unknown>) {
  if (t.kind === 'neuron') {
    const parsed = NeuronArgs.safeParse(args);
    if (!parsed.success) throw validationError(`arguments: ${z.prettifyError(parsed.error)}`);
    const r = await d.runs.invoke(scope, t.id, { ...parsed.data, stream: false });
    return { jobId: r.job._id, traceId: r.traceId };
  }
  let input: Record<string, unknown>;
  if (t.argumentsAreInput) input = args;
  else {
    const parsed = PathwayArgs.safeParse(args);
    if (!parsed.success) throw validationError(`arguments: ${z.prettifyError(parsed.error)}`);
    input = parsed.data.input ?? {};
  }
  const job = await d.pathwayRuns.execute({ ...scope, brainId: t.brainId }, t.id, { input });
  return { jobId: job._id, traceId: job.traceId ?? null };
}

/** What a waiting job waits for, with the approval page of its intervention's link delivery. */
async function waiting(
  { d }: McpToolsContext,
  scope: Scope,
  jobId: string,
  traceId: string | null,
  baseUrl: string,
): Promise<ToolOutcome> {
  const job = await d.jobs.get(scope, jobId);
  const waitingFor = job.waitingFor ?? null;
  const interventionId = typeof waitingFor?.interventionId === 'string' ? waitingFor.interventionId : null;
  const doc = interventionId ? await d.interventions.get(scope, interventionId).catch(() => null) : null;
  const link = doc?.deliveries.find((x) => x.channel === 'link');
  const base = (d.config.PUBLIC_BASE_URL || baseUrl).replace(/\/+$/, '');
  return {
    status: 'waiting',
    jobId,
    traceId,
    waitingFor,
    intervention: doc
      ? {
          id: doc._id,
          title: doc.title,
          options: doc.options,
          pageUrl: link ? `${base}/approve/${link.token}` : null,
          apiUrl: `${base}/v1/interventions/${doc._id}/respond`,
        }
      : null,
  };
}

/** A progress message for a job stream entry (tokens are throttled), or null for none. */
function progressReporter(onProgress: CallOptions['onProgress']) {
  let n = 0;
  let chars = 0;
  let lastTokenAt = 0;
  const send = (message: string) => onProgress?.({ progress: ++n, message }).catch(() => undefined);
  return async (e: StreamEntry) => {
    if (!onProgress) return;
    const x = e.data;
    switch (x.type) {
      case 'status':
        return send(`job ${String(x.status)}`);
      case 'token': {
        chars += typeof x.text === 'string' ? x.text.length : 0;
        const now = Date.now();
        if (now - lastTokenAt < TOKEN_PROGRESS_EVERY_MS) return;
        lastTokenAt = now;
        return send(`replying (${chars} characters so far)`);
      }
      case 'reset':
        chars = 0;
        return;
      case 'progress':
        return send(`model turn ${Number(x.turn) + 1} finished`);
      case 'tool':
        return send(`tool ${String(x.name)} ran`);
      case 'delegate':
        return send(`delegated to ${String(x.neuron)}`);
      case 'node_start':
        return send(`node ${String(x.node)} (${String(x.node_type)}) started`);
      case 'node_finish':
        return send(`node ${String(x.node)} (${String(x.node_type)}) finished`);
      default:
        return;
    }
  };
}

/**
 * Follows the job stream from its start until its terminal entry or a wait for a human
 * (`Streams.follow`: the stream is replayed first, then read with a blocking read on a connection
 * of its own that the abort closes at once; a failed read is retried on a fresh one). Between
 * blocking reads, the job record is checked as well.
 */
async function follow(
  ctx: McpToolsContext,
  scope: Scope,
  jobId: string,
  traceId: string | null,
  opts: CallOptions,
): Promise<ToolOutcome> {
  const { d } = ctx;
  const report = progressReporter(opts.onProgress);
  const waits = (status: string) => status === 'waiting' || status === 'paused';
  let ended: { status: 'completed' | 'failed'; result?: unknown; failedReason?: string | null } | undefined;
  const end = await d.streams.follow<ToolOutcome>(d.jobs.streamKey(jobId), {
    endOnTerminal: true,
    blockMs: READ_BLOCK_MS,
    signal: opts.signal,
    retryReads: true,
    onEntry: async (e) => {
      if (waits(String(e.data.type)) && waits((await d.jobs.get(scope, jobId)).status))
        return { stop: await waiting(ctx, scope, jobId, traceId, opts.baseUrl) };
      await report(e);
    },
    onIdle: async () => {
      // Nothing new: the record says whether the job ended without a stream entry this reader
      // saw (an expired stream) or waits (its entry written before this reader started).
      const job = await d.jobs.status(scope, jobId);
      if (waits(job.status)) return { stop: await waiting(ctx, scope, jobId, traceId, opts.baseUrl) };
      if (job.status === 'completed' || job.status === 'failed') {
        ended = { status: job.status, result: job.result, failedReason: job.failedReason };
        return 'finished';
      }
      return 'wait';
    },
  });
  switch (end.end) {
    case 'terminal': {
      const x = end.entry.data;
      if (x.type === 'complete')
        return { status: 'completed', jobId, traceId, result: x.result, text: resultText(x.result) };
      const error = x.error === 'cancelled' ? 'cancelled' : 'failed';
      return { status: 'failed', jobId, traceId, error, message: String(x.message ?? error) };
    }
    case 'stopped':
      return end.value;
    case 'finished': {
      if (ended?.status === 'completed')
        return { status: 'completed', jobId, traceId, result: ended.result, text: resultText(ended.result) };
      const reason = ended?.failedReason ?? 'failed';
      const error = reason.startsWith('cancelled') ? 'cancelled' : 'failed';
      return { status: 'failed', jobId, traceId, error, message: reason };
    }
    default:
      return { status: 'aborted', jobId, traceId };
  }
}

/** The catalog a credential sees: every tool, or one by name. */
function createMcpCatalog(ctx: McpToolsContext) {
  return {
    /** The catalog: unique names (a repeated name gets its resource id's first 8 characters, then the whole id). */
    list: (scope: Scope) => list(ctx, scope),

    /** The tool of this name in the scope's catalog; 404 when there is none. */
    async find(scope: Scope, name: string): Promise<McpToolDef> {
      const found = (await list(ctx, scope)).find((t) => t.name === name);
      if (!found) throw notFound('Tool');
      return found;
    },
  };
}

/** Calling a tool: its job started, followed to its end or wait, cancelled on the client's cancel. */
function createMcpCalls(ctx: McpToolsContext) {
  const { d } = ctx;
  return {
    /**
     * Runs the tool's job and waits for it: its end, its wait for a human, or the client's cancel
     * (the job is cancelled, as POST /v1/jobs/:jobId/cancel would).
     */
    async call(scope: Scope, tool: McpToolDef, args: Record<string, unknown>, opts: CallOptions): Promise<ToolOutcome> {
      const { jobId, traceId } = await start(ctx, scope, tool.target, args);
      const outcome = await follow(ctx, scope, jobId, traceId, opts);
      if (outcome.status === 'aborted' && (opts.isCancel?.() ?? true))
        await d.jobs.cancel(scope, jobId, 'cancelled by the MCP client').catch(() => undefined);
      return outcome;
    },
  };
}

/**
 * Neurons and pathways as MCP tools (docs/mcp.md): the catalog a credential sees, and a call that
 * runs the job through the same path as an invoke or an execute, follows its job stream (progress)
 * and answers its end, its wait for a human, or cancels it when the client cancels.
 */
export function createMcpTools(d: McpToolDeps) {
  const ctx: McpToolsContext = { d };
  return {
    ...createMcpCatalog(ctx), // list, find
    ...createMcpCalls(ctx), // call
  };
}
