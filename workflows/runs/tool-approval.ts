import type { ToolApproval } from '../../src/temporal/definitions.js';

/** What a redacted argument reads as in the intervention (src/runs/tool-approval.ts writes it). */
const REDACTED = '[redacted]';

/** Whether neuron_config.tool_approval makes a call of `name` wait for a person. */
export function needsApproval(approval: ToolApproval | undefined, name: string): boolean {
  if (!approval) return false;
  return approval.tools === 'all' || approval.tools.includes(name);
}

/** What a person may answer a tool call with, and a budget pause with. */
export const TOOL_CALL_ACTIONS = ['approve', 'edit', 'reject'];

/**
 * The arguments an `edit` runs the tool with: the person's, where a value they left redacted (they
 * saw `[redacted]`, never the value) keeps the model's value at the same place.
 */
export function withEdits(original: string, edited: Record<string, unknown>): string {
  let model: unknown = {};
  try {
    model = JSON.parse(original || '{}');
  } catch {
    /* nothing to restore from */
  }
  return JSON.stringify(restore(edited, model));
}

function restore(edited: unknown, model: unknown): unknown {
  if (edited === REDACTED) return model === undefined || model === null || typeof model === 'object' ? edited : model;
  if (Array.isArray(edited)) return edited.map((v, i) => restore(v, Array.isArray(model) ? model[i] : undefined));
  if (edited && typeof edited === 'object') {
    const from = model && typeof model === 'object' && !Array.isArray(model) ? (model as Record<string, unknown>) : {};
    return Object.fromEntries(
      Object.entries(edited).map(([k, v]) => [k, restore(v, Object.hasOwn(from, k) ? from[k] : undefined)]),
    );
  }
  return edited;
}

/** The result the model reads for a call that did not run (a person's rejection, or no answer in time). */
export function refusal(name: string, comment: string | undefined, timeoutS?: number): Record<string, unknown> {
  return timeoutS !== undefined
    ? {
        error: `${name} did not run: no one approved the call within ${timeoutS} s, so it counts as rejected`,
        rejected: true,
        reason: 'timeout',
      }
    : {
        error: `${name} did not run: a person rejected the call`,
        rejected: true,
        reason: 'rejected',
        ...(comment ? { comment } : {}),
      };
}
