import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { humanOptions, nextEdges, whileMaxIterations } from '../src/pathways/walk.js';
import {
  BrainIdKey,
  JobKindKey,
  NeuronIdKey,
  TraceIdKey,
  WorkspaceIdKey,
  answerUpdate,
  cancelSignal,
  interventionResponseSignal,
  resumeSignal,
  statusQuery,
  type InterventionAnswer,
  type LiveStatus,
  type NeuronRunInput,
  type PathwayRunInput,
  type PathwayRunResult,
  type RunGraph,
} from '../src/temporal/definitions.js';
import { recordFailure } from './failures.js';
import { neuronRun } from './neuron-run.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 10 },
});
// Expression evaluation and stream/progress writes are short: local activities avoid a server
// round trip per node (the per-node overhead the benchmark measures).
const local = wf.proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200ms', maximumInterval: '5s', maximumAttempts: 10 },
});

const PROGRESS_WRITE_MS = 1000;

type Answer = InterventionAnswer;
/** An intervention the run opened, as the run itself sees it: the one arbiter of who answered first. */
interface OpenIntervention {
  options: string[];
  kind: 'approval' | 'pause' | 'budget';
  state: 'pending' | 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled';
}

/** The status an accepted answer gives the intervention (as the record will say). */
const answeredState = (kind: OpenIntervention['kind'], action: string): OpenIntervention['state'] =>
  kind === 'pause'
    ? 'answered'
    : /^(approve|approved)$/.test(action)
      ? 'approved'
      : /^(reject|rejected)$/.test(action)
        ? 'rejected'
        : 'answered';

/**
 * Interprets a compiled pathway graph deterministically (after Temporal's dsl-interpreter sample):
 * node types that do I/O call activities, neuron nodes run neuronRun as child workflows, a
 * human node waits for a signal (with an expiry timer), delays are durable Temporal timers.
 */
