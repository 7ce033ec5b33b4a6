/**
 * Shared Temporal definitions (workflows are started by name, so callers never load workflow code): task queue, signals, queries, search-attribute
 * keys and workflow input types. Imported by the API (to start/signal/query by name), the
 * worker and the workflow bundle; it imports @temporalio/workflow and types only.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, type SearchAttributePair } from '@temporalio/common';
import type { UsageAttribution } from '../usage/index.js';
import type { ToolBinding } from '../tools/remote.js';

/** Search attributes operators filter on in the Temporal UI (registered by the dev server start). */
export const WorkspaceIdKey = defineSearchAttributeKey('WorkspaceId', 'KEYWORD');
export const BrainIdKey = defineSearchAttributeKey('BrainId', 'KEYWORD');
export const NeuronIdKey = defineSearchAttributeKey('NeuronId', 'KEYWORD');
export const PathwayIdKey = defineSearchAttributeKey('PathwayId', 'KEYWORD');
export const ReceptorIdKey = defineSearchAttributeKey('ReceptorId', 'KEYWORD');
export const TraceIdKey = defineSearchAttributeKey('TraceId', 'KEYWORD');
export const JobKindKey = defineSearchAttributeKey('JobKind', 'KEYWORD');
/** Search attributes of a workflow start. */
export type SearchAttributePairs = SearchAttributePair[];
export const SEARCH_ATTRIBUTES = [
  'WorkspaceId',
  'BrainId',
  'NeuronId',
  'PathwayId',
  'ReceptorId',
  'TraceId',
  'JobKind',
] as const;

export type JobKind = 'neuron' | 'pathway' | 'receptor' | 'transcription' | 'search' | 'ingest' | 'stakeholder_extract';
export type JobState = 'pending' | 'running' | 'completed' | 'failed' | 'waiting' | 'paused';

/** What the `status` query returns: the live part of GET /v1/jobs/:id/status. */
export interface LiveStatus {
  status: JobState;
  progress: number;
  currentStep: string | null;
  waitingFor?: Record<string, unknown> | null;
}

export const cancelSignal = defineSignal<[{ reason?: string }]>('cancel');
export const resumeSignal = defineSignal<[Record<string, unknown>]>('resume');
/** Legacy: answers of runs recorded before answers were Updates (kept so their histories replay). */
export const interventionResponseSignal =
  defineSignal<
    [{ interventionId: string; action: string; comment?: string; fields?: Record<string, unknown>; by?: string | null }]
  >('interventionResponse');
export const statusQuery = defineQuery<LiveStatus>('status');

/** A person's answer to an intervention, as every answer route sends it. */
export interface InterventionAnswer {
  interventionId: string;
  action: string;
  comment?: string;
  fields?: Record<string, unknown>;
  by?: string | null;
  /** The delivery (API or link) it came through; absent: the API delivery. */
  deliveryId?: string;
  /** A tool call's `edit`: the arguments the tool runs with instead of the model's. */
  arguments?: Record<string, unknown>;
}
/**
 * Answers an intervention the run waits on (human answers are Temporal Updates; docs/decisions.md, "Interventions and human answers"). The validator
 * refuses an answer the run does not wait for (unknown, answered, expired, cancelled, a wrong
 * action): nothing changes and the caller gets a 4xx. An accepted answer returns once it is
 * recorded, so the intervention record and the job always agree with the run.
 */
export const answerUpdate = defineUpdate<{ interventionId: string; status: string }, [InterventionAnswer]>('answer');

/** Workflow-safe copy of the caller's scope (plain data). */
export interface RunScope {
  workspaceId: string;
  brainId?: string;
  userId: string | null;
  apiKeyId: string | null;
  roles: string[];
  credential: string;
  receptorId?: string;
  shareTokenId?: string;
}

