import { z } from 'zod';

/**
 * neuron_config as persisted (its fields are the `neuron_config` schema in the API reference). Unknown fields are stripped
 * on write; engagement_resource_id is refused outright (it must never be passed in config).
 */
export const NeuronConfig = z.object({
  system_prompt: z
    .string()
    .max(262_144)
    .optional()
    .meta({ description: 'the charter: Purpose, Domain, Ownership, Delegation' }),
  resource_ids: z.array(z.uuid()).max(500).optional(),
  vault_path: z.string().max(1000).optional(),
  sub_neuron_ids: z.array(z.uuid()).max(50).optional(),
  model: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: 'provider/model; a bare name uses the default provider' }),
  fallback_models: z.array(z.string().min(1).max(200)).max(5).optional().meta({
    description:
      'provider/model ids tried in order when the model fails after its retries (docs/neurons.md, "Model fallbacks")',
  }),
  temperature: z.number().min(0).max(2).optional(),
  max_tokens: z.number().int().min(1).max(200_000).optional(),
  tools: z
    .array(z.string().min(1).max(100))
    .max(100)
    .optional()
    .meta({ description: 'built-in tool names enabled for this neuron' }),
  neuron_type: z
    .string()
    .max(50)
    .optional()
    .meta({ description: 'completion marks single-shot structured-output neurons' }),
  output_schema: z
    .record(z.string(), z.unknown())
    .optional()
    .meta({ description: 'JSON schema hint for completion neurons' }),
  tool_approval: z
    .object({
      tools: z
        .union([z.literal('all'), z.array(z.string().min(1).max(100)).min(1).max(100)])
        .meta({ description: 'the tool names whose calls wait for a person, or "all"' }),
      timeout_s: z
        .number()
        .int()
        .min(1)
        .max(30 * 24 * 3600)
        .optional()
        .meta({ description: 'seconds a call waits for an answer before it counts as rejected; none: no limit' }),
    })
    .optional()
    .meta({
      description:
        'tool calls that wait for a person: each such call opens a tool_call intervention (approve, edit, reject)',
    }),
});
export type NeuronConfig = z.infer<typeof NeuronConfig>;

/** Point-in-time copy of a neuron (versions and pinned runs read this). */
export interface NeuronSnapshot {
  id: string;
  version: number;
  name: string;
  description: string;
  brainId: string;
  neuron_config: NeuronConfig;
  is_active: boolean;
  scope: 'brain' | 'workspace' | 'core';
}
