import type { z } from 'zod';
import type { JobRecord, Job } from '../../src/jobs/index.js';

/**
 * Wire shape of a job (GET /v1/jobs/:id/status and list items). `withInput`: the single-job reads
 * carry a pathway run's input; lists leave it out (it may be large, and a list does not show it).
 */
export function presentJob(j: JobRecord, opts: { withInput?: boolean } = {}): z.input<typeof Job> {
  const { result, waitingFor } = j;
  return {
    job_id: j._id,
    kind: j.kind,
    status: j.status,
    progress: j.progress ?? 0,
    current_step: j.currentStep ?? null,
    ...(j.failedReason ? { failedReason: j.failedReason } : {}),
    ...(j.status === 'completed' && result !== undefined ? { result } : {}),
    ...((j.status === 'waiting' || j.status === 'paused') && waitingFor ? { waitingFor } : {}),
    neuron_id: j.neuronId ?? null,
    pathway_id: j.pathwayId ?? null,
    pathway_version: j.pathwayVersion ?? null,
    ...(opts.withInput && j.input !== undefined ? { input: j.input } : {}),
    receptor_id: j.receptorId ?? null,
    trace_id: j.traceId ?? null,
    ...(j.status === 'pending' && j.waitsFor ? { waits_for_job_id: j.waitsFor } : {}),
    parent_job_id: j.parentJobId ?? null,
    ...(j.replay ? { replay_of: j.replay.of, from_node: j.replay.fromNode } : {}),
    created_at: j.createdAt.toISOString(),
    processed_at: j.processedAt?.toISOString() ?? null,
    finished_at: j.finishedAt?.toISOString() ?? null,
  };
}