export async function pathwayRun(input: PathwayRunInput): Promise<PathwayRunResult> {
  const g: RunGraph = input.graph;
  const status: LiveStatus = { status: 'running', progress: 0, currentStep: 'starting', waitingFor: null };
  const answers = new Map<string, Answer>();
  let resumed = false;
  let cancelReason: string | undefined;
  const open = new Map<string, OpenIntervention>();
  wf.setHandler(statusQuery, () => status);
  wf.setHandler(cancelSignal, ({ reason }) => void (cancelReason = reason));
  // Legacy signals (histories recorded before answers were Updates); nothing sends them any more.
  wf.setHandler(interventionResponseSignal, (a) => void answers.set(a.interventionId, a));
  wf.setHandler(resumeSignal, () => void (resumed = true));
  // Every answer (respond, public token, job input, resume) is this Update: the validator refuses
  // what the run does not wait for; the handler marks it answered at once (a racing answer or the
  // expiry timer then finds it taken), records it, and only then returns to the caller.
  wf.setHandler(
    answerUpdate,
    async (a) => {
      const o = open.get(a.interventionId)!;
      o.state = answeredState(o.kind, a.action);
      answers.set(a.interventionId, a);
      const recorded = await steps.recordAnswer(input, a, o.kind);
      return { interventionId: a.interventionId, status: recorded };
    },
    {
      validator: (a) => {
        const o = open.get(a.interventionId);
        if (!o) throw new Error('This run is not waiting for that intervention');
        if (o.state !== 'pending') throw new Error(`Intervention is already ${o.state}`);
        if (!o.options.includes(a.action)) throw new Error(`action must be one of: ${o.options.join(', ')}`);
      },
    },
  );

  const state: {
    input: Record<string, unknown>;
    last: unknown;
    output: unknown;
    nodes: Record<string, unknown>;
    loops: Record<string, number>;
  } = {
    input: input.input,
    last: input.input,
    output: undefined,
    nodes: {},
    loops: {},
  };
  const visited: number[] = [];
  /** Budgets an admin let this run go beyond (classify nodes; neuron nodes are runs of their own). */
  const approvedBudgets: string[] = [];
  let lastProgressWrite = 0;
  const ctx = () => ({ input: state.input, last: state.last, nodes: state.nodes, loops: state.loops });

  try {
    // Runs started since this patch send a node's stream entries with its expression in one local
    // activity: the previous node's node_finish and this node's node_start go out together, with the
    // evaluation of a transform or if node (one hop per node instead of three). Earlier runs replay
    // the hops they made.
    const fused = wf.patched('pathway-fused-node-steps');
    /** A node_finish (and its progress write) waiting to go out with the next node's entries. */
    let carried: { event: Record<string, unknown>; patch: { progress: number; currentStep: string } | null } | null =
      null;
    await steps.startPathwayRun(input);
    let at = g.nodes.length > 0 ? 0 : -1;
    while (at >= 0) {
      if (visited.length >= input.maxSteps)
        throw wf.ApplicationFailure.nonRetryable(`pathway exceeded ${input.maxSteps} node visits`, 'MAX_STEPS');
      const node = g.nodes[at];
      const label = `node ${at} (${node.type})`;
      visited.push(at);
      status.currentStep = label;
      status.progress = Math.min(95, Math.round((new Set(visited).size * 100) / Math.max(1, g.nodes.length)));
      const startEvent = { type: 'node_start', node: at, node_type: node.type };
      const entries = carried ? [carried.event, startEvent] : [startEvent];
      const entriesPatch = carried?.patch ?? null;
      carried = null;
      /** An expression evaluated together with the node's entries (fused), or on its own. */
      const evaluateNode = (e: { expression: string; template?: string; context: Record<string, unknown> }) =>
        fused
          ? local.pathwayStep({ jobId: input.jobId, events: entries, patch: entriesPatch, evaluate: e })
          : local.evaluate(e);
      if (!fused) await local.pathwayNodeEvent(input.jobId, startEvent, null);
      else if (node.type !== 'transform' && node.type !== 'if')
        await local.pathwayStep({ jobId: input.jobId, events: entries, patch: entriesPatch });
      let handle: string | undefined;
      let value: unknown = state.last;

      switch (node.type) {
        case 'start':
        case 'input':
          value = state.input;
          break;
        case 'transform': {
          value = await evaluateNode({
            expression: String(node.data.expression ?? ''),
            template: typeof node.data.template === 'string' ? node.data.template : undefined,
            context: ctx(),
          });
          break;
        }
        case 'if': {
          const ok = await evaluateNode({ expression: String(node.data.condition ?? 'false'), context: ctx() });
          handle = ok ? 'true' : 'false';
          break;
        }
        case 'while': {
          const key = String(at);
          const count = state.loops[key] ?? 0;
          const ok =
            count < whileMaxIterations(node.data) &&
            Boolean(await local.evaluate({ expression: String(node.data.condition ?? 'false'), context: ctx() }));
          if (ok) {
            state.loops[key] = count + 1;
            handle = 'body';
          } else {
            handle = 'done';
            value = { iterations: count, last: state.last };
            state.loops[key] = 0;
          }
          break;
        }
        case 'delay': {
          const ms = typeof node.data.ms === 'number' ? node.data.ms : Number(node.data.seconds ?? 0) * 1000;
          await wf.sleep(Math.max(0, ms));
          break;
        }
        case 'neuron': {
          const message = await local.renderMessage({
            template: typeof node.data.message === 'string' ? node.data.message : undefined,
            context: ctx(),
          });
          const reply = await runNeuronNode(input, at, String(node.data.neuron_id), message);
          value = reply.output ?? reply.text;
          break;
        }
        case 'classify': {
          const text = await local.renderMessage({
            template: typeof node.data.input === 'string' ? node.data.input : undefined,
            context: ctx(),
          });
          const ask = () =>
            steps.classify({
              scope: input.scope,
              jobId: input.jobId,
              categories: (node.data.categories as string[]) ?? [],
              text,
              neuronId: typeof node.data.neuron_id === 'string' ? node.data.neuron_id : undefined,
              model: typeof node.data.model === 'string' ? node.data.model : undefined,
              ...(approvedBudgets.length ? { approvedBudgets: [...approvedBudgets] } : {}),
            });
          let out = await ask();
          // A budget with the pause policy stopped the call (docs/usage.md): an admin approves, then the same node asks again.
          while (typeof out !== 'string') {
            const answer = await waitForHuman(
              input,
              at,
              {
                title: 'Budget reached',
                prompt: `${out.budget.message}. Approve to let this run continue beyond it, or reject to stop it.`,
                options: ['approve', 'reject'],
              },
              status,
              answers,
              open,
              () => false,
              () => undefined,
              'budget',
            );
            await wf.condition(wf.allHandlersFinished); // the answer is recorded before a rejection fails the run
            if (answer.action !== 'approve')
              throw wf.ApplicationFailure.nonRetryable(
                `${out.budget.message}; an admin declined to go beyond it`,
                'BUDGET_EXCEEDED',
              );
            approvedBudgets.push(out.budget.budgetId);
            out = await ask();
          }
          handle = out;
          value = { category: handle, input: text };
          break;
        }
        case 'human': {
          const answer = await waitForHuman(
            input,
            at,
            node.data,
            status,
            answers,
            open,
            () => resumed,
            () => {
              resumed = false;
            },
          );
          handle = answer.action;
          value = {
            action: answer.action,
            comment: answer.comment ?? null,
            fields: answer.fields ?? null,
            by: answer.by ?? null,
          };
          break;
        }
        case 'output':
        case 'end': {
          if (typeof node.data.value === 'string' && node.data.value !== '')
            value = await local.evaluate({ expression: node.data.value, context: ctx() });
          state.output = value;
          break;
        }
        default:
          throw wf.ApplicationFailure.nonRetryable(`unknown node type ${node.type}`, 'BAD_GRAPH');
      }
      state.last = value;
      state.nodes[String(at)] = value;
      // The read model's progress is written at most every PROGRESS_WRITE_MS (GET status merges the
      // live `status` query while the run is active, so it stays exact); Date.now() is replay-safe here.
      const writeProgress = Date.now() - lastProgressWrite >= PROGRESS_WRITE_MS;
      if (writeProgress) lastProgressWrite = Date.now();
      const finishEvent = {
        type: 'node_finish',
        node: at,
        node_type: node.type,
        ...(handle !== undefined ? { handle } : {}),
      };
      const progressPatch = writeProgress ? { progress: status.progress, currentStep: label } : null;
      if (fused) carried = { event: finishEvent, patch: progressPatch };
      else await local.pathwayNodeEvent(input.jobId, finishEvent, progressPatch);
      at = node.type === 'end' ? -1 : nextEdges(g, at, handle);
    }
    if (carried) await local.pathwayStep({ jobId: input.jobId, events: [carried.event], patch: carried.patch });
    const result: PathwayRunResult = {
      output: state.output === undefined ? state.last : state.output,
      last: state.last,
      nodes: state.nodes,
      visited,
      pathwayId: input.pathwayId,
      pathwayVersion: input.pathwayVersion,
      traceId: input.traceId,
    };
    status.currentStep = 'completed';
    await steps.finishPathwayRun(input, result);
    status.status = 'completed';
    status.progress = 100;
    await wf.condition(wf.allHandlersFinished);
    return result;
  } catch (err) {
    status.status = 'failed';
    for (const o of open.values()) if (o.state === 'pending') o.state = 'cancelled';
    return recordFailure(err, cancelReason, (reason) => steps.failPathwayRun(input, reason));
  }
}

