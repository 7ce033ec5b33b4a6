import type { z } from 'zod';
import type { EngramRecord, TraceRecord, Engram, Trace } from '../../src/traces/index.js';

/** Wire shape of a trace; every field is listed so a new DB field never leaks. */
export function presentTrace(t: TraceRecord): z.input<typeof Trace> {
  const metadata = t.metadata;
  return {
    // `?? null`: FerretDB 1.x drops null values written by $setOnInsert, so a stored null may read back as missing.
    id: t._id,
    trace_id: t.traceId,
    tenant_id: t.workspaceId,
    user_id: t.userId ?? null,
    api_key_id: t.apiKeyId ?? null,
    synapse_id: t.receptorId ?? null,
    brain_id: t.brainId ?? null,
    neuron_id: t.neuronId ?? null,
    trace_type: t.traceType,
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
    message_count: t.messageCount,
    cost_summary: {
      total_cost_usd: t.cost.totalCostUsd,
      total_tokens: t.cost.totalTokens,
      input_tokens: t.cost.inputTokens,
      output_tokens: t.cost.outputTokens,
    },
    ...(t.title ? { title: t.title } : {}),
    metadata: t.title ? { ...metadata, title: t.title } : metadata,
    ...(t.forkedFrom ? { forked_from: { trace_id: t.forkedFrom.traceId, engram_id: t.forkedFrom.engramId } } : {}),
  };
}

/** Wire shape of an engram (stored message). */
export function presentEngram(e: EngramRecord): z.input<typeof Engram> {
  return {
    id: e._id,
    workspace_id: e.workspaceId,
    created_at: e.createdAt.toISOString(),
    content: e.content,
    content_hash: e.contentHash,
    metadata: e.metadata,
    source_type: e.sourceType,
    source_id: e.sourceId ?? null,
    target_type: e.targetType ?? null,
    target_id: e.targetId ?? null,
    trace_id: e.traceId,
    trace_type: e.traceType,
    memory_ids: e.memoryIds ?? [],
  };
}
