/**
 * Workflow interceptors bundled with every workflow (worker/index.ts `workflowInterceptorModules`):
 * OpenTelemetry spans for the workflow run and for each activity and child workflow it starts,
 * continuing the trace the starter put in the headers. Spans leave the sandbox through the
 * `exporter` sink the worker registers.
 *
 * Always on, whether or not spans are exported: span ids come from the workflow's seeded random
 * source, so turning the interceptors on or off between runs of one workflow would change the ids
 * it draws (`uuid4()` for child workflows) on replay, a non-determinism error.
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new OpenTelemetryInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
