import { createHash, randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import type { EngramDoc } from '../db/traces.js';
import { validationError } from '../errors.js';
import { costOf } from '../llm/pricing.js';
import type { ModelRegistry } from '../llm/registry.js';
import type { ChatMessage, ChatResult, ToolCall, ToolSpec } from '../llm/types.js';
import type { InvokeBody } from '../schemas/jobs.js';
import type { NeuronSnapshot } from '../schemas/neuron-config.js';
import type { Scope } from '../scope.js';
import type { NeuronRunInput, NeuronRunResult, PreparedRunData, RunScope } from '../temporal/definitions.js';
import { BUILTIN_TOOLS } from '../tools/builtin.js';
import type { JobService } from './jobs.js';
import type { NeuronService } from './neurons.js';
import type { ReflexService } from './reflexes.js';
import type { TraceService } from './traces.js';
import { decodeBlob } from '../db/codec.js';

/** A name-based UUID (v5 layout over SHA-1) so the same client_nonce on a trace maps to the same job. */
export function uuidFromName(name: string): string {
  const h = createHash('sha1').update(`cortex:${name}`).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

export const DEFAULT_MAX_TURNS = 8;
export const MAX_DELEGATION_DEPTH = 3;
const HISTORY_LIMIT = 50;

/** What the workflow needs to drive the loop; plain data (it crosses the activity boundary). */
export type PreparedRun = PreparedRunData;

export interface ModelTurnInput {
  /** Set on the first turn of a run prepared by the API: the turn also marks the job running. */
  start?: NeuronRunInput;
  jobId: string; workspaceId: string; turn: number; attempt: number; model: string; messages: ChatMessage[]; tools: ToolSpec[];
  temperature?: number; maxTokens?: number; responseFormat: 'text' | 'json';
}
export type ModelTurnResult = ChatResult & { costUsd: number; modelId: string };

export interface FinishInput {
  input: NeuronRunInput; engramId: string; text: string; model: string; turns: number;
  usage: NeuronRunResult['usage']; toolCalls: NeuronRunResult['toolCalls']; neuronType: string | null;
}

/** The workflow-safe scope back as a service Scope (roles and credential were plain strings in the payload). */
export const fromRunScope = (s: RunScope): Scope => ({ ...s, roles: s.roles as Scope['roles'], credential: s.credential as Scope['credential'] });
export const toRunScope = (s: Scope): RunScope => ({ workspaceId: s.workspaceId, brainId: s.brainId, userId: s.userId, apiKeyId: s.apiKeyId, roles: [...s.roles], credential: s.credential, receptorId: s.receptorId });
const toolName = (s: string) => s.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);

/** Deterministic title from the first human turn: no extra model call, no extra cost. */
export function titleFrom(text: string): string {
  const clean = text.replace(/\s+/g, ' ').trim();
  return clean.length <= 60 ? clean || 'Untitled' : `${clean.slice(0, 57).trimEnd()}…`;
}

function historyToMessages(engrams: EngramDoc[]): ChatMessage[] {
  return engrams.slice(-HISTORY_LIMIT).map((e) => ({
    role: e.sourceType === 'neuron' ? 'assistant' as const : 'user' as const,
    content: e.content.content,
  }));
}

/**
 * The neuron run engine: starting a run (invoke) and the steps its workflow drives as
 * activities. Every step is safe to retry: ids are chosen by the workflow, writes check first.
 */
export function createRunService(d: {
  config: Config; jobs: JobService; traces: TraceService; neurons: NeuronService; reflexes: ReflexService; models: ModelRegistry;
}) {
  const { jobs, traces, neurons, reflexes, models } = d;
  /** The trace's engrams so far; a trace that does not exist yet has none. */
  const repoMessages = (scope: Scope, traceId: string) => traces.messages(scope, traceId).catch((e: unknown) => {
    if ((e as { status?: number }).status === 404) return [];
    throw e;
  });

  return {
    /** POST /v1/neurons/:id/invoke: stores the human turn, records the job, starts neuronRun. */
    async invoke(scope: Scope, idOrSlug: string, body: InvokeBody) {
      const neuron = await neurons.resolve(scope, idOrSlug);
      if (!neuron.isActive) throw validationError('Neuron is inactive');
      const head = neurons.headSnapshot(neuron);
      models.resolve(head.neuron_config.model ?? d.config.DEFAULT_MODEL);
      const opts = body.neuron_task_options;
      const traceType = opts?.trace_type ?? opts?.traceType ?? (head.neuron_config.neuron_type === 'completion' ? 'system' : 'thread');
      const traceId = body.trace_id ?? randomUUID();
      const jobId = body.client_nonce ? uuidFromName(`${scope.workspaceId}:${traceId}:${body.client_nonce}`) : randomUUID();
      if (body.client_nonce) {
        const existing = await jobs.get(scope, jobId).catch(() => null);
        if (existing) return { job: existing, userEngramId: null as string | null, traceId };
      }
      const message = body.message ?? JSON.stringify(body.data ?? {});
      const userEngramId = uuidFromName(`${jobId}:human`);
      const input: NeuronRunInput = {
        jobId, scope: toRunScope(scope), neuronId: neuron._id, neuronVersion: neuron.version, traceId, traceType,
        message, data: body.data, userEngramId, depth: 0, maxTurns: DEFAULT_MAX_TURNS, pathwayContext: null,
      };
      // Independent steps run concurrently (they are on the path to the first token); load()
      // leaves this turn's engram out of the history it reads and appends the message itself.
      const [, { job, created }, prepared] = await Promise.all([
        traces.append(scope, traceId, {
          id: userEngramId, content: { type: 'human', content: message }, metadata: body.data ? { data: body.data } : {},
          sourceType: 'user', sourceId: scope.userId ?? scope.apiKeyId, targetType: 'neuron', targetId: neuron._id,
          traceType, jobId, trace: { brainId: neuron.brainId, neuronId: neuron._id },
        }),
        jobs.create(scope, { id: jobId, kind: 'neuron', brainId: neuron.brainId, neuronId: neuron._id, traceId, clientNonce: body.client_nonce ?? null }),
        this.load(input),
      ]);
      if (created) await jobs.startWorkflow(job, 'neuronRun', [{ ...input, prepared }], `neuron ${neuron.name} · trace ${traceId}`);
      return { job, userEngramId, traceId };
    },

    /** Activity path (child and pathway runs): records the job, loads the run, marks it running. */
    async prepare(input: NeuronRunInput): Promise<PreparedRun> {
      const scope = fromRunScope(input.scope);
      await jobs.create(scope, { id: input.jobId, kind: 'neuron', neuronId: input.neuronId, traceId: input.traceId, parentJobId: input.parentJobId ?? null, brainId: scope.brainId ?? null });
      const prepared = await this.load(input);
      await this.markStarted(input);
      return prepared;
    },

    /** The job turns running: read model, job stream and a run-state event on the trace. */
    async markStarted(input: NeuronRunInput, opts: { emitted?: boolean } = {}): Promise<void> {
      const scope = fromRunScope(input.scope);
      const job = await jobs.repoFind(input.jobId);
      if (job && job.status !== 'pending') return; // a retried turn: already marked once
      if (!opts.emitted) await jobs.emit(input.jobId, { type: 'status', status: 'running' });
      await jobs.transition(scope.workspaceId, input.jobId, { status: 'running', progress: 5, currentStep: 'model turn 1' });
      await traces.publish(scope, input.traceId, { type: 'run.started', job_id: input.jobId, neuron_id: input.neuronId });
    },

    /** Loads the pinned version, the trace history, tools and delegates (no writes). */
    async load(input: NeuronRunInput): Promise<PreparedRun> {
      const scope = fromRunScope(input.scope);
      const snap: NeuronSnapshot = await neurons.snapshot(scope, input.neuronId, input.neuronVersion);
      const cfg = snap.neuron_config;
      const modelId = models.resolve(cfg.model ?? d.config.DEFAULT_MODEL).id;
      const isCompletion = cfg.neuron_type === 'completion';
      const tools: ToolSpec[] = [];
      const delegates: PreparedRun['delegates'] = [];
      if (!isCompletion) {
        const names = new Set(cfg.tools ?? []);
        for (const r of await reflexes.forNeuron(scope, input.neuronId)) {
          if (!r.isActive) continue;
          const meta = decodeBlob<Record<string, unknown>>(r.metadata, {});
          if (typeof meta.handler === 'string') names.add(meta.handler);
        }
        for (const n of names) if (BUILTIN_TOOLS[n]) tools.push(BUILTIN_TOOLS[n].spec);
        if (input.depth < MAX_DELEGATION_DEPTH && cfg.sub_neuron_ids?.length) {
          for (const sub of await neurons.findManyVisible(scope, cfg.sub_neuron_ids)) {
            const tool = toolName(`delegate_${sub.name}`);
            delegates.push({ tool, neuronId: sub._id, version: sub.version, name: sub.name });
            tools.push({ name: tool, description: `Delegate a task to neuron ${sub.name}: ${sub.description || 'no description'}`, parameters: { type: 'object', properties: { message: { type: 'string', description: 'what the sub-neuron should do' } }, required: ['message'] } });
          }
        }
      }
      let history: ChatMessage[];
      if (input.depth > 0 || input.pathwayContext) {
        history = [{ role: 'user', content: input.message }];
      } else {
        const earlier = (await repoMessages(scope, input.traceId)).filter((e) => e._id !== input.userEngramId);
        history = [...historyToMessages(earlier), { role: 'user', content: input.message }];
      }
      const system = [cfg.system_prompt ?? '', input.data ? `Structured input (JSON):\n${JSON.stringify(input.data)}` : '', isCompletion ? 'Answer with a single JSON object.' : ''].filter(Boolean).join('\n\n');
      return {
        model: modelId, neuronName: snap.name, neuronType: cfg.neuron_type ?? null, temperature: cfg.temperature, maxTokens: cfg.max_tokens,
        responseFormat: isCompletion ? 'json' : 'text', tools, delegates,
        messages: [...(system ? [{ role: 'system' as const, content: system }] : []), ...history],
      };
    },

    /**
     * One model turn, streaming tokens into the job stream. On a retry (attempt > 1) the tokens
     * an earlier attempt already wrote for this turn are skipped, so readers never see duplicates.
     */
    async modelTurn(t: ModelTurnInput, heartbeat: () => void, signal?: AbortSignal): Promise<ModelTurnResult> {
      const resolved = models.resolve(t.model);
      // Marking the job running overlaps the provider's time to first token instead of preceding it.
      // On a first attempt the `running` entry goes out before any token (one Redis write); the
      // read-model update then overlaps the provider's time to first token.
      const emitted = t.start !== undefined && t.attempt === 1;
      if (emitted) await jobs.emit(t.jobId, { type: 'status', status: 'running' });
      const started = t.start ? this.markStarted(t.start, { emitted }) : Promise.resolve();
      started.catch(() => undefined); // awaited (and rethrown) below; this only avoids an unhandled-rejection warning meanwhile
      let already = 0;
      if (t.attempt > 1) {
        const entries = await d.jobs.entries(t.jobId);
        already = entries.filter((e) => e.data.type === 'token' && e.data.turn === t.turn).length;
      }
      let index = 0;
      let lastBeat = 0;
      const res = await resolved.provider.chat(
        { model: resolved.model, messages: t.messages, tools: t.tools.length ? t.tools : undefined, temperature: t.temperature, maxTokens: t.maxTokens, responseFormat: t.responseFormat, signal },
        async (delta) => {
          const i = index++;
          if (i >= already) await jobs.emit(t.jobId, { type: 'token', turn: t.turn, index: i, text: delta });
          const now = Date.now();
          if (now - lastBeat > 500) { heartbeat(); lastBeat = now; }
        },
      );
      await started;
      const { costUsd } = costOf(resolved.id, res.usage);
      await jobs.emit(t.jobId, { type: 'progress', step: `model turn ${t.turn + 1} done`, turn: t.turn, usage: res.usage, tool_calls: res.toolCalls.map((c) => c.name) });
      return { ...res, costUsd, modelId: resolved.id };
    },

    /** Runs one built-in tool call; unknown tools answer with an error the model can read. */
    async runTool(jobId: string, call: ToolCall): Promise<string> {
      let args: Record<string, unknown> = {};
      try { args = JSON.parse(call.arguments || '{}') as Record<string, unknown>; } catch { return JSON.stringify({ error: 'arguments are not valid JSON' }); }
      const tool = BUILTIN_TOOLS[call.name];
      const result = tool ? await tool.run(args) : JSON.stringify({ error: `tool ${call.name} is not available (integration not connected)` });
      await jobs.emit(jobId, { type: 'tool', name: call.name, arguments: args, result });
      return result;
    },

    /** Stores the neuron engram, rolls up cost, titles the trace and completes the job (idempotent). */
    async finish(f: FinishInput): Promise<NeuronRunResult> {
      const scope = fromRunScope(f.input.scope);
      const current = await jobs.get(scope, f.input.jobId);
      let output: unknown;
      if (f.neuronType === 'completion') { try { output = JSON.parse(f.text); } catch { output = undefined; } }
      const result: NeuronRunResult = { text: f.text, engramId: f.engramId, traceId: f.input.traceId, model: f.model, usage: f.usage, toolCalls: f.toolCalls, turns: f.turns, ...(output !== undefined ? { output } : {}) };
      if (current.status === 'failed') return result; // cancelled meanwhile: store nothing
      await traces.append(scope, f.input.traceId, {
        id: f.engramId, content: { type: 'neuron', content: f.text },
        metadata: {
          content_blocks: [{ type: 'text', text: f.text }], tool_calls: f.toolCalls, model: f.model, usage: f.usage, job_id: f.input.jobId,
          ...(f.input.parentJobId ? { delegated_from: f.input.parentJobId } : {}), ...(output !== undefined ? { output } : {}),
        },
        sourceType: 'neuron', sourceId: f.input.neuronId, targetType: 'user', targetId: f.input.scope.userId,
        traceType: f.input.traceType, jobId: f.input.jobId,
        cost: { totalCostUsd: f.usage.costUsd, totalTokens: f.usage.totalTokens, inputTokens: f.usage.inputTokens, outputTokens: f.usage.outputTokens },
      });
      if (f.input.depth === 0 && !f.input.pathwayContext) {
        const trace = await traces.get(scope, f.input.traceId);
        if (!trace.title) await traces.setTitle(scope, f.input.traceId, titleFrom(f.input.message), 'generated');
      }
      await jobs.transition(scope.workspaceId, f.input.jobId, { status: 'completed', progress: 100, currentStep: 'completed', result });
      await jobs.emit(f.input.jobId, { type: 'complete', result });
      await traces.publish(scope, f.input.traceId, { type: 'run.completed', job_id: f.input.jobId, engram_id: f.engramId });
      return result;
    },

    /** Marks the job failed (no-op when already terminal) and ends its stream with `error`. */
    async fail(input: NeuronRunInput, reason: string): Promise<void> {
      const applied = await jobs.transition(input.scope.workspaceId, input.jobId, { status: 'failed', failedReason: reason, currentStep: 'failed' });
      await jobs.emit(input.jobId, { type: 'error', error: reason.startsWith('cancelled') ? 'cancelled' : 'failed', message: reason });
      if (applied) await traces.publish(fromRunScope(input.scope), input.traceId, { type: 'run.failed', job_id: input.jobId, reason });
    },
  };
}
export type RunService = ReturnType<typeof createRunService>;