export interface NeuronRunInput {
  jobId: string;
  scope: RunScope;
  neuronId: string;
  /** The neuron version pinned at start; later edits do not change a running job. */
  neuronVersion: number;
  traceId: string;
  traceType: 'thread' | 'system';
  /**
   * The message of a run whose context an activity prepares (delegated and pathway runs). A
   * top-level invoke stores its message in the trace and the run context instead (payloads by
   * reference: the workflow input never carries a user's whole prompt).
   */
  message?: string;
  /** Legacy inputs only (histories recorded before run contexts); new runs keep data in the run context. */
  data?: Record<string, unknown>;
  userEngramId: string | null;
  /** Delegation depth; a child run is started by its parent with depth + 1. */
  depth: number;
  maxTurns: number;
  /** Set on child runs and pathway nodes: the job whose stream and cancellation they follow. */
  parentJobId?: string;
  /** Set on child runs and pathway nodes: the top job a caller started (usage counts one invocation per top job). */
  rootJobId?: string;
  /**
   * Whether the run writes into a trace whose runs form a chain (double-texting, docs/neurons.md):
   * its writes are then made under a lease (src/runs/trace-writes.ts). Absent: a run a
   * caller started (depth 0, no parent) is on its trace's chain; a child inherits its parent's flag.
   */
  traceChain?: boolean;
  pathwayContext?: { pathwayId: string; nodeIndex: number } | null;
  /** A delegated run answers its parent's tool call: its reply is stored as that call's result. */
  answers?: { jobId: string; turn: number; callId: string; name: string };
  /**
   * Set on a map's items: the model turns run as local activities (no workflow task and activity
   * task of their own per turn), each claiming its attempt from the job stream (docs/decisions.md).
   */
  localTurns?: boolean;
  /**
   * Set on a map's items (with localTurns) since `map-item-one-step`: the item's preparation, its
   * first model turn and, when that turn ends the run, the reply's save run as one local activity
   * (`runShort`), so a one-turn item is one workflow task with one marker.
   */
  oneStep?: boolean;
  /**
   * Set when the API prepared the run at invoke time and stored its context (prompt, history,
   * tools) under the job id: the workflow's first step is then the model turn.
   */
  context?: RunSummary;
  /** Legacy inputs only (histories recorded before run contexts were stored by reference). */
  prepared?: PreparedRunData;
  /**
   * Set on a run that waited for another run on its trace (double-texting): its human turn
   * (`userEngramId`, `message`, `data`) is stored when it starts, after the run before it ended, so
   * the trace's engrams of two runs never interleave. The neuron's brain is the engram's.
   */
  humanTurnOnStart?: { brainId: string | null };
}

/** Whether the run writes into a trace whose runs form a chain (NeuronRunInput.traceChain). */
export const onTraceChain = (
  run: Pick<NeuronRunInput, 'traceChain' | 'depth' | 'parentJobId' | 'pathwayContext'>,
): boolean => run.traceChain ?? (run.depth === 0 && !run.parentJobId && !run.pathwayContext);

/**
 * What `runShort` answers: the run's summary and its first turn, and the run's result when that
 * turn ended it and the reply is saved (else the workflow goes on from the turn: tools, a budget
 * pause, or the save asked again).
 */
export interface ShortRunOutcome {
  summary: RunSummary;
  /** The first turn's reply; absent when the workflow must run that turn itself (an earlier attempt's context rules). */
  reply?: ModelTurnOutcome;
  result?: NeuronRunResult & { cancelled?: boolean };
}

/** The small part of a prepared run that the agent loop needs to drive turns (no prompt, no history). */
export interface RunSummary {
  model: string;
  /** The neuron's fallback models (canonical ids, in order), tried when `model` fails after its retries. */
  fallbackModels?: string[];
  neuronName: string;
  neuronType: string | null;
  responseFormat: 'text' | 'json';
  delegates: { tool: string; neuronId: string; version: number; name: string }[];
  /** The trace's generated title, for a top-level run the API prepared (written with its reply). */
  title?: string;
  /** neuron_config.tool_approval: the tool calls that wait for a person (docs/tools.md). */
  toolApproval?: ToolApproval;
}

/** Which tool calls of a run wait for a person's answer, and for how long. */
export interface ToolApproval {
  tools: string[] | 'all';
  /** No answer within this many seconds counts as a rejection; absent: no limit. */
  timeoutS?: number;
}

/** Everything a model turn needs, loaded once from the pinned neuron version and the trace; stored as the run context. */
export interface PreparedRunData extends RunSummary {
  temperature?: number;
  maxTokens?: number;
  messages: {
    role: 'system' | 'user' | 'assistant' | 'tool';
    content: string;
    toolCalls?: { id: string; name: string; arguments: string }[];
    toolCallId?: string;
    name?: string;
  }[];
  tools: { name: string; description: string; parameters: Record<string, unknown> }[];
  /** Title for the trace when the run's first reply lands (top-level thread runs). */
  title?: string;
  /** What the run's provider calls serve, for the usage ledger (src/usage/service.ts). */
  attribution?: UsageAttribution;
  /** How each offered reflex tool is run (HTTP or MCP), by the name the model calls it. */
  bindings?: Record<string, ToolBinding>;
  /** The API claimed and started the run's first model turn (src/runs/first-turns.ts). */
  firstTurn?: 'api';
}

