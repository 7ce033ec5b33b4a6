import { idempotentId, markCommitted, newId, runDetached } from '../request-context.js';
import { metrics } from '../metrics.js';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import type { EngramDoc, TraceDoc } from '../db/traces.js';
import { AppError, validationError } from '../errors.js';
import { costOf } from '../llm/pricing.js';
import type { ModelRegistry } from '../llm/registry.js';
import { estimateTokens, type ChatMessage, type ChatResult, type ToolCall, type ToolSpec } from '../llm/types.js';
import type { UsageAttribution } from '../db/usage.js';
import type { UsageService } from './usage.js';
import type { BudgetService } from './budgets.js';
import type { BudgetDoc } from '../db/budgets.js';
import type { InterventionService } from './interventions.js';
import type { InvokeBody } from '../schemas/jobs.js';
import type { NeuronSnapshot } from '../schemas/neuron-config.js';
import type { Scope } from '../scope.js';
import {
  MAX_INLINE_TEXT,
  type BudgetPause,
  type InterventionAnswer,
  type ModelTurnOutcome,
  type NeuronRunInput,
  type NeuronRunResult,
  type PreparedRunData,
  type RunScope,
  type RunSummary,
} from '../temporal/definitions.js';
import { BUILTIN_TOOLS } from '../tools/builtin.js';
import { HttpToolDefs, TransientToolError, type RemoteTools, type ToolBinding } from '../tools/remote.js';
import { OutboundBlocked } from '../net/guard.js';
import type { ConnectionService } from './connections.js';
import { NOT_STARTED_STEP, type JobService } from './jobs.js';
import type { JobDoc } from '../db/jobs.js';
import type { ModelStep, RunRepo, StoredStart, ToolStep } from '../db/runs.js';
import type { NeuronService } from './neurons.js';
import type { ReflexService } from './reflexes.js';
import type { TraceService } from './traces.js';
import { decodeBlob } from '../db/codec.js';
import { uuidFromName } from '../ids.js';
import type { FirstTurns } from './first-turns.js';
import type { Logger } from '../logger.js';
import { TERMINAL_STATES } from '../db/jobs.js';
import { bestEffort } from '../best-effort.js';

export const DEFAULT_MAX_TURNS = 8;
/** Attempts of a tool call whose failure is transient (network, timeout, 429, 5xx) before the model is told. */
export const TOOL_ATTEMPTS = 3;
export const MAX_DELEGATION_DEPTH = 3;
/** When an invoke's background workflow start is tried (ms after the previous try). */
const START_RETRIES_MS = [0, 250, 1_000];
const HISTORY_LIMIT = 50;

/** What the workflow needs to drive the loop; plain data (it crosses the activity boundary). */
export type PreparedRun = PreparedRunData;

/** A model turn as the workflow asks for it: ids and small values only; the activity loads the conversation. */
export interface ModelTurnInput {
  jobId: string;
  workspaceId: string;
  turn: number;
  /** The accepted attempt of each earlier turn: the conversation is rebuilt from those stored steps. */
  accepted: number[];
  /** Set on the first turn of a run prepared by the API: the turn also marks the job running. */
  start?: { scope: RunScope; traceId: string; neuronId: string };
  /** Budgets an admin approved this run going beyond (after a budget pause); the check skips them. */
  approvedBudgets?: string[];
}

export interface FinishInput {
  input: NeuronRunInput;
  engramId: string;
  model: string;
  turns: number;
  /** The accepted attempt of each turn (see ModelTurnInput). */
  accepted: number[];
  usage: NeuronRunResult['usage'];
  neuronType: string | null;
}

/** Attribution of a run whose context predates the ledger (only the job is known). */
const noAttribution = (jobId: string): UsageAttribution => ({
  brainId: null,
  userId: null,
  apiKeyId: null,
  jobId,
  traceId: null,
  receptorId: null,
  neuronId: null,
  pathwayId: null,
});

/** A tool call whose integration the user has not connected (the model is told, never retried). */
class NotConnected extends Error {}