/** Creates the intervention, sets the job waiting and blocks until an answer, a resume or expiry. */
async function waitForHuman(
  input: PathwayRunInput,
  at: number,
  data: Record<string, unknown>,
  status: LiveStatus,
  answers: Map<string, Answer>,
  open: Map<string, OpenIntervention>,
  isResumed: () => boolean,
  clearResume: () => void,
  kindOverride?: 'budget',
): Promise<Answer> {
  const interventionId = wf.uuid4();
  const pause = data.pause === true;
  const options = pause ? ['resume'] : humanOptions(data);
  const kind: OpenIntervention['kind'] = kindOverride ?? (pause ? 'pause' : 'approval');
  const expiresInS = typeof data.expires_in_s === 'number' ? data.expires_in_s : undefined;
  // The read model gets the workflow's own progress and step, so list and status agree while waiting.
  status.currentStep =
    kind === 'budget'
      ? `node ${at} (classify): waiting for budget approval`
      : `node ${at} (human): ${pause ? 'paused' : 'waiting'}`;
  const waitingFor = await steps.openIntervention(input, {
    id: interventionId,
    nodeIndex: at,
    progress: status.progress,
    currentStep: status.currentStep,
    kind,
    options,
    expiresInS,
    title: String(data.title ?? (pause ? 'Paused' : 'Approval required')),
    prompt: String(data.prompt ?? ''),
  });
  status.status = pause ? 'paused' : 'waiting';
  status.waitingFor = waitingFor;
  open.set(interventionId, { options, kind, state: 'pending' });
  clearResume();
  const ready = () => answers.has(interventionId) || (pause && isResumed());
  // condition(fn, undefined) would take the timeout overload and expire at once: call the right overload.
  const arrived = expiresInS ? await wf.condition(ready, expiresInS * 1000) : (await wf.condition(ready), true);
  status.waitingFor = null;
  if (!arrived && !answers.has(interventionId)) {
    // The timer won: from now on the validator refuses answers, then the record says so.
    open.get(interventionId)!.state = 'expired';
    await steps.expireIntervention(input, interventionId);
    throw wf.ApplicationFailure.nonRetryable(`intervention ${interventionId} expired`, 'INTERVENTION_EXPIRED');
  }
  status.status = 'running';
  const answer = answers.get(interventionId) ?? { interventionId, action: 'resume' };
  await local.pathwayNodeEvent(
    input.jobId,
    { type: 'intervention_answered', intervention_id: interventionId, action: answer.action },
    { status: 'running', waitingFor: null },
  );
  return answer;
}