/** What a model turn activity returns to the workflow: the decision and the figures, never the text itself. */
export interface ModelTurnOutcome {
  /** The attempt whose text is the turn's text (stored under the run's steps). */
  attempt: number;
  toolCalls: { id: string; name: string; arguments: string }[];
  usage: { inputTokens: number; outputTokens: number; totalTokens: number };
  costUsd: number;
  finishReason: string;
  textChars: number;
  /** The model that answered (`provider/model`): the run's model or one of its fallbacks. */
  model?: string;
  /**
   * Set instead of a reply when a budget with the pause policy stopped the turn before the call
   * (docs/usage.md): the run waits for an admin's approval, then asks for the same turn again.
   */
  budget?: BudgetPause;
}

/** A budget the next model turn would exceed (plain data: it crosses the activity boundary). */
export interface BudgetPause {
  budgetId: string;
  scope: string;
  targetId: string | null;
  measure: string;
  period: string;
  limit: number;
  spent: number;
  policy: string;
  /** `BUDGET_EXCEEDED: …` */
  message: string;
}

/** Longest reply text carried inline in a workflow result; the whole text is always in the neuron engram. */
export const MAX_INLINE_TEXT = 64 * 1024;

export interface NeuronRunResult {
  /** The reply (cut at MAX_INLINE_TEXT, with textTruncated set; the engram holds all of it). */
  text: string;
  textTruncated?: boolean;
  engramId: string;
  traceId: string;
  model: string;
  usage: { inputTokens: number; outputTokens: number; totalTokens: number; costUsd: number };
  toolCalls: { name: string; arguments: string; result: string }[];
  turns: number;
  output?: unknown;
}

/** Index-based graph as the interpreter walks it (see src/pathways/graph.ts CompiledGraph). */
export interface RunGraph {
  /** `id`: the designer's node id (an index graph's: its position, "0", "1", …); absent in graphs compiled before ids were kept. */
  nodes: { id?: string; type: string; data: Record<string, unknown> }[];
  edges: [number, number, string?][];
}

export interface PathwayRunInput {
  jobId: string;
  scope: RunScope;
  pathwayId: string | null;
  /** The version the run is pinned to (null for inline graphs). */
  pathwayVersion: number | null;
  traceId: string;
  input: Record<string, unknown>;
  /** Compiled outside the workflow (workflows are deterministic and do no I/O): the workflow only interprets. */
  graph: RunGraph;
  /** Safety net against runaway graphs: the run fails after this many node visits. */
  maxSteps: number;
  /** The neuron version each neuron node (and map over a neuron) runs (node index → version), pinned when the run starts. */
  neuronVersions?: Record<string, number>;
  /** The pathway version each pathway node (and map over a pathway) runs (node index → version), pinned when the run starts. */
  pathwayVersions?: Record<string, number>;
  /** How deep this run is nested as a sub-pathway (absent: 0, a run a caller started); capped at MAX_PATHWAY_DEPTH. */
  depth?: number;
  /** Set on sub-pathway runs: the job of the pathway run whose node started this one. */
  parentJobId?: string;
  /** Set on sub-pathway runs: the top job a caller started (usage counts one invocation per top job). */
  rootJobId?: string;
  /** Set on a run that took its place in its trace's chain of runs, and inherited by its children (NeuronRunInput.traceChain). */
  traceChain?: boolean;
  /** Set on a replay (POST /v1/jobs/:id/replay): what it takes from the run it replays. */
  replay?: PathwayReplay;
}

/** One node visit a run recorded: the node's index, its value and the handle of the edges it took. */
export interface RecordedVisit {
  at: number;
  value: unknown;
  handle?: string;
  /** The visit had not ended when the run did (the node it failed at, a branch cut short): nothing to take. */
  pending?: boolean;
}

/**
 * A replay's part of its run input: the visits the replayed run ended before its first visit of
 * `fromNode` (their values are taken, the nodes do not run again), and the value that flows into
 * `fromNode` in place of its recorded input when the caller gave one.
 */
export interface PathwayReplay {
  of: string;
  fromNode: string;
  recorded: RecordedVisit[];
  input?: Record<string, unknown>;
}

/** How deep sub-pathways may nest (a pathway node in a run started by a pathway node, …); deeper fails the node. */
export const MAX_PATHWAY_DEPTH = 5;

