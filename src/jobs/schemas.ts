import { z } from 'zod';
import { JsonObject, Uuid, paging, PageTotal, optionalPageFields } from '../kernel/schemas.js';

const JobState = z.enum(['pending', 'running', 'completed', 'failed', 'waiting', 'paused']);

export const JobIdParams = z.object({ jobId: Uuid });
export const JobListQuery = z
  .object({
    pathway_id: Uuid.optional(),
    receptor_id: Uuid.optional(),
    neuron_id: Uuid.optional(),
    parent_job_id: Uuid.optional().meta({
      description: 'the child jobs of this job (pathway, map and delegated runs)',
    }),
    status: JobState.optional(),
    ...paging(20),
  })
  .meta({ id: 'JobListQuery' });
export type JobListQuery = z.infer<typeof JobListQuery>;
export const JobStreamQuery = z.object({ after: z.string().optional() });

export const Job = z
  .object({
    job_id: z.string(),
    kind: z.string(),
    status: JobState,
    progress: z.number(),
    current_step: z.string().nullable(),
    failedReason: z.string().optional(),
    result: z.unknown().optional(),
    waitingFor: JsonObject.optional(),
    neuron_id: z.string().nullable(),
    pathway_id: z.string().nullable(),
    pathway_version: z.number().int().nullable().meta({
      description:
        'the pathway version a pathway run runs (pinned at its start); null for other jobs and inline graphs',
    }),
    input: z.unknown().optional().meta({
      description: "a pathway run's input as it started (GET /v1/jobs/:jobId and /status only, not in lists)",
    }),
    receptor_id: z.string().nullable(),
    trace_id: z.string().nullable(),
    waits_for_job_id: z.string().nullable().optional().meta({
      description:
        "a pending neuron run that waits for another run on its trace to end (double-texting, multitask_strategy enqueue, interrupt or rollback): that run's job",
    }),
    parent_job_id: z.string().nullable(),
    replay_of: z
      .string()
      .optional()
      .meta({ description: 'set on a replay (POST /v1/jobs/:jobId/replay): the run it replays' }),
    from_node: z.string().optional().meta({ description: 'set on a replay: the node it ran from' }),
    created_at: z.string(),
    processed_at: z.string().nullable(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'Job' });
export const JobList = z.object({
  jobs: z.array(Job),
  total: PageTotal,
  limit: z.number(),
  offset: z.number(),
  ...optionalPageFields,
});
export const JobAccepted = z
  .object({ job_id: z.string(), status: z.literal('pending'), trace_id: z.string().nullable().optional() })
  .meta({ id: 'JobAccepted' });

/** neuron_task_options: only trace_type (or its camel alias) is accepted; other persistence aliases are 400. */
export const NeuronTaskOptions = z
  .object({
    trace_type: z.enum(['thread', 'system']).optional(),
    traceType: z.enum(['thread', 'system']).optional(),
  })
  .strict()
  .refine((o) => !(o.trace_type && o.traceType && o.trace_type !== o.traceType), 'trace_type and traceType disagree');

/** What an invoke does on a trace whose run has not ended (docs/neurons.md, "Double-texting"). */
export const MultitaskStrategy = z.enum(['reject', 'enqueue', 'interrupt', 'rollback']).meta({
  id: 'MultitaskStrategy',
  description:
    "what an invoke on a trace whose run has not ended does: reject (409 TRACE_BUSY naming that run's job), enqueue (default: the run starts when the running one ends, in arrival order; its job is pending with waits_for_job_id), interrupt (the running run is cancelled, its partial reply kept and marked interrupted, then this run starts), rollback (the running run is cancelled and its engrams removed from the trace, then this run starts)",
});

export type MultitaskStrategy = z.infer<typeof MultitaskStrategy>;

export const InvokeBody = z
  .object({
    message: z.string().max(200_000).optional(),
    data: JsonObject.optional(),
    trace_id: Uuid.optional(),
    stream: z.boolean().default(false),
    neuron_task_options: NeuronTaskOptions.optional(),
    client_nonce: z.string().min(1).max(200).optional(),
    multitask_strategy: MultitaskStrategy.optional(),
    version: z.number().int().min(1).optional().meta({
      description:
        'runs this version of the neuron (its config, model and charter as recorded) instead of the head; 404 when the neuron has no such version (docs/neurons.md, "Running an earlier version")',
    }),
  })
  .strict()
  .refine((b) => b.message !== undefined || b.data !== undefined, 'message or data is required')
  .meta({ id: 'InvokeBody' });
export type InvokeBody = z.infer<typeof InvokeBody>;
export const InvokeAccepted = z.object({
  job_id: z.string(),
  status: JobState.meta({
    description: 'pending for a new run; the current status when client_nonce matched an earlier one',
  }),
  user_engram_id: z.string().nullable(),
  trace_id: z.string(),
});
