import type { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import {
  TERMINAL_STATES,
  type InvokeBody,
  type MultitaskStrategy,
  terminalEntry,
  ShownReply,
} from '../../src/jobs/index.js';
import { AppError, type ErrorCode } from '../../src/kernel/errors.js';
import { uuidFromName } from '../../src/kernel/ids.js';
import { markCommitted } from '../../src/kernel/request-context.js';
import type { ChatCompletion, ChatCompletionBody, ChatMessage, OpenAIUsage } from '../../src/runs/index.js';
import type { NeuronRecord } from '../../src/neurons/index.js';
import type { Scope } from '../../src/kernel/scope.js';
import type { Services } from '../../src/compose/services.js';

/** The services the OpenAI-compatible endpoint runs through (the same as invoke and execute). */
export type OpenAiApi = Pick<
  Services,
  'jobs' | 'neurons' | 'pathwayRuns' | 'pathways' | 'runs' | 'streams' | 'traces' | 'usage'
>;
import type { StreamEntry } from '../../src/kernel/streams.js';
import { openSse } from '../sse.js';
import { invalidRequest, modelNotFound, OpenAIError, openAIErrorOf } from './errors.js';

/**
 * What a `model` names: a neuron (by slug or id) or a pathway (`pathway:<id or slug>`). A neuron
 * comes with the record just read, so the run does not read it again.
 */
export type Target = { kind: 'neuron'; id: string; neuron?: NeuronRecord } | { kind: 'pathway'; id: string };

const PATHWAY_PREFIX = 'pathway:';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** How long a non-streaming completion waits for its run before answering 504 (the run goes on). */
const COMPLETION_WAIT_MS = 10 * 60_000;
/** How long one blocking read of the job stream waits; a streaming response sends a keepalive after each empty one. */
const READ_BLOCK_MS = 15_000;
const unixNow = () => Math.floor(Date.now() / 1000);
const isCode = (e: unknown, code: ErrorCode) => e instanceof AppError && e.code === code;

/** Resolves `model` to a neuron or pathway the caller may run; anything else is `model_not_found`. */
export async function resolveModel(services: OpenAiApi, scope: Scope, model: string): Promise<Target> {
  if (model.startsWith(PATHWAY_PREFIX)) {
    const ref = model.slice(PATHWAY_PREFIX.length).trim();
    if (!scope.brainId) throw modelNotFound(model, ' (a pathway runs in a brain: send X-Brain-Id)');
    // The resolution execute uses: an id, or the slug of the name among the brain's pathways.
    const found = await services.pathways
      .resolveId(scope, ref)
      .then((id) => services.pathways.getForRun(scope, id))
      .catch((e: unknown) => {
        if (isCode(e, 'NOT_FOUND')) return null;
        if (isCode(e, 'VALIDATION_ERROR')) throw modelNotFound(model, ` (${(e as Error).message})`);
        throw e;
      });
    if (!found) throw modelNotFound(model);
    return { kind: 'pathway', id: found.pathway._id };
  }
  const neuron = await services.neurons.resolve(scope, model).catch((e: unknown) => {
    if (isCode(e, 'NOT_FOUND')) return null;
    if (isCode(e, 'VALIDATION_ERROR')) throw modelNotFound(model, ` (${(e as Error).message})`);
    throw e;
  });
  if (!neuron || !neuron.isActive) throw modelNotFound(model);
  return { kind: 'neuron', id: neuron._id, neuron };
}

/** A message's text: a string, or its text parts joined; other parts (images, audio, files) are refused. */
function textOf(m: ChatMessage, i: number): string {
  if (m.content == null) return '';
  if (typeof m.content === 'string') return m.content;
  return m.content
    .map((p) => {
      if (p.type !== 'text' || typeof p.text !== 'string')
        throw invalidRequest(`messages[${i}]: only text content is supported (got a ${p.type} part)`, 'messages');
      return p.text;
    })
    .join('\n');
}

/** One run's turn: the message it sends and the trace it continues (undefined: a new trace). */
export interface Turn {
  message: string;
  traceId?: string;
  messages: { role: string; content: string }[];
  /** `metadata.multitask_strategy`: what the run does on a trace whose run has not ended (docs/neurons.md). */
  multitask?: MultitaskStrategy;
}

const STRATEGIES: readonly MultitaskStrategy[] = ['reject', 'enqueue', 'interrupt', 'rollback'];
/** `metadata.multitask_strategy`, checked (metadata values are strings). */
function strategyOf(body: ChatCompletionBody): MultitaskStrategy | undefined {
  const v = body.metadata?.multitask_strategy;
  if (v === undefined) return undefined;
  const found = STRATEGIES.find((s) => s === v);
  if (!found) throw invalidRequest(`metadata.multitask_strategy: must be one of ${STRATEGIES.join(', ')}`, 'metadata');
  return found;
}

/**
 * Maps OpenAI's `messages` to one turn (docs/openai-compatible.md): the last message must be the
 * user's and is the turn's message. With `metadata.trace_id` (or, for a neuron, `user`: one trace
 * per end user and model) the run continues that trace, whose stored history is the context, so the
 * earlier messages are not sent again. Without one, the run starts a new trace and the earlier
 * messages (system ones included) are folded into the message as a transcript before it.
 */
export function turnOf(body: ChatCompletionBody, scope: Scope, target: Target): Turn {
  if (body.n != null && body.n !== 1) throw invalidRequest('n: only one choice is supported', 'n');
  if (body.tools && body.tools.length > 0)
    throw invalidRequest(
      "tools: client-side tools are not supported; the neuron's own tools run on the platform",
      'tools',
    );
  const multitask = strategyOf(body);
  const messages = body.messages.map((m, i) => ({ role: m.role, content: textOf(m, i) }));
  const last = messages.at(-1)!;
  if (last.role !== 'user') throw invalidRequest('messages: the last message must have the role user', 'messages');
  const traceRef = body.metadata?.trace_id;
  let traceId: string | undefined;
  if (traceRef !== undefined) {
    if (!UUID_RE.test(traceRef)) throw invalidRequest('metadata.trace_id: must be a UUID', 'metadata');
    traceId = traceRef.toLowerCase();
  } else if (body.user && target.kind === 'neuron') {
    traceId = uuidFromName(`openai:${scope.workspaceId}:${target.id}:${body.user}`);
  }
  if (traceId || messages.length === 1) return { message: last.content, traceId, messages, multitask };
  const transcript = messages
    .slice(0, -1)
    .map((m) => `${m.role}: ${m.content}`)
    .join('\n\n');
  return {
    message: `Earlier messages of this conversation, for context:\n\n${transcript}\n\nThe message to answer:\n\n${last.content}`,
    messages,
    multitask,
  };
}

/** Starts the run: an invoke of the neuron or an execute of the pathway, the same service calls as their routes. */
export async function startRun(
  services: OpenAiApi,
  scope: Scope,
  target: Target,
  turn: Turn,
): Promise<{ jobId: string; traceId: string | null }> {
  if (target.kind === 'neuron') {
    const body: InvokeBody = {
      message: turn.message,
      stream: false,
      ...(turn.traceId ? { trace_id: turn.traceId } : {}),
      ...(turn.multitask ? { multitask_strategy: turn.multitask } : {}),
    };
    const r = await services.runs.invoke(scope, target.id, body, target.neuron);
    return { jobId: r.job._id, traceId: r.traceId };
  }
  const job = await services.pathwayRuns.execute(scope, target.id, {
    input: { message: turn.message, messages: turn.messages },
    ...(turn.traceId ? { trace_id: turn.traceId } : {}),
  });
  // The job exists: from here the request finishes its work whatever its deadline (as an invoke does).
  markCommitted();
  return { jobId: job._id, traceId: job.traceId };
}

/** How a run ended: its result, or its failure. */
type Ending = { ok: true; result: unknown } | { ok: false; message: string; cancelled: boolean };

/**
 * Follows a job stream from its start until its terminal entry (`Streams.follow`, as the SSE route
 * reads it). `onEntry` sees every entry; `onIdle` runs after each empty wait. A job that ended
 * without a terminal entry in the stream (the stream expired) ends from its record. Stops early
 * (null) when `signal` aborts or `deadline` passes.
 */
async function follow(
  services: OpenAiApi,
  scope: Scope,
  jobId: string,
  o: { signal: AbortSignal; deadline: number; onEntry?: (e: StreamEntry) => void; onIdle?: () => void },
): Promise<Ending | null> {
  const ending = (data: Record<string, unknown>): Ending =>
    data.type === 'complete'
      ? { ok: true, result: data.result ?? null }
      : { ok: false, message: String(data.message ?? 'the run failed'), cancelled: data.error === 'cancelled' };
  let ended: Parameters<typeof terminalEntry>[0] | undefined;
  const end = await services.streams
    .follow(services.jobs.streamKey(jobId), {
      endOnTerminal: true,
      blockMs: READ_BLOCK_MS,
      signal: o.signal,
      deadline: o.deadline,
      onEntry: (e) => o.onEntry?.(e),
      onIdle: async () => {
        const job = await services.jobs.get(scope, jobId);
        if (TERMINAL_STATES.includes(job.status)) {
          ended = job;
          return 'finished';
        }
        o.onIdle?.();
        return 'wait';
      },
    })
    .catch((e: unknown) => {
      if (o.signal.aborted) return null;
      throw e;
    });
  if (end?.end === 'terminal') return ending(end.entry.data);
  if (end?.end === 'finished' && ended) return ending(terminalEntry(ended));
  return null;
}

/** The reply text of a finished run: a neuron's reply (whole, even past the inline limit), a pathway's output. */
async function replyOf(services: OpenAiApi, scope: Scope, target: Target, result: unknown): Promise<string> {
  const r = (result ?? {}) as Record<string, unknown>;
  if (target.kind === 'pathway') {
    const output = 'output' in r ? r.output : result;
    return typeof output === 'string' ? output : JSON.stringify(output ?? null);
  }
  if (r.textTruncated === true && typeof r.engramId === 'string') {
    const engram = await services.traces.findEngram(scope, r.engramId);
    const content = (engram?.content as { content?: unknown } | undefined)?.content;
    if (typeof content === 'string') return content;
  }
  return typeof r.text === 'string' ? r.text : '';
}

/** The run's usage from the usage ledger (a pathway: every billed call of the run, its neuron nodes included). */
async function usageOf(services: OpenAiApi, scope: Scope, target: Target, jobId: string): Promise<OpenAIUsage> {
  const t = await services.usage.jobTotals(scope.workspaceId, jobId, target.kind === 'pathway');
  return { prompt_tokens: t.inputTokens, completion_tokens: t.outputTokens, total_tokens: t.totalTokens };
}

const runFailed = (jobId: string, e: Extract<Ending, { ok: false }>) =>
  new OpenAIError(
    'INTERNAL_SERVER_ERROR',
    500,
    `The run (job ${jobId}) ${e.cancelled ? 'was cancelled' : 'failed'}: ${e.message}`,
    {
      type: 'server_error',
      code: e.cancelled ? 'run_cancelled' : 'run_failed',
    },
  );

/** Aborts when the client goes away. */
function clientGone(ctx: Context): AbortSignal {
  const ctl = new AbortController();
  ctx.req.once('close', () => {
    if (!ctx.res.writableFinished) ctl.abort();
  });
  return ctl.signal;
}

/** A non-streaming completion: waits for the run, answers `chat.completion` with the reply and the ledger's usage. */
export async function completion(
  services: OpenAiApi,
  scope: Scope,
  ctx: Context,
  model: string,
  target: Target,
  run: { jobId: string },
): Promise<ChatCompletion | undefined> {
  const end = await follow(services, scope, run.jobId, {
    signal: clientGone(ctx),
    deadline: Date.now() + COMPLETION_WAIT_MS,
  });
  if (!end) {
    if (ctx.req.destroyed) return undefined;
    throw new OpenAIError(
      'SERVICE_UNAVAILABLE',
      504,
      `The run (job ${run.jobId}) did not finish within ${COMPLETION_WAIT_MS / 1000} s; it goes on: GET /v1/jobs/${run.jobId}/status`,
      { type: 'timeout', code: 'run_timeout' },
    );
  }
  if (!end.ok) throw runFailed(run.jobId, end);
  const [content, usage] = await Promise.all([
    replyOf(services, scope, target, end.result),
    usageOf(services, scope, target, run.jobId),
  ]);
  return {
    id: `chatcmpl-${run.jobId}`,
    object: 'chat.completion',
    created: unixNow(),
    model,
    choices: [
      { index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' },
    ],
    usage,
  };
}

/**
 * A streaming completion: `chat.completion.chunk` events from the job stream's tokens (a role chunk
 * first, then content deltas), a last chunk with `finish_reason: stop`, a usage chunk when asked,
 * then `data: [DONE]`. Deltas cannot be taken back: after a `reset` (a retried model call) a delta
 * is sent only while the shown reply still extends what was sent, and at the end the rest of the
 * final reply is sent when it extends it. A pathway sends its output as one delta at the end.
 */
export function streamCompletion(
  services: OpenAiApi,
  scope: Scope,
  ctx: Context,
  model: string,
  target: Target,
  run: { jobId: string },
  includeUsage: boolean,
): PassThrough {
  const sse = openSse(ctx);
  const { signal, close } = sse;
  const id = `chatcmpl-${run.jobId}`;
  const created = unixNow();
  const write = (data: unknown) => sse.write(`data: ${JSON.stringify(data)}\n\n`);
  const chunk = (delta: Record<string, unknown>, finish: 'stop' | null, usage?: OpenAIUsage | null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: usage ?? null } : {}),
  });
  const shown = new ShownReply();
  let sent = '';
  const sendUpTo = (text: string) => {
    if (text.length > sent.length && text.startsWith(sent)) {
      write(chunk({ content: text.slice(sent.length) }, null));
      sent = text;
    }
  };
  const pump = async () => {
    write(chunk({ role: 'assistant', content: '' }, null));
    const end = await follow(services, scope, run.jobId, {
      signal,
      deadline: Number.POSITIVE_INFINITY,
      onEntry: (e) => {
        if (target.kind === 'neuron' && shown.apply(e.data)) sendUpTo(shown.text());
      },
      onIdle: () => sse.write(': ping\n\n'),
    });
    if (!end) return close();
    if (!end.ok) {
      write(openAIErrorOf(runFailed(run.jobId, end)).body);
      return close();
    }
    sendUpTo(await replyOf(services, scope, target, end.result));
    write(chunk({}, 'stop'));
    if (includeUsage)
      write({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [],
        usage: await usageOf(services, scope, target, run.jobId),
      });
    sse.write('data: [DONE]\n\n');
    close();
  };
  pump().catch((e: unknown) => {
    write(openAIErrorOf(e).body);
    close();
  });
  return sse.out;
}
