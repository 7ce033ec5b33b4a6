/**
 * Workflow interceptors bundled with every workflow (worker/index.ts `workflowInterceptorModules`):
 * OpenTelemetry spans for the workflow run and for each activity and child workflow it starts,
 * continuing the trace the starter put in the start headers. Spans leave the sandbox through the
 * `exporter` sink the worker registers (dropped there when tracing is off).
 *
 * Determinism: span ids are drawn from the workflow's seeded random source, the one `uuid4()`
 * uses for child workflow ids. So tracing is decided once per workflow, from its own history: on
 * when its start carries the trace header (every start through our clients since tracing exists,
 * including child workflows of traced runs), off otherwise (runs started before, Schedules). A run
 * in flight across the deploy that added tracing replays exactly as it ran
 * (test/workflows/replay.test.ts replays histories recorded before). The interceptors are made when
 * a traced workflow first calls them (at its start): making them draws nothing from the random
 * source, so a traced run's span ids are the same as when they were made with the workflow.
 */
import type * as OtelWorkflow from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type {
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptorsFactory,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { lazyGated } from '../src/kernel/temporal/gated.js';

/** The header Temporal's OpenTelemetry client and outbound interceptors write (`TRACE_HEADER`). */
const TRACE_HEADER = '_tracer-data';

/**
 * The OpenTelemetry workflow interceptors' module, evaluated when a traced workflow first needs it.
 * Every module a workflow imports is evaluated again for each new run (Temporal's reusable V8
 * context keeps a module cache per workflow), and this one brings OpenTelemetry's API, core and
 * trace SDK: ~8 ms of worker CPU before the first command of every run, traced or not (measured,
 * docs/decisions.md "Workflow bundle"). Webpack bundles a literal `require` and runs it at the call.
 */
/* eslint-disable @typescript-eslint/no-require-imports -- deferred evaluation inside the workflow bundle (see above) */
const otel = (): typeof OtelWorkflow =>
  require('@temporalio/interceptors-opentelemetry/lib/workflow/index.js') as typeof OtelWorkflow;
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * The methods each OpenTelemetry interceptor implements (their prototypes' methods; test/unit/
 * workflow-interceptors.test.ts checks these lists against the installed package, so an SDK
 * upgrade that adds one fails there rather than dropping spans).
 */
export const OTEL_METHODS = {
  inbound: ['execute', 'handleSignal', 'handleUpdate', 'validateUpdate', 'handleQuery'],
  outbound: [
    'scheduleActivity',
    'scheduleLocalActivity',
    'startNexusOperation',
    'startChildWorkflowExecution',
    'continueAsNew',
    'signalWorkflow',
    'getLogAttributes',
    'getMetricTags',
  ],
  internals: ['dispose'],
} as const;

export const interceptors: WorkflowInterceptorsFactory = () => {
  let traced = false;
  const on = () => traced;
  // Made on first use, in a traced workflow only: untraced runs never evaluate OpenTelemetry.
  const inbound = lazyGated<WorkflowInboundCallsInterceptor>(
    OTEL_METHODS.inbound,
    () => new (otel().OpenTelemetryInboundInterceptor)(),
    on,
  );
  const execute = inbound.execute!.bind(inbound);
  return {
    inbound: [
      {
        ...inbound,
        // The workflow's start decides, before its first command: the header is in its history.
        execute: (input: WorkflowExecuteInput, next) => {
          traced = input.headers[TRACE_HEADER] !== undefined;
          return execute(input, next);
        },
      },
    ],
    outbound: [
      lazyGated<WorkflowOutboundCallsInterceptor>(
        OTEL_METHODS.outbound,
        () => new (otel().OpenTelemetryOutboundInterceptor)(),
        on,
      ),
    ],
    internals: [
      lazyGated<WorkflowInternalsInterceptor>(
        OTEL_METHODS.internals,
        () => new (otel().OpenTelemetryInternalsInterceptor)(),
        on,
      ),
    ],
  };
};
