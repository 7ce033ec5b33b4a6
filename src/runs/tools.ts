import type { ToolCall } from '../llm/types.js';
import { JSON_MAX_DEPTH, nestsDeeperThan } from '../kernel/json-depth.js';
import { OutboundBlocked } from '../net/guard.js';
import type { PreparedRunData } from '../temporal/definitions.js';
import { BUILTIN_TOOLS } from '../tools/builtin.js';
import { TransientToolError, type ToolBinding } from '../tools/remote.js';
import { TOOL_ATTEMPTS, TOOL_PREVIEW, preview, type RunContext, type RunDeps } from './shared.js';
import { own } from '../kernel/own.js';
import { redactArguments, redactResult } from './tool-approval.js';

/** A tool call whose integration the user has not connected (the model is told, never retried). */
class NotConnected extends Error {}

/** Tool calls of a run's model turns. */
export const createToolSteps = (ctx: RunContext) => ({
  /**
   * Runs one built-in tool call and stores its result as a step. Whatever goes wrong with the
   * call (arguments that are not JSON, an unknown tool, a tool that throws on its input) is
   * the model's to read as a tool error, never an activity retry. Returns a preview.
   */
  runTool: (jobId: string, call: ToolCall, turn = 0, attempt = 1): Promise<string> =>
    runTool(ctx.d, jobId, call, turn, attempt),
});

async function runTool(d: RunDeps, jobId: string, call: ToolCall, turn: number, attempt: number): Promise<string> {
  let args: Record<string, unknown> | null = null;
  try {
    args = JSON.parse(call.arguments || '{}') as Record<string, unknown>;
  } catch {
    /* reported below */
  }
  const tool = own(BUILTIN_TOOLS, call.name);
  const context = tool ? null : await d.runLog.context(jobId);
  const binding = context?.bindings ? own(context.bindings, call.name) : undefined;
  let result: string;
  if (!args || typeof args !== 'object' || Array.isArray(args))
    result = JSON.stringify({ error: 'arguments are not a valid JSON object' });
  else if (nestsDeeperThan(args, JSON_MAX_DEPTH))
    result = JSON.stringify({ error: `arguments: nested deeper than ${JSON_MAX_DEPTH} levels` });
  else if (binding) result = await runBound(d, { jobId, call, turn, attempt, args, binding, context });
  else if (!tool)
    result = JSON.stringify({ error: `tool ${call.name} is not one of the tools offered to this neuron` });
  else {
    try {
      result = await tool.run(args);
    } catch (e) {
      result = JSON.stringify({ error: `${call.name} failed: ${(e as Error).message || 'error'}` });
    }
  }
  await d.runLog.putTool(jobId, { turn, callId: call.id, name: call.name, content: result });
  // The job stream is read by whoever follows the job: credentials in the call and its result are
  // redacted there, as in a tool call's intervention (the model reads the result as it came).
  await d.jobs.emit(jobId, {
    type: 'tool',
    name: call.name,
    arguments: redactArguments(args ?? call.arguments),
    result: preview(redactResult(result), TOOL_PREVIEW),
  });
  return preview(result, TOOL_PREVIEW);
}

/** A reflex tool call (HTTP or MCP), with the caller's connection token when its integration needs one. */
async function runBound(
  d: RunDeps,
  c: {
    jobId: string;
    call: ToolCall;
    turn: number;
    attempt: number;
    args: Record<string, unknown>;
    binding: ToolBinding;
    context: PreparedRunData | null;
  },
): Promise<string> {
  const { jobId, call, binding } = c;
  try {
    const token = binding.integrationId ? await connectionToken(d, jobId, call, binding, c.context) : undefined;
    return await d.remote.run(binding, c.args, `${jobId}:${c.turn}:${call.id}`, token);
  } catch (e) {
    // Transient failures are retried by the activity; the last attempt tells the model.
    if (e instanceof TransientToolError && c.attempt < TOOL_ATTEMPTS) throw e;
    return JSON.stringify({
      error:
        e instanceof OutboundBlocked || e instanceof TransientToolError || e instanceof NotConnected
          ? e.message
          : `${call.name} failed: ${(e as Error).message || 'error'}`,
      ...(e instanceof NotConnected ? { not_connected: true } : {}),
    });
  }
}

/** The run's caller's token for the binding's integration; NotConnected (and the connect link on the job stream) without one. */
async function connectionToken(
  d: RunDeps,
  jobId: string,
  call: ToolCall,
  binding: ToolBinding & { integrationId?: string },
  context: PreparedRunData | null,
): Promise<string> {
  const integrationId = binding.integrationId ?? '';
  const job = await d.jobs.repoFind(jobId);
  const who = {
    workspaceId: job?.workspaceId ?? '',
    userId: context?.attribution?.userId ?? null,
    apiKeyId: context?.attribution?.apiKeyId ?? null,
  };
  const token = (await d.connections.tokenFor(who, integrationId)) ?? undefined;
  if (token) return token;
  // The model hears "not connected"; the person following the job gets the link to connect.
  await d.jobs.emit(jobId, {
    type: 'connection_required',
    reflex_id: binding.reflexId,
    integration_id: integrationId,
    connect: { method: 'POST', path: `/v1/reflexes/${binding.reflexId}/connect` },
  });
  throw new NotConnected(
    `${call.name} needs a connected ${integrationId} account, and the user has not connected one: ask them to connect it (POST /v1/reflexes/${binding.reflexId}/connect), then try again`,
  );
}
