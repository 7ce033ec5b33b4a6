import * as wf from '@temporalio/workflow';
import {
  answerUpdate,
  cancelSignal,
  interventionResponseSignal,
  resumeSignal,
  statusQuery,
  type InterventionAnswer,
  type LiveStatus,
  type PathwayRunInput,
  type RecordedVisit,
} from '../../src/temporal/definitions.js';
import { steps } from './activities.js';

/** An intervention the run opened, as the run itself sees it: the one arbiter of who answered first. */
export interface OpenIntervention {
  options: string[];
  kind: 'approval' | 'pause' | 'budget';
  state: 'pending' | 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled';
}

/** What expressions and templates see: the run's input, the last value, each node's value and the loop counters. */
interface RunValues {
  input: Record<string, unknown>;
  last: unknown;
  output: unknown;
  nodes: Record<string, unknown>;
  loops: Record<string, number>;
}

/** A node_finish (and its progress write) waiting to go out with the next node's entries. */
interface CarriedEntry {
  event: Record<string, unknown>;
  patch: { progress: number; currentStep: string } | null;
}

/**
 * One line of execution through the graph. A run starts with one; a node with several plain
 * outgoing edges starts one per edge (parallel branches), and a join starts one when it fires.
 */
export interface Branch {
  /** The node this branch visits next (-1: it has ended). */
  at: number;
  /** The value flowing along the branch: the last node's output. */
  last: unknown;
  /** The id of the node the branch came from (a join keys its arrivals by it). */
  from: string | null;
  /** The branch was started by its join firing: it visits the join instead of arriving at it. */
  entering: boolean;
  /** This branch's node_finish waiting to go out with its next node_start. */
  carried: CarriedEntry | null;
  /** Cancelled by an `any` join another branch reached first. */
  cancelled: boolean;
}

/**
 * Everything one pathway run holds while it walks its graph: the one object every node handler
 * receives (workflow memory only: it is rebuilt by replay, never stored).
 */
export interface RunState {
  input: PathwayRunInput;
  /** The live status the `status` query returns. */
  status: LiveStatus;
  values: RunValues;
  /** Node indices in visiting order (the maxSteps cap counts them). */
  visited: number[];
  /** Each node's last value by the designer's node id (the run result's `nodes`). */
  byId: Record<string, unknown>;
  /** Interventions this run opened, and the answers it accepted. */
  open: Map<string, OpenIntervention>;
  answers: Map<string, InterventionAnswer>;
  /** A legacy resume signal arrived (histories recorded before answers were Updates). */
  resumed: boolean;
  cancelReason: string | undefined;
  /** Budgets an admin let this run go beyond (classify nodes; neuron nodes are runs of their own). */
  approvedBudgets: string[];
  /** Runs started since the `pathway-fused-node-steps` patch send a node's entries with its expression in one hop. */
  fused: boolean;
  lastProgressWrite: number;
  /** Parallel branches still walking (the first branch of the run is not among them). */
  running: Set<Branch>;
  /** Branches waiting at a join (by the join's node index), in arrival order. */
  arrivals: Map<number, { from: string; value: unknown }[]>;
  /** The first failure of a parallel branch: the run fails with it. */
  failure: unknown;
  /** Nodes whose error policy acted (`continue` or `branch`), by node id. */
  errors: Record<string, { error: string; policy: 'continue' | 'branch' }>;
  /** Every node visit in order, with its value and handle: recorded when the run ends (a replay takes them). */
  trail: RecordedVisit[];
  /** A replay's recorded visits still to take, by node index (in visiting order), and where it runs from. */
  replay: { queues: Map<number, RecordedVisit[]>; from: number; input?: Record<string, unknown> } | null;
}

export function newRunState(input: PathwayRunInput): RunState {
  return {
    input,
    status: { status: 'running', progress: 0, currentStep: 'starting', waitingFor: null },
    values: { input: input.input, last: input.input, output: undefined, nodes: {}, loops: {} },
    visited: [],
    byId: {},
    open: new Map(),
    answers: new Map(),
    resumed: false,
    cancelReason: undefined,
    approvedBudgets: [],
    fused: false,
    lastProgressWrite: 0,
    running: new Set(),
    arrivals: new Map(),
    failure: undefined,
    errors: {},
    trail: [],
    replay: replayOf(input),
  };
}

/** A replay's recorded visits as queues by node (a node in a loop was visited several times before `fromNode`). */
function replayOf(input: PathwayRunInput): RunState['replay'] {
  const r = input.replay;
  if (!r) return null;
  const queues = new Map<number, RecordedVisit[]>();
  for (const v of r.recorded) {
    const q = queues.get(v.at) ?? [];
    q.push(v);
    queues.set(v.at, q);
  }
  const from = input.graph.nodes.findIndex((n, i) => (n.id ?? String(i)) === r.fromNode);
  return { queues, from, ...(r.input ? { input: r.input } : {}) };
}

/** The recorded visit a replay takes for this visit of node `at` (none: the node runs). */
export function takeRecorded(run: RunState, at: number): RecordedVisit | undefined {
  return run.replay?.queues.get(at)?.shift();
}

/** The designer's id of node `at` (graphs compiled before ids were kept: its index). */
export const nodeId = (run: Pick<RunState, 'input'>, at: number): string => run.input.graph.nodes[at]?.id ?? String(at);

/** The status an accepted answer gives the intervention (as the record will say). */
const answeredState = (kind: OpenIntervention['kind'], action: string): OpenIntervention['state'] =>
  kind === 'pause'
    ? 'answered'
    : /^(approve|approved)$/.test(action)
      ? 'approved'
      : /^(reject|rejected)$/.test(action)
        ? 'rejected'
        : 'answered';

/** The run's query, signals and the `answer` Update, over its state. */
export function listen(run: RunState): void {
  wf.setHandler(statusQuery, () => run.status);
  wf.setHandler(cancelSignal, ({ reason }) => void (run.cancelReason = reason));
  // Legacy signals (histories recorded before answers were Updates); nothing sends them any more.
  wf.setHandler(interventionResponseSignal, (a) => void run.answers.set(a.interventionId, a));
  wf.setHandler(resumeSignal, () => void (run.resumed = true));
  // Every answer (respond, public token, job input, resume) is this Update: the validator refuses
  // what the run does not wait for; the handler marks it answered at once (a racing answer or the
  // expiry timer then finds it taken), records it, and only then returns to the caller.
  wf.setHandler(
    answerUpdate,
    async (a) => {
      const o = run.open.get(a.interventionId)!;
      o.state = answeredState(o.kind, a.action);
      run.answers.set(a.interventionId, a);
      const recorded = await steps.recordAnswer(run.input, a, o.kind);
      return { interventionId: a.interventionId, status: recorded };
    },
    {
      validator: (a) => {
        const o = run.open.get(a.interventionId);
        if (!o) throw new Error('This run is not waiting for that intervention');
        if (o.state !== 'pending') throw new Error(`Intervention is already ${o.state}`);
        if (!o.options.includes(a.action)) throw new Error(`action must be one of: ${o.options.join(', ')}`);
      },
    },
  );
}
