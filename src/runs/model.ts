import type { Blob } from '../kernel/store/codec.js';
import type { ToolCall } from '../llm/types.js';

/**
 * A neuron run's working set, stored by reference (workflow and activity payloads
 * carry ids and small values; docs/decisions.md, "Model turns under real provider behaviour"). The run context holds the prompt, history and tools, written once
 * when the run is prepared; steps hold each model turn attempt's text and tool calls and each
 * tool result. Keys are natural (job, turn, attempt or call), so a retried activity rewrites the
 * same document instead of adding one. Text is stored through the blob codec (FerretDB refuses NUL).
 */
export interface RunContextDoc {
  _id: string;
  workspaceId: string;
  data: Blob;
  createdAt: Date;
  /**
   * How to start the run's workflow, kept until a sweep has seen the workflow exist: an invoke
   * answers 202 once the run is stored and starts its workflow right after, so an API that dies in
   * between leaves this for another (or the restarted) API to start (runs.startPending).
   */
  start?: Blob;
}

/** A stored workflow start (see RunContextDoc.start). */
export interface StoredStart {
  workflowType: string;
  args: unknown[];
  summary?: string;
}
/** One step of a run's working set: a model turn attempt (text and tool calls) or a tool result. */
export interface RunStepDoc {
  _id: string;
  jobId: string;
  kind: 'model' | 'tool';
  turn: number;
  attempt: number | null;
  callId: string | null;
  name: string | null;
  text: Blob;
  toolCalls: Blob | null;
  createdAt: Date;
}

/** A model turn attempt as services see it (decoded). */
export interface ModelStep {
  turn: number;
  attempt: number;
  text: string;
  toolCalls: ToolCall[];
}
/** A tool call's result as services see it (decoded). */
export interface ToolStep {
  turn: number;
  callId: string;
  name: string;
  content: string;
}