export interface PathwayRunResult {
  output: unknown;
  last: unknown;
  /** Each node's last value, by node id. */
  nodes: Record<string, unknown>;
  /** Node ids in visiting order. */
  visited: string[];
  /** Nodes whose error policy let the run go on (`continue` or `branch`), by node id. */
  errors?: Record<string, { error: string; policy: 'continue' | 'branch' }>;
  pathwayId: string | null;
  pathwayVersion: number | null;
  traceId: string;
}
export type PathwayRun = (input: PathwayRunInput) => Promise<PathwayRunResult>;

/**
 * Starts `receptorFire` (docs/receptors.md): from the fire route, a stimulus or a channel message (the
 * API recorded the firing and the job first: `firingId`, `jobId`), or from the receptor's
 * Temporal Schedule (only the receptor: the workflow records the firing itself).
 */
export interface ReceptorFireInput {
  workspaceId: string;
  receptorId: string;
  source: 'http' | 'schedule' | 'stimulus' | 'channel' | 'share';
  /** Set when the API recorded the firing (its id is the firing's); absent for scheduled fires. */
  jobId?: string;
  firingId?: string;
}

/** What the firing's first step decided: the target run to start as a child, or why it did not fire. */
export type FirePlan =
  | { kind: 'neuron'; jobId: string; run: NeuronRunInput; receptorSlug: string }
  | { kind: 'pathway'; jobId: string; run: PathwayRunInput; receptorSlug: string }
  | { kind: 'system'; jobId: string; run: SystemJobInput; receptorSlug: string }
  | { kind: 'skipped'; jobId: string; reason: string };

/** A system job (system_job and action_plan targets): runs `systemJob` with the job id as its workflow id. */
export interface SystemJobInput {
  jobId: string;
  workspaceId: string;
  receptorId: string;
  firingId: string;
  /** system_job: the maintenance key to run; action_plan: the plan's pathway and whether to run it now. */
  job: { kind: 'maintenance'; key: string } | { kind: 'action_plan'; pathwayId: string; autoExecute: boolean };
}

/** The `search` workflow (GET /v1/search, docs/search.md): the query and the caller's scope; one activity per type. */
export interface SearchJobInput {
  jobId: string;
  workspaceId: string;
  brainId: string | null;
  userId: string | null;
  apiKeyId: string | null;
  roles: string[];
  q: string;
  types: (
    | 'assets'
    | 'artifacts'
    | 'stakeholder_maps'
    | 'meetings'
    | 'action_plans'
    | 'receptors'
    | 'pathways'
    | 'neurons'
    | 'reflexes'
    | 'memories'
  )[];
  limit: number;
  offset: number;
  isActive: boolean | null;
  searchMode: 'hybrid' | 'lexical' | 'vector';
}

/** The `ingest` workflow (docs/knowledge.md): one resource version; ids only, the text is read by the activities. */
export interface IngestInput {
  jobId: string;
  workspaceId: string;
  brainId: string;
  kind: 'asset' | 'artifact' | 'memory';
  resourceId: string;
  version: number;
  userId: string | null;
  apiKeyId: string | null;
  /** Chunks per embedding call (EMBED_BATCH_SIZE when started). */
  batchSize?: number;
}

/** A chunk of a live session was stored (its audio is in the blob store; only the seq travels). */
export const chunkSignal = defineSignal<[{ seq: number }]>('chunk');
/** live/stop: the session finalizes (a full pass over the stored audio). */
export const stopSignal = defineSignal<[Record<string, never>]>('stop');

/** The `liveTranscription` workflow (docs/meetings.md): ids and small values only, never audio. */
export interface LiveTranscriptionInput {
  jobId: string;
  workspaceId: string;
  brainId: string;
  meetingId: string;
  sessionId: string;
  /** Ends the session (and finalizes it) after this long without a chunk. */
  idleTimeoutMs: number;
  /** Carried over continue-as-new: whether stop was already asked for. */
  stopped?: boolean;
}
/** What a caption pass did: where the next final window starts, whether audio is still waiting. */
export interface CaptionOutcome {
  captionSeq: number;
  partialSeq: number;
  more: boolean;
}

/** The batch `transcription` workflow: the audio is read from the blob store by the activity. */
export interface TranscriptionInput {
  jobId: string;
  workspaceId: string;
  brainId: string | null;
  source: { kind: 'attachment' | 'asset'; id: string };
  locale: string;
  diarize: boolean;
}
/** The `stakeholderExtract` workflow (docs/stakeholder-maps.md): ids only; the transcript is stored under the job id. */
export interface StakeholderExtractInput {
  jobId: string;
  workspaceId: string;
  brainId: string;
  mapId: string;
}
