import { z } from 'zod';
import { JsonObject, Uuid, strictBody } from '../kernel/schemas.js';

const INPUT_GOES_IN_INPUT = 'the run\'s data goes in "input", e.g. {"input": {"amount": 50}}';

export const ExecuteBody = strictBody(
  {
    input: JsonObject.optional(),
    trace_id: Uuid.optional().meta({ description: 'pins engrams and interventions to an existing thread trace' }),
    pathway_version: z.number().int().positive().optional().meta({ description: 'default: the head version' }),
  },
  INPUT_GOES_IN_INPUT,
).meta({ id: 'PathwayExecuteBody' });
export type ExecuteBody = z.infer<typeof ExecuteBody>;

const InlineGraph = z.object({ nodes: z.array(z.unknown()), edges: z.array(z.unknown()).optional() });
export const JobCreateBody = strictBody(
  {
    pathway_id: Uuid.optional(),
    pathway: InlineGraph.optional().meta({ description: 'inline graph, id-based or index-based' }),
    input: JsonObject.optional(),
    data: JsonObject.optional(),
    trace_id: Uuid.optional(),
    pathway_version: z.number().int().positive().optional(),
  },
  INPUT_GOES_IN_INPUT,
)
  .refine(
    (b) => (b.pathway_id === undefined) !== (b.pathway === undefined),
    'exactly one of pathway_id or pathway is required',
  )
  .meta({ id: 'JobCreateBody' });
export type JobCreateBody = z.infer<typeof JobCreateBody>;

export const JobInputBody = z
  .object({
    workspace_id: Uuid.optional(),
    input: z.object({
      type: z.literal('intervention_response'),
      interventionId: Uuid,
      action: z.string().trim().min(1).max(100),
      comment: z.string().max(10_000).optional(),
      fields: JsonObject.optional(),
    }),
  })
  .meta({ id: 'JobInputBody' });
export type JobInputBody = z.infer<typeof JobInputBody>;

export const ResumeBody = z
  .object({
    action: z.string().trim().min(1).max(100).optional(),
    comment: z.string().max(10_000).optional(),
    fields: JsonObject.optional(),
  })
  .meta({ id: 'JobResumeBody' });
export type ResumeBody = z.infer<typeof ResumeBody>;

export const ReplayBody = strictBody(
  {
    from_node: z.string().min(1, 'from_node is required').max(200).meta({
      description:
        "the node the replay runs from (the designer's node id); every node visit before it is taken from the run",
    }),
    input: JsonObject.optional().meta({
      description: "what flows into from_node in place of its recorded input (the previous node's value)",
    }),
  },
  'a replay takes "from_node" and optionally "input", e.g. {"from_node": "notify", "input": {"amount": 50}}',
).meta({ id: 'JobReplayBody' });
export type ReplayBody = z.infer<typeof ReplayBody>;

/** POST /v1/pathways/:id/execute: the pathway's id, or its slug in the caller's brain (as neurons' invoke takes a name). */
export const PathwayRefParams = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .meta({ description: "the pathway's id, or its slug (its name as a slug) among the brain's pathways" }),
});
