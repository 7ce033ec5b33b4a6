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
 * (test/workflows/replay.test.ts replays histories recorded before).
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type { WorkflowExecuteInput, WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { gated } from '../src/temporal/gated.js';

/** The header Temporal's OpenTelemetry client and outbound interceptors write (`TRACE_HEADER`). */
const TRACE_HEADER = '_tracer-data';

export const interceptors: WorkflowInterceptorsFactory = () => {
  let traced = false;
  const on = () => traced;
  const inbound = gated(new OpenTelemetryInboundInterceptor(), on);
  const execute = inbound.execute!.bind(inbound);
  return {
    inbound: [{
      ...inbound,
      // The workflow's start decides, before its first command: the header is in its history.
      execute: (input: WorkflowExecuteInput, next) => {
        traced = input.headers[TRACE_HEADER] !== undefined;
        return execute(input, next);
      },
    }],
    outbound: [gated(new OpenTelemetryOutboundInterceptor(), on)],
    internals: [gated(new OpenTelemetryInternalsInterceptor(), on)],
  };
};