/** A tool result as the workflow keeps it: a preview; the whole result is a stored step. */
const TOOL_PREVIEW = 2_000;
const preview = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n)}…`);

/** The workflow-safe scope back as a service Scope (roles and credential were plain strings in the payload). */
export const fromRunScope = (s: RunScope): Scope => ({
  ...s,
  roles: s.roles as Scope['roles'],
  credential: s.credential as Scope['credential'],
});
export const toRunScope = (s: Scope): RunScope => ({
  workspaceId: s.workspaceId,
  brainId: s.brainId,
  userId: s.userId,
  apiKeyId: s.apiKeyId,
  roles: [...s.roles],
  credential: s.credential,
  receptorId: s.receptorId,
  ...(s.shareTokenId ? { shareTokenId: s.shareTokenId } : {}),
});
const toolName = (s: string) => s.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);

/** Deterministic title from the first human turn: no extra model call, no extra cost. */
export function titleFrom(text: string): string {
  const clean = text.replace(/\s+/g, ' ').trim();
  return clean.length <= 60 ? clean || 'Untitled' : `${clean.slice(0, 57).trimEnd()}…`;
}

function historyToMessages(engrams: EngramDoc[]): ChatMessage[] {
  return engrams.slice(-HISTORY_LIMIT).map((e) => ({
    role: e.sourceType === 'neuron' ? ('assistant' as const) : ('user' as const),
    content: e.content.content,
  }));
}

/** The conversation of a turn: the stored context, then each earlier turn's accepted reply and its tool results. */
function conversation(context: PreparedRunData, models: ModelStep[], tools: ToolStep[]): ChatMessage[] {
  const messages: ChatMessage[] = [...context.messages];
  for (const m of models) {
    if (m.toolCalls.length === 0) {
      messages.push({ role: 'assistant', content: m.text });
      continue;
    }
    messages.push({ role: 'assistant', content: m.text, toolCalls: m.toolCalls });
    for (const c of m.toolCalls) {
      const r = tools.find((t) => t.turn === m.turn && t.callId === c.id);
      messages.push({
        role: 'tool',
        content: r?.content ?? JSON.stringify({ error: 'no result recorded' }),
        toolCallId: c.id,
        name: c.name,
      });
    }
  }
  return messages;
}

/**
 * The neuron run engine: starting a run (invoke) and the steps its workflow drives as
 * activities. Every step is safe to retry: ids are chosen by the workflow, writes check first.
 * The workflow carries ids and small values only; prompts, history, replies and tool results
 * live in the run context and steps (src/db/runs.ts) and are loaded here.
 */
export function createRunService(d: {
  config: Config;
  jobs: JobService;
  traces: TraceService;
  neurons: NeuronService;
  reflexes: ReflexService;
  models: ModelRegistry;
  runLog: RunRepo;
  usage: UsageService;
  budgets: BudgetService;
  interventions: InterventionService;
  remote: RemoteTools;
  connections: ConnectionService;
  firstTurns: FirstTurns;
  log: Logger;
}) {
  const {
    jobs,
    traces,
    neurons,
    reflexes,
    models,
    runLog,
    usage,
    budgets,
    interventions,
    remote,
    connections,
    firstTurns,
  } = d;
  /** What a run's calls serve (usage ledger facets). */
  const attributionOf = (input: NeuronRunInput, brainId: string | null): UsageAttribution => ({
    brainId,
    userId: input.scope.userId,
    apiKeyId: input.scope.apiKeyId,
    jobId: input.jobId,
    traceId: input.traceId,
    receptorId: input.scope.receptorId ?? null,
    neuronId: input.neuronId,
    shareTokenId: input.scope.shareTokenId ?? null,
    runId: input.rootJobId ?? input.jobId,
    pathwayId:
      input.pathwayContext && input.pathwayContext.pathwayId !== 'inline' ? input.pathwayContext.pathwayId : null,
  });
  /** The trace's newest engrams (the context's HISTORY_LIMIT, plus the run's own human turn); a trace that does not exist yet has none. */
  const repoMessages = (scope: Scope, traceId: string) =>
    traces.messages(scope, traceId, undefined, HISTORY_LIMIT + 1).catch((e: unknown) => {
      if ((e as { status?: number }).status === 404) return [];
      throw e;
    });
  const summaryOf = (p: PreparedRunData): RunSummary => ({
    model: p.model,
    neuronName: p.neuronName,
    neuronType: p.neuronType,
    responseFormat: p.responseFormat,
    delegates: p.delegates,
    ...(p.title !== undefined ? { title: p.title } : {}),
  });
  /** Workflow starts this process has begun and not finished (an API stopping waits for them briefly). */
  const starting = new Set<Promise<void>>();
  /**
   * Starts a stored run's workflow in the background, retrying a start Temporal refused a few
   * times; after that the sweep (startPending) goes on trying, so the run is never lost.
   */
  /** Starts a stored run's workflow (a start that exists already counts); false, logged, when Temporal refuses. */
  /** Whether a stored run still wants its workflow: a job that ended before its start (cancelled meanwhile) never starts. */
  const wantsStart = (job: JobDoc | null): job is JobDoc => job !== null && !TERMINAL_STATES.includes(job.status);
  const startFrom = async (job: JobDoc, start: StoredStart): Promise<boolean> => {
    try {
      await jobs.startWorkflow(job, start.workflowType, start.args, start.summary, { failJob: false });
      return true;
    } catch (e) {
      d.log.warn({ jobId: job._id, err: (e as Error).message }, 'workflow start failed; it is tried again');
      return false;
    }
  };
  const startSoon = (job: JobDoc, start: StoredStart): void => {
    const p = (async () => {
      // After this turn of the event loop: the client's encoding of the start (payloads, search
      // attributes) would otherwise run before the 202 is written.
      await new Promise((r) => setImmediate(r));
      for (const wait of START_RETRIES_MS) {
        if (wait) {
          await new Promise((r) => setTimeout(r, wait));
          // A run cancelled while its start was being retried is not started (cancel found no
          // workflow to cancel); the sweep is told it needs none.
          const now = await jobs.repoFind(job._id).catch(() => job);
          if (!wantsStart(now))
            return void (await bestEffort(
              d.log,
              'confirming a cancelled run needs no start',
              runLog.confirmStart(job._id),
            ));
        }
        if (await startFrom(job, start)) return;
      }
      d.log.warn({ jobId: job._id }, 'workflow start still failing; the start sweep retries it');
    })().finally(() => starting.delete(p));
    starting.add(p);
  };

  return {
    /** POST /v1/neurons/:id/invoke: stores the human turn and the run context, records the job, starts neuronRun. */
    async invoke(scope: Scope, idOrSlug: string, body: InvokeBody) {
      const neuron = await neurons.resolve(scope, idOrSlug);
      if (!neuron.isActive) throw validationError('Neuron is inactive');
      const head = neurons.headSnapshot(neuron);
      models.resolve(head.neuron_config.model ?? d.config.DEFAULT_MODEL);
      const opts = body.neuron_task_options;
      const traceType =
        opts?.trace_type ?? opts?.traceType ?? (head.neuron_config.neuron_type === 'completion' ? 'system' : 'thread');
      // An Idempotency-Key stands in for client_nonce (and names the trace it starts), so a retry is the same run.
      const traceId = body.trace_id ?? newId('trace');
      const nonce = body.client_nonce ?? idempotentId('invoke');
      const jobId = nonce ? uuidFromName(`${scope.workspaceId}:${traceId}:${nonce}`) : randomUUID();
      if (nonce) {
        const existing = await jobs.get(scope, jobId).catch(() => null);
        // A job whose run never started is started afresh; any other is the same job again.
        if (existing && !(await jobs.restartable(existing)))
          return { job: existing, userEngramId: null as string | null, traceId };
      }
      const message = body.message ?? JSON.stringify(body.data ?? {});
      const userEngramId = uuidFromName(`${jobId}:human`);
      const input: NeuronRunInput = {
        jobId,
        scope: toRunScope(scope),
        neuronId: neuron._id,
        neuronVersion: neuron.version,
        traceId,
        traceType,
        userEngramId,
        depth: 0,
        maxTurns: DEFAULT_MAX_TURNS,
        pathwayContext: null,
      };
      // Independent steps run concurrently (they are on the path to the first token); load()
      // leaves this turn's engram out of the history it reads and appends the message itself.
      // A trace the platform names here is new: two inserts and no history to read (traces.start).
      const fresh = body.trace_id === undefined;
      const human = {
        id: userEngramId,
        content: { type: 'human', content: message },
        metadata: body.data ? { data: body.data } : {},
        sourceType: 'user',
        sourceId: scope.userId ?? scope.apiKeyId,
        targetType: 'neuron',
        targetId: neuron._id,
        traceType,
        jobId,
        trace: { brainId: neuron.brainId, neuronId: neuron._id },
      };
      // The API claims the first model turn while the run is prepared, and starts it once the run
      // is stored (src/services/first-turns.ts): the provider call no longer waits for a workflow
      // task and an activity dispatch. The claim is recorded in the run context the activity reads.
      const claimed = d.config.FIRST_TURN_IN_API ? firstTurns.claim(jobId).catch(() => false) : Promise.resolve(false);
      // Read while the run loads: the first turn's budget check needs them before its call.
      const workspaceBudgets = d.config.FIRST_TURN_IN_API ? budgets.ofWorkspace(scope.workspaceId) : undefined;
      // Silent on purpose: a read the turn awaits (and fails with); unused, its failure matters to no one.
      workspaceBudgets?.catch(() => undefined);
      const creating = jobs.create(scope, {
        id: jobId,
        kind: 'neuron',
        brainId: neuron.brainId,
        neuronId: neuron._id,
        traceId,
        clientNonce: nonce ?? null,
      });
      // Once its job exists the run is the request's write: it is prepared to the end and answered
      // 202, not abandoned half-stored (src/request-context.ts).
      void creating.then(
        (c) => {
          if (c.created) markCommitted();
        },
        () => undefined,
      );
      const preparing = Promise.all([this.load(input, message, body.data, { freshTrace: fresh, head }), claimed]).then(
        ([loaded, inApi]) => {
          const prepared: PreparedRunData = {
            ...loaded,
            title: titleFrom(message),
            attribution: attributionOf(input, neuron.brainId),
            ...(inApi ? { firstTurn: 'api' as const } : {}),
          };
          // The workflow start is stored with the context: the 202 does not wait for it (startSoon).
          const start: StoredStart = {
            workflowType: 'neuronRun',
            args: [{ ...input, context: summaryOf(prepared) }],
            summary: `neuron ${neuron.name} · trace ${traceId}`,
          };
          return { prepared, start };
        },
      );
      // The first turn starts as soon as its job exists and the run is loaded, while the human turn
      // and the run context are still being stored (a failure of those releases it).
      const turnStarted = Promise.all([creating, preparing]).then(
        ([c, { prepared }]) => {
          // A job that existed already (a client_nonce repeat) is not this claim's to run.
          if (!c.created || prepared.firstTurn !== 'api') return false;
          firstTurns.run(jobId, (signal) =>
            this.runTurn(
              {
                jobId,
                workspaceId: scope.workspaceId,
                turn: 0,
                accepted: [],
                attempt: 1,
                start: { scope: input.scope, traceId, neuronId: neuron._id },
              },
              signal,
              { inApi: prepared, budgets: workspaceBudgets },
            ),
          );
          return true;
        },
        () => false,
      );
      const settled = await Promise.allSettled([
        fresh ? traces.start(scope, traceId, human) : traces.append(scope, traceId, human),
        creating,
        preparing.then(async (p) => {
          await runLog.putContext(scope.workspaceId, jobId, p.prepared, p.start);
          return p;
        }),
      ]);
      const [appended, created, loaded] = settled;
      const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) {
        if (await claimed) await firstTurns.release(jobId);
        // The job record may exist already: it must not stay pending. It ends failed with the reason.
        if (created.status === 'fulfilled' && created.value.created) {
          const reason = `could not prepare the run: ${(failure.reason as Error).message ?? 'unknown error'}`;
          // Outside the request: this cleanup must run even when the request was abandoned.
          await bestEffort(
            d.log,
            'failing the job of a run that could not be prepared',
            runDetached(() =>
              jobs.finalize(scope.workspaceId, jobId, {
                status: 'failed',
                failedReason: reason,
                currentStep: NOT_STARTED_STEP,
              }),
            ),
          );
        }
        throw failure.reason;
      }
      void appended;
      const { job } = (created as PromiseFulfilledResult<{ job: JobDoc; created: boolean }>).value;
      const { start } = (loaded as PromiseFulfilledResult<{ prepared: PreparedRunData; start: StoredStart }>).value;
      const isNew = (created as PromiseFulfilledResult<{ created: boolean }>).value.created;
      if ((await claimed) && !(await turnStarted)) await firstTurns.release(jobId);
      // The run is stored (job, human turn, context and its start): it is answered 202 now and its
      // workflow starts right after; if this process dies first, a sweep starts it (startPending).
      if (isNew) startSoon(job, start);
      return { job, userEngramId, traceId };
    },

    /**
     * The start sweep (every API, on start and every START_SWEEP_MS): runs stored at least
     * `minAgeMs` ago whose workflow start no sweep has confirmed. A workflow that exists is
     * confirmed (each run is looked at once); one that does not is started from the stored start
     * (an API died between its 202 and the start, or Temporal refused it for a while).
     */
    async startPending(opts: { minAgeMs?: number } = {}): Promise<{ checked: number; started: number }> {
      const due = await runLog.unconfirmedStarts(new Date(Date.now() - (opts.minAgeMs ?? 10_000)));
      let started = 0;
      for (const r of due) {
        const job = await jobs.repoFind(r.jobId);
        if (wantsStart(job)) {
          const exists = await jobs.workflowExists(r.jobId);
          if (exists === null) continue; // Temporal did not answer: the next sweep looks again
          if (!exists) {
            if (!(await startFrom(job, r.start))) continue;
            started++;
            d.log.info({ jobId: r.jobId }, 'started a stored run whose workflow had not started');
          }
        }
        await runLog.confirmStart(r.jobId);
      }
      return { checked: due.length, started };
    },

    /** Starts one never-started job from its stored start (GET status of a long-pending job). False when it has none or the start fails. */
    async startStored(jobId: string): Promise<boolean> {
      const [start, job] = await Promise.all([runLog.storedStart(jobId), jobs.repoFind(jobId)]);
      return start !== null && job !== null && startFrom(job, start);
    },

    /** API shutdown: first turns in flight are recorded as failed, workflow starts in flight get a moment to land. */
    async drain(): Promise<void> {
      await Promise.all([
        firstTurns.drain(),
        Promise.race([Promise.allSettled([...starting]), new Promise((r) => setTimeout(r, 2_000))]),
      ]);
    },

    /** Activity path (child and pathway runs): records the job, stores the run context, marks it running. */
    async prepare(input: NeuronRunInput): Promise<RunSummary> {
      const scope = fromRunScope(input.scope);
      await jobs.create(scope, {
        id: input.jobId,
        kind: 'neuron',
        neuronId: input.neuronId,
        traceId: input.traceId,
        parentJobId: input.parentJobId ?? null,
        brainId: scope.brainId ?? null,
      });
      const prepared = (await runLog.context(input.jobId)) ?? {
        ...(await this.load(input, input.message ?? '', input.data)),
        attribution: attributionOf(input, scope.brainId ?? null),
      };
      await runLog.putContext(scope.workspaceId, input.jobId, prepared);
      await this.markStarted({
        scope: input.scope,
        traceId: input.traceId,
        neuronId: input.neuronId,
        jobId: input.jobId,
      });
      return summaryOf(prepared);
    },

    /** The job turns running: read model, job stream and a run-state event on the trace. */
    async markStarted(
      s: { scope: RunScope; traceId: string; neuronId: string; jobId: string },
      opts: { emitted?: boolean } = {},
    ): Promise<void> {
      const scope = fromRunScope(s.scope);
      const { previous } = await jobs.transitionFrom(scope.workspaceId, s.jobId, {
        status: 'running',
        progress: 5,
        currentStep: 'model turn 1',
      });
      if (previous?.status !== 'pending') return; // a retried turn: the run was marked running once already
      await Promise.all([
        opts.emitted ? null : jobs.emit(s.jobId, { type: 'status', status: 'running' }),
        traces.publish(scope, s.traceId, { type: 'run.started', job_id: s.jobId, neuron_id: s.neuronId }),
      ]);
    },

    /** Loads the pinned version, the trace history, tools and delegates (no writes). */
    async load(
      input: NeuronRunInput,
      message: string,
      data?: Record<string, unknown>,
      opts: { freshTrace?: boolean; head?: NeuronSnapshot } = {},
    ): Promise<PreparedRun> {
      const scope = fromRunScope(input.scope);
      // `head`: the invoke has just read the neuron, and the run is pinned to its head version.
      const snap: NeuronSnapshot = opts.head ?? (await neurons.snapshot(scope, input.neuronId, input.neuronVersion));
      const cfg = snap.neuron_config;
      const modelId = models.resolve(cfg.model ?? d.config.DEFAULT_MODEL).id;
      const isCompletion = cfg.neuron_type === 'completion';
      const tools: ToolSpec[] = [];
      const delegates: PreparedRun['delegates'] = [];
      const bindings: Record<string, ToolBinding> = {};
      if (!isCompletion) {
        const names = new Set(cfg.tools ?? []);
        /** The caller's token for an integration (null: not connected, or it could not be read now). */
        const tokenOf = (integrationId: string) =>
          connections
            .tokenFor({ workspaceId: scope.workspaceId, userId: scope.userId, apiKeyId: scope.apiKeyId }, integrationId)
            .catch(() => null);
        const offered = new Set<string>();
        /** A reflex tool under its own name, or prefixed with its reflex when the name is taken. */
        const offer = (reflexName: string, spec: ToolSpec, binding: ToolBinding) => {
          const name =
            offered.has(spec.name) || BUILTIN_TOOLS[spec.name]
              ? toolName(`${reflexName}__${spec.name}`)
              : toolName(spec.name);
          if (offered.has(name)) return;
          offered.add(name);
          tools.push({ ...spec, name });
          bindings[name] = binding;
        };
        // The run's neuron was resolved in this scope (the invoke, the workflow's delegate, the pathway node).
        for (const r of await reflexes.forNeuron(scope, input.neuronId, { resolved: true })) {
          if (!r.isActive) continue;
          const meta = decodeBlob<Record<string, unknown>>(r.metadata, {});
          if (typeof meta.handler === 'string') names.add(meta.handler);
          const integrationId = typeof meta.integration_id === 'string' ? meta.integration_id : undefined;
          const auth = integrationId ? { integrationId } : {};
          const http = HttpToolDefs.safeParse(meta.http_tools ?? []);
          if (http.success)
            for (const def of http.data)
              offer(
                r.name,
                { name: def.name, description: def.description, parameters: def.parameters },
                { kind: 'http', reflexId: r._id, def, ...auth },
              );
          if (typeof meta.server_url === 'string') {
            const serverUrl = meta.server_url;
            // The tool list of a server behind a connection is read with the caller's token when there is one.
            const token = integrationId ? await tokenOf(integrationId) : null;
            // A server that cannot be listed leaves its tools out of this run (the run still starts).
            const listed = await remote
              .mcpTools(r._id, r.updatedAt.toISOString(), serverUrl, token ?? undefined)
              .catch(() => []);
            for (const t of listed)
              offer(r.name, t, { kind: 'mcp', reflexId: r._id, serverUrl, tool: t.name, ...auth });
          }
          // Integration-backed tool sets (`tools: [{ integration_id, tools }]`): the named tools of the
          // integration's MCP server (all of them when the set names none), called with the connection's token.
          for (const set of r.tools) {
            const i = await connections.integration(scope.workspaceId, set.integrationId);
            // Not configured, or an integration without a tool server: there is nothing to run (GET …/connections/check says so).
            if (!i?.mcpServerUrl) continue;
            const serverUrl = i.mcpServerUrl;
            const token = await tokenOf(set.integrationId);
            const binding = (tool: string): ToolBinding => ({
              kind: 'mcp',
              reflexId: r._id,
              serverUrl,
              tool,
              integrationId: set.integrationId,
            });
            const listed = await remote
              .mcpTools(
                r._id,
                `${r.updatedAt.toISOString()}/${i.updatedAt.toISOString()}`,
                serverUrl,
                token ?? undefined,
              )
              .catch(() => null);
            if (listed) {
              for (const t of listed)
                if (!set.tools.length || set.tools.includes(t.name)) offer(r.name, t, binding(t.name));
            } else if (!token) {
              // A server that lists its tools only to a connected account: the set's tools are offered by
              // name, so that a call answers the model "not connected" and puts the connect link on the job stream.
              for (const name of set.tools) {
                offer(
                  r.name,
                  {
                    name,
                    description: `${name}, a tool of ${i.name} (needs the user's connected ${i.name} account)`,
                    parameters: { type: 'object', properties: {}, additionalProperties: true },
                  },
                  binding(name),
                );
              }
            }
          }
        }
        for (const n of names)
          if (BUILTIN_TOOLS[n] && !offered.has(n)) {
            tools.push(BUILTIN_TOOLS[n].spec);
            offered.add(n);
          }
        if (input.depth < MAX_DELEGATION_DEPTH && cfg.sub_neuron_ids?.length) {
          for (const sub of await neurons.findManyVisible(scope, cfg.sub_neuron_ids)) {
            const tool = toolName(`delegate_${sub.name}`);
            delegates.push({ tool, neuronId: sub._id, version: sub.version, name: sub.name });
            tools.push({
              name: tool,
              description: `Delegate a task to neuron ${sub.name}: ${sub.description || 'no description'}`,
              parameters: {
                type: 'object',
                properties: { message: { type: 'string', description: 'what the sub-neuron should do' } },
                required: ['message'],
              },
            });
          }
        }
      }
      let history: ChatMessage[];
      if (input.depth > 0 || input.pathwayContext || opts.freshTrace) {
        history = [{ role: 'user', content: message }];
      } else {
        const earlier = (await repoMessages(scope, input.traceId)).filter((e) => e._id !== input.userEngramId);
        history = [...historyToMessages(earlier), { role: 'user', content: message }];
      }
      const system = [
        cfg.system_prompt ?? '',
        data ? `Structured input (JSON):\n${JSON.stringify(data)}` : '',
        isCompletion ? 'Answer with a single JSON object.' : '',
      ]
        .filter(Boolean)
        .join('\n\n');
      return {
        model: modelId,
        neuronName: snap.name,
        neuronType: cfg.neuron_type ?? null,
        temperature: cfg.temperature,
        maxTokens: cfg.max_tokens,
        responseFormat: isCompletion ? 'json' : 'text',
        tools,
        delegates,
        ...(Object.keys(bindings).length ? { bindings } : {}),
        messages: [...(system ? [{ role: 'system' as const, content: system }] : []), ...history],
      };
    },

    /**
     * One attempt of one model turn, streaming tokens into the job stream (docs/streams.md).
     * Attempt N > 1 first writes a `reset` for the turn: readers drop the turn's earlier tokens,
     * and the stream's fence refuses any late token of an older attempt. The attempt's text and
     * tool calls are stored as a step; the workflow gets the decision and the figures.
     */
    async modelTurn(t: ModelTurnInput & { attempt: number }, signal?: AbortSignal): Promise<ModelTurnOutcome> {
      // The first turn of an invoke was started by the API (src/services/first-turns.ts): its
      // outcome is adopted (waiting while it streams); the turn runs here only when it did not
      // finish there (failed, or the API process is gone), as a new attempt.
      if (t.turn === 0 && t.start) {
        const adopted = await firstTurns.adopt(t.jobId, t.attempt, signal);
        if (adopted) return adopted;
      }
      return this.runTurn(t, signal);
    },

    /** The outcome of the API's first turn when it is done within `waitMs` (a local activity of the workflow), else null. */
    adoptFirstTurn: (jobId: string, waitMs: number): Promise<ModelTurnOutcome | null> => firstTurns.peek(jobId, waitMs),

    /**
     * The body of one model turn attempt, wherever it runs: the activity, or the API for the
     * first turn of an invoke (`inApi`, with the context it has just stored).
     */
    async runTurn(
      t: ModelTurnInput & { attempt: number },
      signal?: AbortSignal,
      opts: { inApi?: PreparedRunData; budgets?: Promise<BudgetDoc[]> } = {},
    ): Promise<ModelTurnOutcome> {
      // The workspace's budgets are read alongside the run context (off the path to the first token).
      const workspaceBudgets = opts.budgets ?? budgets.ofWorkspace(t.workspaceId);
      // Silent on purpose: awaited (and rethrown) below through `spent`; this only avoids an unhandled rejection meanwhile.
      workspaceBudgets.catch(() => undefined);
      // Marking the job running overlaps the provider's time to first token instead of preceding it.
      // On a first attempt the `running` entry goes out before any token (one Redis write, made
      // while the run context is read).
      const emitted = t.start !== undefined && t.attempt === 1;
      const [context] = await Promise.all([
        opts.inApi ?? runLog.context(t.jobId),
        emitted ? jobs.emit(t.jobId, { type: 'status', status: 'running' }) : null,
      ]);
      if (!context) throw validationError(`run context of job ${t.jobId} is missing`);
      // The activity runs a first turn the API had claimed only when the API's attempt did not
      // finish: as the next attempt, whose reset fences off whatever the API's attempt streamed.
      const attempt = t.turn === 0 && t.start && !opts.inApi && context.firstTurn === 'api' ? t.attempt + 1 : t.attempt;
      const fence = { turn: t.turn, attempt };
      const started = t.start ? this.markStarted({ ...t.start, jobId: t.jobId }, { emitted }) : Promise.resolve();
      started.catch(() => undefined); // awaited (and rethrown) below; this only avoids an unhandled-rejection warning meanwhile
      const attribution = context.attribution ?? noAttribution(t.jobId);
      // What the budgets covering this call have spent, summed while the conversation loads (docs/usage.md).
      const spent = workspaceBudgets.then((all) =>
        budgets.spentOf(budgets.covering(all, attribution, t.approvedBudgets)),
      );
      spent.catch(() => undefined); // silent on purpose: awaited (and rethrown) below, as `started` is
      if (attempt > 1) await jobs.emit(t.jobId, { type: 'reset', ...fence });
      // The first turn has no earlier steps to read (one query fewer before the first token).
      const { models: done, tools: results } = t.accepted.length
        ? await runLog.steps(t.jobId, t.accepted)
        : { models: [], tools: [] };
      const messages = conversation(context, done, results);
      const resolved = models.resolve(context.model);
      // The check before the call: what is spent (ledger sums) plus this turn's prompt, estimated.
      const promptTokens = estimateTokens(messages.map((m) => m.content).join(''));
      const over = budgets.judge(await spent, {
        tokens: promptTokens,
        costNanos: Math.round(costOf(resolved.id, { inputTokens: promptTokens, outputTokens: 0 }).costUsd * 1e9),
      });
      if (over) {
        await started;
        if (over.policy === 'fail') throw new AppError('BUDGET_EXCEEDED', 402, over.message);
        const budget: BudgetPause = { ...over };
        return {
          attempt,
          toolCalls: [],
          usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
          costUsd: 0,
          finishReason: 'budget',
          textChars: 0,
          budget,
        };
      }
      let index = 0;
      let streamed = '';
      const calledAt = performance.now();
      // Found by this key when the run finishes (finish), so the row needs no job place.
      const billed = {
        key: `${t.jobId}:chat:${t.turn}:${attempt}`,
        workspaceId: t.workspaceId,
        kind: 'chat' as const,
        modelId: resolved.id,
        attribution,
        placed: false,
      };
      let res: ChatResult;
      try {
        res = await resolved.provider.chat(
          {
            model: resolved.model,
            messages,
            tools: context.tools.length ? context.tools : undefined,
            temperature: context.temperature,
            maxTokens: context.maxTokens,
            responseFormat: context.responseFormat,
            signal,
          },
          async (delta) => {
            if (index === 0)
              metrics.firstToken.observe(
                { provider: resolved.id.split('/')[0] },
                (performance.now() - calledAt) / 1000,
              );
            streamed += delta;
            await jobs.emit(t.jobId, { type: 'token', ...fence, index: index++, text: delta });
          },
        );
      } catch (e) {
        // A call that broke after the model had started answering was billed by the provider:
        // the ledger records it (counts estimated), so totals are what the provider invoices.
        if (index > 0) {
          const inputTokens = estimateTokens(messages.map((m) => m.content).join(''));
          const outputTokens = estimateTokens(streamed);
          await bestEffort(
            d.log,
            'recording the usage of a failed model call',
            usage.record({
              ...billed,
              usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
              outcome: 'failed',
              estimated: true,
            }),
          );
        }
        throw e;
      }
      await Promise.all([
        usage.record({ ...billed, usage: res.usage }),
        runLog.putModel(t.jobId, { turn: t.turn, attempt, text: res.text, toolCalls: res.toolCalls }),
        started,
      ]);
      const { costUsd } = costOf(resolved.id, res.usage);
      await jobs.emit(t.jobId, {
        type: 'progress',
        step: `model turn ${t.turn + 1} done`,
        ...fence,
        usage: res.usage,
        tool_calls: res.toolCalls.map((c) => c.name),
      });
      return {
        attempt,
        toolCalls: res.toolCalls,
        usage: res.usage,
        costUsd,
        finishReason: res.finishReason,
        textChars: res.text.length,
      };
    },

    /**
     * Runs one built-in tool call and stores its result as a step. Whatever goes wrong with the
     * call (arguments that are not JSON, an unknown tool, a tool that throws on its input) is
     * the model's to read as a tool error, never an activity retry. Returns a preview.
     */
    async runTool(jobId: string, call: ToolCall, turn = 0, attempt = 1): Promise<string> {
      let args: Record<string, unknown> | null = null;
      try {
        args = JSON.parse(call.arguments || '{}') as Record<string, unknown>;
      } catch {
        /* reported below */
      }
      const tool = BUILTIN_TOOLS[call.name];
      const context = tool ? null : await runLog.context(jobId);
      const binding = context?.bindings?.[call.name];
      let result: string;
      if (!args || typeof args !== 'object' || Array.isArray(args))
        result = JSON.stringify({ error: 'arguments are not a valid JSON object' });
      else if (binding) {
        try {
          let token: string | undefined;
          if (binding.integrationId) {
            const job = await jobs.repoFind(jobId);
            const who = {
              workspaceId: job?.workspaceId ?? '',
              userId: context?.attribution?.userId ?? null,
              apiKeyId: context?.attribution?.apiKeyId ?? null,
            };
            token = (await connections.tokenFor(who, binding.integrationId)) ?? undefined;
            if (!token) {
              // The model hears "not connected"; the person following the job gets the link to connect.
              await jobs.emit(jobId, {
                type: 'connection_required',
                reflex_id: binding.reflexId,
                integration_id: binding.integrationId,
                connect: { method: 'POST', path: `/v1/reflexes/${binding.reflexId}/connect` },
              });
              throw new NotConnected(
                `${call.name} needs a connected ${binding.integrationId} account, and the user has not connected one: ask them to connect it (POST /v1/reflexes/${binding.reflexId}/connect), then try again`,
              );
            }
          }
          result = await remote.run(binding, args, `${jobId}:${turn}:${call.id}`, token);
        } catch (e) {
          // Transient failures are retried by the activity; the last attempt tells the model.
          if (e instanceof TransientToolError && attempt < TOOL_ATTEMPTS) throw e;
          result = JSON.stringify({
            error:
              e instanceof OutboundBlocked || e instanceof TransientToolError || e instanceof NotConnected
                ? e.message
                : `${call.name} failed: ${(e as Error).message || 'error'}`,
            ...(e instanceof NotConnected ? { not_connected: true } : {}),
          });
        }
      } else if (!tool)
        result = JSON.stringify({ error: `tool ${call.name} is not one of the tools offered to this neuron` });
      else {
        try {
          result = await tool.run(args);
        } catch (e) {
          result = JSON.stringify({ error: `${call.name} failed: ${(e as Error).message || 'error'}` });
        }
      }
      await runLog.putTool(jobId, { turn, callId: call.id, name: call.name, content: result });
      await jobs.emit(jobId, {
        type: 'tool',
        name: call.name,
        arguments: args ?? call.arguments,
        result: preview(result, TOOL_PREVIEW),
      });
      return preview(result, TOOL_PREVIEW);
    },

    /**
     * Stores the neuron engram, rolls up cost, titles the trace and completes the job (idempotent:
     * a retry after the engram was written completes from it). The reply is every turn's
     * accepted text, in order: exactly what a reader of the job stream shows (docs/streams.md).
     */
    async finish(f: FinishInput): Promise<NeuronRunResult & { cancelled?: boolean }> {
      const scope = fromRunScope(f.input.scope);
      // The job's usage is read from the ledger (every billed call, retried attempts included), so
      // the job result, the engram and the trace cost are the same figures as GET /v1/usage. A
      // run's model calls are billed under `<job>:chat:<turn>:<attempt>`, and a turn's attempts
      // are numbered up to its accepted one: every row is read by its key.
      const billedKeys = f.accepted.flatMap((last, turn) =>
        Array.from({ length: last }, (_, i) => `${f.input.jobId}:chat:${turn}:${i + 1}`),
      );
      const [current, ledger, steps] = await Promise.all([
        jobs.get(scope, f.input.jobId),
        usage.totalsOf(scope.workspaceId, f.input.jobId, billedKeys),
        runLog.steps(f.input.jobId, f.accepted),
      ]);
      const spent =
        ledger.calls > 0
          ? {
              inputTokens: ledger.inputTokens,
              outputTokens: ledger.outputTokens,
              totalTokens: ledger.totalTokens,
              costUsd: ledger.costUsd,
            }
          : f.usage;
      const base = { engramId: f.engramId, traceId: f.input.traceId, model: f.model, usage: spent, turns: f.turns };
      let text = steps.models.map((m) => m.text).join('');
      let toolCalls: NeuronRunResult['toolCalls'] = steps.models.flatMap((m) =>
        m.toolCalls.map((c) => ({
          name: c.name,
          arguments: c.arguments,
          result: steps.tools.find((r) => r.turn === m.turn && r.callId === c.id)?.content ?? '',
        })),
      );
      if (f.turns >= f.input.maxTurns && !text) text = `Stopped after ${f.input.maxTurns} model turns.`;
      const resultOf = (): NeuronRunResult => {
        let output: unknown;
        if (f.neuronType === 'completion') {
          try {
            output = JSON.parse(text);
          } catch {
            output = undefined;
          }
        }
        const inline =
          text.length > MAX_INLINE_TEXT ? { text: text.slice(0, MAX_INLINE_TEXT), textTruncated: true } : { text };
        return {
          ...inline,
          ...base,
          toolCalls: toolCalls.map((c) => ({ ...c, result: preview(c.result, TOOL_PREVIEW) })),
          ...(output !== undefined ? { output } : {}),
        };
      };
      if (current.status === 'failed') return { ...resultOf(), cancelled: true }; // cancelled meanwhile: store nothing
      const topLevel = f.input.depth === 0 && !f.input.pathwayContext;
      // A run prepared by the API carries its trace's title: it is written with the reply's counters.
      const title = topLevel ? f.input.context?.title : undefined;
      const completion = f.neuronType === 'completion' ? resultOf().output : undefined;
      // The reply's engram is claimed under its id: a retry (the engram is stored) gets the stored one.
      const appended = await traces.appendWithTrace(
        scope,
        f.input.traceId,
        {
          id: f.engramId,
          content: { type: 'neuron', content: text },
          metadata: {
            content_blocks: [{ type: 'text', text }],
            tool_calls: toolCalls,
            model: f.model,
            usage: spent,
            job_id: f.input.jobId,
            ...(f.input.parentJobId ? { delegated_from: f.input.parentJobId } : {}),
            ...(completion !== undefined ? { output: completion } : {}),
          },
          sourceType: 'neuron',
          sourceId: f.input.neuronId,
          targetType: 'user',
          targetId: f.input.scope.userId,
          traceType: f.input.traceType,
          jobId: f.input.jobId,
          cost: {
            totalCostUsd: spent.costUsd,
            totalTokens: spent.totalTokens,
            inputTokens: spent.inputTokens,
            outputTokens: spent.outputTokens,
          },
        },
        { absent: true, traceExists: f.input.userEngramId !== null, ...(title !== undefined ? { title } : {}) },
      ); // the human turn (userEngramId) created the trace
      if (appended.existed) {
        text = appended.engram.content.content;
        toolCalls =
          decodeBlob<{ tool_calls?: NeuronRunResult['toolCalls'] }>(appended.engram.metadata, {}).tool_calls ?? [];
      }
      const result = resultOf();
      const read: TraceDoc | null = appended.existed ? null : appended.trace;
      // A delegated run's reply is its parent's tool result (stored, so the parent's next turn reads it).
      if (f.input.answers)
        await runLog.putTool(f.input.answers.jobId, {
          turn: f.input.answers.turn,
          callId: f.input.answers.callId,
          name: f.input.answers.name,
          content: text,
        });
      if (topLevel && title === undefined) {
        // A run prepared by an activity: the trace as the reply's append last read it (read again only when the reply was stored before).
        const trace = read ?? (await traces.get(scope, f.input.traceId));
        if (!trace.title) {
          const title =
            (await runLog.context(f.input.jobId))?.title ?? (f.input.message ? titleFrom(f.input.message) : undefined);
          if (title) await traces.setTitle(scope, f.input.traceId, title, 'generated', trace);
        }
      }
      const applied = await jobs.finalize(scope.workspaceId, f.input.jobId, {
        status: 'completed',
        progress: 100,
        currentStep: 'completed',
        result,
      });
      if (applied)
        await traces.publish(scope, f.input.traceId, {
          type: 'run.completed',
          job_id: f.input.jobId,
          engram_id: f.engramId,
        });
      await bestEffort(d.log, 'dropping a completed run context', runLog.drop(f.input.jobId));
      return applied ? result : { ...result, cancelled: (await jobs.get(scope, f.input.jobId)).status === 'failed' };
    },

    /**
     * A budget stopped the run before a model turn (policy pause): an intervention only an admin
     * can answer (approve: the run asks for the same turn again; reject: it fails BUDGET_EXCEEDED).
     * The job waits with waitingFor naming it. Idempotent on the id the workflow chose.
     */
    async openBudgetPause(
      input: NeuronRunInput,
      p: { id: string; turn: number; budget: BudgetPause; progress: number; currentStep: string },
    ): Promise<Record<string, unknown>> {
      const scope = fromRunScope(input.scope);
      const doc = await interventions.create(scope, {
        id: p.id,
        jobId: input.jobId,
        traceId: input.traceId,
        pathwayId:
          input.pathwayContext?.pathwayId && input.pathwayContext.pathwayId !== 'inline'
            ? input.pathwayContext.pathwayId
            : null,
        brainId: scope.brainId ?? null,
        nodeIndex: input.pathwayContext?.nodeIndex ?? -1,
        kind: 'budget',
        title: 'Budget reached',
        prompt: `${p.budget.message}. Approve to let this run continue beyond it, or reject to stop it.`,
        options: ['approve', 'reject'],
      });
      const waitingFor = {
        type: 'intervention',
        interventionId: doc._id,
        kind: 'budget',
        turn: p.turn,
        title: doc.title,
        prompt: doc.prompt,
        options: doc.options,
        expires_at: null,
        budget: {
          id: p.budget.budgetId,
          scope: p.budget.scope,
          target_id: p.budget.targetId,
          measure: p.budget.measure,
          period: p.budget.period,
          limit: p.budget.limit,
          spent: p.budget.spent,
        },
      };
      await jobs.transition(scope.workspaceId, input.jobId, {
        status: 'waiting',
        waitingFor,
        progress: p.progress,
        currentStep: p.currentStep,
      });
      await jobs.emit(input.jobId, {
        type: 'waiting',
        intervention_id: doc._id,
        options: doc.options,
        reason: 'budget',
        budget_id: p.budget.budgetId,
      });
      await traces.publish(scope, input.traceId, {
        type: 'run.waiting',
        job_id: input.jobId,
        intervention_id: doc._id,
      });
      return waitingFor;
    },

    /** Records the admin's answer to a budget pause the run accepted; the job runs again. */
    async recordBudgetAnswer(input: NeuronRunInput, answer: InterventionAnswer): Promise<string> {
      const doc = await interventions.recordAnswer(input.scope.workspaceId, answer, 'budget');
      await jobs.transition(input.scope.workspaceId, input.jobId, { status: 'running', waitingFor: null });
      await jobs.emit(input.jobId, { type: 'status', status: 'running' });
      return doc.status;
    },

    /** Marks the job failed (no-op when already terminal) and ends its stream with its one terminal entry. */
    async fail(input: NeuronRunInput, reason: string): Promise<void> {
      await interventions.cancelForJob(input.scope.workspaceId, input.jobId);
      const applied = await jobs.finalize(input.scope.workspaceId, input.jobId, {
        status: 'failed',
        failedReason: reason,
        currentStep: 'failed',
      });
      if (applied)
        await traces.publish(fromRunScope(input.scope), input.traceId, {
          type: 'run.failed',
          job_id: input.jobId,
          reason,
        });
      await bestEffort(d.log, 'dropping a failed run context', runLog.drop(input.jobId));
    },
  };
}
export type RunService = ReturnType<typeof createRunService>;
