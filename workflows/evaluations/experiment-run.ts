import * as wf from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { ChildRun, ExperimentRunInput, ItemOutcome } from '../../src/evaluations/index.js';
import {
  BrainIdKey,
  JobKindKey,
  NeuronIdKey,
  PathwayIdKey,
  TraceIdKey,
  WorkspaceIdKey,
  statusQuery,
  type LiveStatus,
  type PathwayRun,
} from '../../src/temporal/definitions.js';
import { neuronRun } from '../runs/neuron-run.js';

const steps = wf.proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500ms', maximumInterval: '10s', maximumAttempts: 20 },
});

/** The message of the innermost cause (a child's own failure, not its wrapper's). */
function causeOf(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e && e.cause) e = e.cause as { message?: string; cause?: unknown };
  return e?.message || 'the run failed';
}

/**
 * Runs a child run (its job id is its workflow id). Temporal records the start in this workflow's
 * history, so a workflow replayed after a worker died never starts the same run twice: it waits
 * for the child it started. Answers the failure's message, or null when the run completed.
 */
async function runChild(run: ChildRun): Promise<string | null> {
  const attrs = [
    { key: WorkspaceIdKey, value: run.input.scope.workspaceId },
    { key: TraceIdKey, value: run.input.traceId },
    ...(run.input.scope.brainId ? [{ key: BrainIdKey, value: run.input.scope.brainId }] : []),
  ];
  try {
    if (run.kind === 'neuron')
      await wf.executeChild(neuronRun, {
        workflowId: run.jobId,
        args: [run.input],
        typedSearchAttributes: [
          ...attrs,
          { key: JobKindKey, value: 'neuron' },
          { key: NeuronIdKey, value: run.neuronId },
        ],
        staticSummary: run.summary,
      });
    else
      await wf.executeChild<PathwayRun>('pathwayRun', {
        workflowId: run.jobId,
        args: [run.input],
        typedSearchAttributes: [
          ...attrs,
          { key: JobKindKey, value: 'pathway' },
          { key: PathwayIdKey, value: run.pathwayId },
        ],
        staticSummary: run.summary,
      });
    return null;
  } catch (err) {
    if (wf.isCancellation(err)) throw err;
    return causeOf(err);
  }
}

/**
 * An experiment (docs/evaluations.md): every item of the dataset version runs as a child job of
 * the target, `concurrency` at a time; each item is then scored by every evaluator (judge and
 * pathway evaluators as child jobs of their own) and recorded once. Everything is in this
 * workflow's history: after a worker dies, the next one replays it and goes on where it was, each
 * item's run started exactly once. Cancelling the workflow cancels the runs in flight.
 */
export async function experimentRun(ref: ExperimentRunInput): Promise<{ status: string }> {
  const status: LiveStatus = { status: 'running', progress: 0, currentStep: 'planning' };
  wf.setHandler(statusQuery, () => status);
  try {
    const plan = await steps.experimentBegin(ref);
    const ended = new Set(plan.ended);
    const todo = plan.itemIds.filter((id) => !ended.has(id));
    let done = plan.itemIds.length - todo.length;
    const total = plan.itemIds.length;
    status.currentStep = `running ${total} items`;
    const runItem = async (itemId: string) => {
      const target = await steps.experimentPrepareItem(ref, itemId, wf.uuid4());
      const failed = await runChild(target);
      const evaluatorJobs: ItemOutcome['evaluatorJobs'] = [];
      if (!failed)
        for (const name of plan.jobEvaluators) {
          const ev = await steps.experimentPrepareEvaluator(ref, itemId, target.jobId, name, wf.uuid4());
          evaluatorJobs.push({ name, jobId: ev.jobId, failed: await runChild(ev) });
        }
      await steps.experimentScoreItem({ ref, itemId, jobId: target.jobId, failed, evaluatorJobs });
      done++;
      status.progress = Math.floor((done / Math.max(1, total)) * 100);
      status.currentStep = `${done} of ${total} items scored`;
    };
    let next = 0;
    const lane = async () => {
      while (next < todo.length) await runItem(todo[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(plan.concurrency, Math.max(1, todo.length)) }, lane));
    status.currentStep = 'aggregating';
    await steps.experimentFinish(ref, 'completed', null);
    status.status = 'completed';
    status.currentStep = 'completed';
    return { status: 'completed' };
  } catch (err) {
    const cancelled = wf.isCancellation(err);
    const reason = cancelled ? 'cancelled' : causeOf(err);
    await wf.CancellationScope.nonCancellable(() =>
      steps.experimentFinish(ref, cancelled ? 'cancelled' : 'failed', cancelled ? null : reason),
    );
    status.status = 'failed';
    status.currentStep = cancelled ? 'cancelled' : 'failed';
    return { status: status.currentStep };
  }
}
