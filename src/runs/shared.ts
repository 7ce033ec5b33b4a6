import type { Config } from '../kernel/config.js';
import type { UsageAttribution } from '../usage/index.js';
import type { BudgetDoc } from '../usage/index.js';
import type { ModelStep } from './model.js';
import type { RunStore } from './store.js';
import type { ModelRegistry } from '../llm/registry.js';
import type { Bus } from '../kernel/events.js';
import type { Logger } from '../kernel/logger.js';
import type { NeuronSnapshot, NeuronService } from '../neurons/index.js';
import type { Scope } from '../kernel/scope.js';
import type {
  ModelTurnOutcome,
  NeuronRunInput,
  NeuronRunResult,
  PreparedRunData,
  RunScope,
  RunSummary,
} from '../temporal/definitions.js';
import type { RemoteTools } from '../tools/remote.js';
import type { BudgetService } from '../usage/index.js';
import type { ConnectionService } from '../connections/index.js';
import type { FirstTurns } from './first-turns.js';
import type { InterventionService } from '../interventions/index.js';
import type { JobService } from '../jobs/index.js';
import type { ReflexService } from '../reflexes/index.js';
import type { EngramInput, TraceService } from '../traces/index.js';
import type { UsageService } from '../usage/index.js';

export const DEFAULT_MAX_TURNS = 8;
/** Attempts of a tool call whose failure is transient (network, timeout, 429, 5xx) before the model is told. */
export const TOOL_ATTEMPTS = 3;
export const MAX_DELEGATION_DEPTH = 3;
/** Earlier engrams of the trace a run's context holds. */
export const HISTORY_LIMIT = 50;

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
  /**
   * Which model of the run's chain answers: 0 (absent) the neuron's model, n its n-th fallback
   * (neuron_config.fallback_models). A fallback's turn claims its attempt number above every
   * earlier attempt of the turn, so its `reset` fences off what the failed model streamed.
   */
  modelIndex?: number;
}
/**
 * One attempt of a model turn: the activity's attempt number, or `claim` where the runner cannot
 * know it (a local activity: Temporal starts it again at attempt 1 after its worker died), so the
 * turn claims the next number from the job stream's fences.
 */
export type TurnAttempt = ModelTurnInput & { attempt: number | 'claim' };

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

/** What the run engine is built from (src/compose/services.ts passes it). */
export interface RunDeps {
  config: Config;
  jobs: JobService;
  traces: TraceService;
  neurons: NeuronService;
  reflexes: ReflexService;
  models: ModelRegistry;
  runLog: RunStore;
  usage: UsageService;
  budgets: BudgetService;
  interventions: InterventionService;
  remote: RemoteTools;
  connections: ConnectionService;
  firstTurns: FirstTurns;
  log: Logger;
  bus: Bus;
}

/** The steps one module of the engine calls in another (handed to it as `calls` when the engine is assembled). */
export interface RunSteps {
  load(
    input: NeuronRunInput,
    message: string,
    data?: Record<string, unknown>,
    opts?: { freshTrace?: boolean; head?: NeuronSnapshot },
  ): Promise<PreparedRun>;
  markStarted(
    s: { scope: RunScope; traceId: string; neuronId: string; jobId: string },
    opts?: { emitted?: boolean },
  ): Promise<void>;
  runTurn(
    t: TurnAttempt,
    signal?: AbortSignal,
    opts?: { inApi?: PreparedRunData; budgets?: Promise<BudgetDoc[]> },
  ): Promise<ModelTurnOutcome>;
  runHeldTurn(
    t: TurnAttempt,
    context: PreparedRunData,
    signal?: AbortSignal,
  ): Promise<{ outcome: ModelTurnOutcome; step: ModelStep | null }>;
  prepare(input: NeuronRunInput): Promise<RunSummary>;
  prepareHeld(input: NeuronRunInput): Promise<PreparedRunData>;
  modelTurn(t: TurnAttempt, signal?: AbortSignal): Promise<ModelTurnOutcome>;
  finish(f: FinishInput, held?: HeldSteps): Promise<NeuronRunResult & { cancelled?: boolean }>;
}

/**
 * A run's steps in hand, not stored (a map item's `runShort` that ends in its first turn).
 * `stored`: an earlier attempt may have left a working set in the store, to drop.
 */
export interface HeldSteps {
  models: ModelStep[];
  stored: boolean;
}

/**
 * The one object every module of the run engine is given: its dependencies and the workflow
 * starts in flight. A module that calls another's step is handed that step when the engine is
 * assembled (src/runs/service.ts), never looks it up later.
 */
export interface RunContext {
  d: RunDeps;
  /** Workflow starts this process has begun and not finished (an API stopping waits for them briefly). */
  starting: Set<Promise<void>>;
}

/** A tool result as the workflow keeps it: a preview; the whole result is a stored step. */
export const TOOL_PREVIEW = 2_000;
export const preview = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n)}…`);

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

/**
 * A run's human turn as its trace stores it: written by the invoke (or, for a run that waited for
 * its trace, when it starts), under the id the invoke chose, so a retry stores it once.
 */
export const humanTurn = (
  scope: Scope,
  input: Pick<NeuronRunInput, 'jobId' | 'neuronId' | 'traceType'>,
  t: { id: string; message: string; data?: Record<string, unknown>; brainId: string | null },
): EngramInput & { id: string } => ({
  id: t.id,
  content: { type: 'human', content: t.message },
  metadata: t.data ? { data: t.data } : {},
  sourceType: 'user',
  sourceId: scope.userId ?? scope.apiKeyId,
  targetType: 'neuron',
  targetId: input.neuronId,
  traceType: input.traceType,
  jobId: input.jobId,
  trace: { brainId: t.brainId, neuronId: input.neuronId },
});

/** Deterministic title from the first human turn: no extra model call, no extra cost. */
export function titleFrom(text: string): string {
  const clean = text.replace(/\s+/g, ' ').trim();
  return clean.length <= 60 ? clean || 'Untitled' : `${clean.slice(0, 57).trimEnd()}…`;
}

/** What a run's calls serve (usage ledger facets). */
export const attributionOf = (input: NeuronRunInput, brainId: string | null): UsageAttribution => ({
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

/** Attribution of a run whose context predates the ledger (only the job is known). */
export const noAttribution = (jobId: string): UsageAttribution => ({
  brainId: null,
  userId: null,
  apiKeyId: null,
  jobId,
  traceId: null,
  receptorId: null,
  neuronId: null,
  pathwayId: null,
});

/** The small part of a prepared run the workflow carries. */
export const summaryOf = (p: PreparedRunData): RunSummary => ({
  model: p.model,
  ...(p.fallbackModels?.length ? { fallbackModels: p.fallbackModels } : {}),
  neuronName: p.neuronName,
  neuronType: p.neuronType,
  responseFormat: p.responseFormat,
  delegates: p.delegates,
  ...(p.title !== undefined ? { title: p.title } : {}),
  ...(p.toolApproval ? { toolApproval: p.toolApproval } : {}),
});
