import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Services } from '../src/compose/services.js';
import {
  evaluateExpression,
  mapItems,
  renderTemplate,
  renderTree,
  type MapItemsCall,
  type SubPathwayCall,
  HttpNodeFailure,
  type HttpNodeCall,
} from '../src/pathways/index.js';
import type { JobPatch } from '../src/jobs/index.js';
import type {
  InterventionAnswer,
  PathwayRunInput,
  PathwayRunResult,
  RecordedVisit,
  RunScope,
} from '../src/temporal/definitions.js';
import { permanentOn4xx } from './failures.js';

/** A transform/if/output expression, or a template to render, over the run's context. */
interface NodeExpression {
  expression: string;
  template?: string;
  tree?: unknown;
  context: Record<string, unknown>;
}
const evaluateNode = (x: NodeExpression) =>
  permanentOn4xx(() =>
    x.tree !== undefined
      ? renderTree(x.tree, x.context, true)
      : x.template !== undefined
        ? renderTemplate(x.template, x.context)
        : evaluateExpression(x.expression, x.context),
  );

/** Pathway-run activities: thin adapters over the pathway-run service. */
export const createPathwayActivities = ({ services }: { services: Services }) => ({
  startPathwayRun: (input: PathwayRunInput) => services.pathwayRuns.startRun(input),
  pathwayNodeEvent: (jobId: string, event: Record<string, unknown>, patch: JobPatch | null) =>
    services.pathwayRuns.nodeEvent(jobId, event, patch),
  /**
   * One hop for a node's stream entries and its expression: appends `events` in order (the previous
   * node's node_finish, this node's node_start), applies `patch` once, then evaluates when asked.
   */
  pathwayStep: async (a: {
    jobId: string;
    events: Record<string, unknown>[];
    patch: JobPatch | null;
    evaluate?: NodeExpression;
  }) => {
    for (const [i, e] of a.events.entries())
      await services.pathwayRuns.nodeEvent(a.jobId, e, i === a.events.length - 1 ? a.patch : null);
    return a.evaluate ? evaluateNode(a.evaluate) : null;
  },
  evaluate: (a: NodeExpression) => evaluateNode(a),
  renderMessage: (a: { template?: string; context: Record<string, unknown> }) =>
    permanentOn4xx(() => renderTemplate(a.template, a.context)),
  /** A map node's items, each rendered into its neuron message or pathway input (one hop for all of them). */
  mapItems: (a: MapItemsCall) => permanentOn4xx(() => mapItems(a)),
  /** A pathway or map node's child run input, its job recorded under the parent job. */
  prepareSubPathway: (c: SubPathwayCall) => permanentOn4xx(() => services.pathwayRuns.prepareSubPathway(c)),
  classify: (a: {
    scope: RunScope;
    jobId: string;
    categories: string[];
    text: string;
    neuronId?: string;
    model?: string;
    approvedBudgets?: string[];
  }) => permanentOn4xx(() => services.pathwayRuns.classify({ ...a, attempt: Context.current().info.attempt })),
  openIntervention: (input: PathwayRunInput, spec: Parameters<Services['pathwayRuns']['openIntervention']>[1]) =>
    permanentOn4xx(() => services.pathwayRuns.openIntervention(input, spec)),
  expireIntervention: (input: PathwayRunInput, id: string) => services.pathwayRuns.expireIntervention(input, id),
  recordAnswer: (input: PathwayRunInput, answer: InterventionAnswer, kind: 'approval' | 'pause' | 'budget') =>
    permanentOn4xx(() => services.pathwayRuns.recordAnswer(input, answer, kind)),
  /** `trail`: the run's node visits (absent from runs started before replays), recorded for a replay. */
  finishPathwayRun: (input: PathwayRunInput, result: PathwayRunResult, trail?: RecordedVisit[]) =>
    services.pathwayRuns.finishRun(input, result, trail),
  failPathwayRun: (input: PathwayRunInput, reason: string, trail?: RecordedVisit[]) =>
    services.pathwayRuns.failRun(input, reason, trail),
  /**
   * An http node's request. A failure is retryable when another attempt may answer differently (a
   * 5xx or 429, a network error, a timeout) and non-retryable otherwise (a refused address, a
   * missing secret, an unexpected 4xx); its message is redacted of every secret the call used and
   * carries no cause, so nothing secret reaches the workflow's history.
   */
  pathwayHttp: async (a: HttpNodeCall) => {
    try {
      return await services.pathwayHttp.request(a);
    } catch (e) {
      if (e instanceof HttpNodeFailure)
        throw ApplicationFailure.create({ message: e.message, type: e.type, nonRetryable: !e.retryable });
      throw e;
    }
  },
  neuronVersion: (scope: RunScope, neuronId: string) =>
    permanentOn4xx(() => services.pathwayRuns.neuronVersion(scope, neuronId)),
});