/** A neuron node runs the neuron as a child workflow with pathway persistence (turns on the run's trace). */
async function runNeuronNode(input: PathwayRunInput, at: number, neuronId: string, message: string) {
  // Pinned at start (later edits of the neuron do not change a running pathway); inputs recorded before pins ask.
  const version = input.neuronVersions?.[String(at)] ?? (await steps.neuronVersion(input.scope, neuronId));
  const childJobId = wf.uuid4();
  const childInput: NeuronRunInput = {
    jobId: childJobId,
    scope: input.scope,
    neuronId,
    neuronVersion: version,
    traceId: input.traceId,
    traceType: 'thread',
    message,
    data: undefined,
    userEngramId: null,
    depth: 1,
    maxTurns: 8,
    parentJobId: input.jobId,
    rootJobId: input.jobId,
    pathwayContext: { pathwayId: input.pathwayId ?? 'inline', nodeIndex: at },
  };
  return wf.executeChild(neuronRun, {
    workflowId: childJobId,
    args: [childInput],
    typedSearchAttributes: [
      { key: WorkspaceIdKey, value: input.scope.workspaceId },
      { key: JobKindKey, value: 'neuron' },
      { key: NeuronIdKey, value: neuronId },
      { key: TraceIdKey, value: input.traceId },
      ...(input.scope.brainId ? [{ key: BrainIdKey, value: input.scope.brainId }] : []),
    ],
  });
}
