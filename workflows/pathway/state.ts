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
} from '../../src/temporal/definitions.js';
import { steps } from './activities.js';

/** An intervention the run opened, as the run itself sees it: the one arbiter of who answered first. */
export interface OpenIntervention {
  options: string[];
  kind: 'approval' | 'pause' | 'budget';
  state: 'pending' | 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled';
}

/** What expressions and templates see: the run's input, the last value, each node's value and the loop counters. */
export interface RunValues {
  input: Record<string, unknown>;
  last: unknown;
  output: unknown;
  nodes: Record<string, unknown>;
  loops: Record<string, number>;
}

/** A node_finish (and its progress write) waiting to go out with the next node's entries. */
export interface CarriedEntry {
  event: Record<string, unknown>;
  patch: { progress: number; currentStep: string } | null;
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
  carried: CarriedEntry | null;
  lastProgressWrite: number;
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
    carried: null,
    lastProgressWrite: 0,
  };
}

/** The designer's id of node `at` (graphs compiled before ids were kept: its index). */
export const nodeId = (run: Pick<RunState, 'input'>, at: number): string => run.input.graph.nodes[at]?.id ?? String(at);

/** The context an expression or template is evaluated over. */
export const contextOf = (run: RunState) => ({
  input: run.values.input,
  last: run.values.last,
  nodes: run.values.nodes,
  loops: run.values.loops,
});

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
