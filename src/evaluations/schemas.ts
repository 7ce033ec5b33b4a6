import { z } from 'zod';
import { JsonObject, PageTotal, Uuid, pageFields, paging } from '../kernel/schemas.js';

/** Bounds of datasets and experiments (docs/evaluations.md). */
export const EVAL_LIMITS = {
  /** Items of one dataset at any version. */
  datasetItems: 10_000,
  /** Items one request adds (POST …/items). */
  itemsPerRequest: 1_000,
  /** The JSON text of one item (input, expected and metadata together). */
  itemBytes: 64 * 1024,
  /** An import's text (JSONL or CSV); the JSON body of a request is at most 5 MB. */
  importChars: 4 * 1024 * 1024,
  /** Items one experiment runs (its workflow's history holds a few events per item). */
  experimentItems: 1_000,
  evaluators: 10,
  concurrency: 20,
  /** Experiments one compare lines up. */
  compare: 5,
};

const Name = z.string().trim().min(1).max(200);
const Description = z.string().trim().max(2000).nullable();

export const DatasetParams = z.object({ id: Uuid });
export const DatasetItemParams = z.object({ id: Uuid, item_id: Uuid });

export const DatasetItemInput = z
  .strictObject({
    input: z
      .unknown()
      .refine((v) => v !== undefined, 'input is required')
      .meta({
        description: "any JSON: what the target gets (a string is a neuron's message; an object a pathway's input)",
      }),
    expected: z.unknown().optional().meta({ description: 'any JSON: the reference answer evaluators compare with' }),
    metadata: JsonObject.optional(),
  })
  .meta({ id: 'DatasetItemInput' });
export type DatasetItemInput = z.infer<typeof DatasetItemInput>;

export const DatasetCreateBody = z
  .strictObject({
    name: Name,
    description: Description.optional(),
    items: z.array(DatasetItemInput).max(EVAL_LIMITS.itemsPerRequest).optional(),
  })
  .meta({ id: 'DatasetCreateBody' });
export type DatasetCreateBody = z.infer<typeof DatasetCreateBody>;

export const DatasetUpdateBody = z
  .strictObject({ name: Name.optional(), description: Description.optional() })
  .refine((b) => b.name !== undefined || b.description !== undefined, 'send name or description')
  .meta({ id: 'DatasetUpdateBody' });
export type DatasetUpdateBody = z.infer<typeof DatasetUpdateBody>;

export const DatasetItemsBody = z
  .union([
    z.strictObject({ items: z.array(DatasetItemInput).min(1).max(EVAL_LIMITS.itemsPerRequest) }),
    DatasetItemInput,
  ])
  .meta({ id: 'DatasetItemsBody', description: 'one item, or `{ items: [...] }`' });
export type DatasetItemsBody = z.infer<typeof DatasetItemsBody>;

export const DatasetImportBody = z
  .strictObject({
    format: z.enum(['jsonl', 'csv']),
    content: z.string().min(1).max(EVAL_LIMITS.importChars).meta({
      description:
        'jsonl: one `{ input, expected?, metadata? }` per line; csv: a header row with an `input` column, optional `expected`, other columns become metadata',
    }),
  })
  .meta({ id: 'DatasetImportBody' });
export type DatasetImportBody = z.infer<typeof DatasetImportBody>;

export const DatasetFromJobBody = z
  .strictObject({
    job_id: Uuid,
    expected: z.unknown().optional().meta({ description: "the item's expected value; default: the job's output" }),
    metadata: JsonObject.optional(),
  })
  .meta({ id: 'DatasetFromJobBody' });
export type DatasetFromJobBody = z.infer<typeof DatasetFromJobBody>;

export const DatasetListQuery = z.object({ ...paging(50) });
export const DatasetItemListQuery = z.object({
  ...paging(100, 500),
  version: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: 'the items at this dataset version (default: the current one)' }),
});

export const Dataset = z
  .object({
    id: z.string(),
    brain_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    version: z.number().meta({ description: 'one more at every change to the items' }),
    item_count: z.number(),
    created_by: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Dataset' });
export const DatasetList = z
  .object({ datasets: z.array(Dataset), total: PageTotal, limit: z.number(), offset: z.number(), ...pageFields })
  .meta({ id: 'DatasetList' });

export const DatasetItem = z
  .object({
    id: z.string(),
    input: z.unknown(),
    expected: z.unknown().nullable(),
    metadata: JsonObject.nullable(),
    added_in_version: z.number(),
    removed_in_version: z.number().nullable(),
    source_job_id: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'DatasetItem' });
export const DatasetItemList = z
  .object({
    items: z.array(DatasetItem),
    version: z.number(),
    total: PageTotal,
    limit: z.number(),
    offset: z.number(),
    ...pageFields,
  })
  .meta({ id: 'DatasetItemList' });
export const DatasetItemsAdded = z
  .object({ dataset: Dataset, items: z.array(DatasetItem) })
  .meta({ id: 'DatasetItemsAdded' });

// ---------------------------------------------------------------- evaluators and experiments

const Threshold = z.number().min(0).max(1).optional().meta({
  description: 'the score an item must reach to pass this evaluator (default 1; judge and pathway: 0.5)',
});
const EvalName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  // A name keys the experiment's mean scores as stored and answered: no store operator, path or prototype name.
  .refine((n) => !n.startsWith('$') && !n.includes('.') && n !== '__proto__', {
    message: 'must not start with $, contain a dot or be __proto__',
  })
  .optional()
  .meta({ description: 'default: the type (with its position when repeated); no leading $, no dot' });
const base = { name: EvalName, pass_threshold: Threshold };

export const EvaluatorConfig = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('exact'), ...base, case_sensitive: z.boolean().default(true) }),
    z.strictObject({
      type: z.literal('contains'),
      ...base,
      case_sensitive: z.boolean().default(false),
      value: z
        .string()
        .min(1)
        .max(2000)
        .optional()
        .meta({ description: "what the output must contain (default: the item's expected value)" }),
    }),
    z.strictObject({
      type: z.literal('regex'),
      ...base,
      pattern: z.string().min(1).max(2000),
      flags: z
        .string()
        .regex(/^[ims]*$/, 'flags: only i, m and s')
        .default(''),
    }),
    z.strictObject({ type: z.literal('json_schema'), ...base, schema: JsonObject }),
    z.strictObject({
      type: z.literal('numeric_close'),
      ...base,
      tolerance: z.number().min(0).max(1e12).default(0),
      relative: z.boolean().default(false).meta({ description: 'tolerance as a fraction of the expected value' }),
    }),
    z.strictObject({
      type: z.literal('judge'),
      ...base,
      neuron_id: z.string().min(1).max(200),
      version: z
        .number()
        .int()
        .min(1)
        .optional()
        .meta({ description: "the judge neuron's version (default: its current one)" }),
      rubric: z.string().trim().min(1).max(8000),
    }),
    z.strictObject({
      type: z.literal('pathway'),
      ...base,
      pathway_id: Uuid,
      version: z.number().int().min(1).optional(),
    }),
  ])
  .meta({ id: 'EvaluatorConfig' });
export type EvaluatorConfig = z.infer<typeof EvaluatorConfig>;

const ExperimentTargetBody = z
  .union([
    z.strictObject({ neuron_id: z.string().min(1).max(200), version: z.number().int().min(1).optional() }),
    z.strictObject({ pathway_id: Uuid, version: z.number().int().min(1).optional() }),
  ])
  .meta({ id: 'ExperimentTarget', description: 'a neuron or a pathway at a version (default: its current one)' });

export const ExperimentCreateBody = z
  .strictObject({
    name: Name.optional(),
    dataset_id: Uuid,
    dataset_version: z.number().int().min(1).optional(),
    target: ExperimentTargetBody,
    evaluators: z.array(EvaluatorConfig).min(1).max(EVAL_LIMITS.evaluators),
    concurrency: z.number().int().min(1).max(EVAL_LIMITS.concurrency).default(4),
  })
  .meta({ id: 'ExperimentCreateBody' });
export type ExperimentCreateBody = z.infer<typeof ExperimentCreateBody>;

export const ExperimentParams = z.object({ id: Uuid });
export const ExperimentListQuery = z.object({
  ...paging(50),
  dataset_id: Uuid.optional(),
});
export const ExperimentItemListQuery = z.object({ ...paging(100, 500) });
export const ExperimentCompareQuery = z.object({
  ids: z
    .string()
    .transform((s) => [
      ...new Set(
        s
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      ),
    ])
    .pipe(z.array(Uuid).min(2, 'ids: name at least two experiments').max(EVAL_LIMITS.compare))
    .meta({ description: 'experiment ids, comma separated (2 to 5); the first is the baseline' }),
});

const Aggregates = z
  .object({
    items: z.number(),
    scored: z.number(),
    failed: z.number(),
    pass_rate: z.number().nullable(),
    mean_scores: z.record(z.string(), z.number().nullable()),
    latency_p50_ms: z.number().nullable(),
    latency_p95_ms: z.number().nullable(),
    target_cost_usd: z.number(),
    evaluator_cost_usd: z.number(),
    total_cost_usd: z.number(),
    total_tokens: z.number(),
  })
  .meta({ id: 'ExperimentAggregates' });

export const Experiment = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    brain_id: z.string(),
    dataset_id: z.string(),
    dataset_version: z.number(),
    target: z.object({ kind: z.enum(['neuron', 'pathway']), id: z.string(), version: z.number() }),
    evaluators: z.array(z.record(z.string(), z.unknown())),
    concurrency: z.number(),
    status: z.enum(['pending', 'running', 'completed', 'failed', 'cancelled']),
    progress: z.number().meta({ description: '0–100: the share of items that ended' }),
    current_step: z.string().nullable(),
    failed_reason: z.string().nullable(),
    items_total: z.number(),
    items_done: z.number(),
    aggregates: Aggregates.nullable().meta({ description: 'so far while running; final once ended' }),
    created_by: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'Experiment' });
export const ExperimentList = z
  .object({ experiments: z.array(Experiment), total: PageTotal, limit: z.number(), offset: z.number(), ...pageFields })
  .meta({ id: 'ExperimentList' });

const Score = z.object({
  evaluator: z.string(),
  score: z.number(),
  passed: z.boolean(),
  reason: z.string(),
  job_id: z.string().nullable(),
});
const ExperimentItem = z
  .object({
    item_id: z.string(),
    job_id: z.string(),
    status: z.enum(['running', 'scored', 'failed']),
    input: z.unknown(),
    expected: z.unknown().nullable(),
    output: z.unknown().nullable(),
    error: z.string().nullable(),
    scores: z.array(Score),
    passed: z.boolean(),
    latency_ms: z.number().nullable(),
    input_tokens: z.number(),
    output_tokens: z.number(),
    total_tokens: z.number(),
    cost_usd: z.number(),
    evaluator_cost_usd: z.number(),
  })
  .meta({ id: 'ExperimentItem' });
export const ExperimentItemList = z
  .object({ items: z.array(ExperimentItem), total: PageTotal, limit: z.number(), offset: z.number(), ...pageFields })
  .meta({ id: 'ExperimentItemList' });

export const ExperimentComparison = z
  .object({
    experiments: z.array(Experiment),
    items: z.array(
      z.object({
        item_id: z.string(),
        input: z.unknown(),
        expected: z.unknown().nullable(),
        runs: z.array(
          z
            .object({
              experiment_id: z.string(),
              output: z.unknown().nullable(),
              status: z.string(),
              passed: z.boolean(),
              scores: z.record(z.string(), z.number()),
              latency_ms: z.number().nullable(),
              cost_usd: z.number(),
            })
            .nullable(),
        ),
        changed: z.object({
          output: z.boolean().meta({ description: 'an output differs from the baseline (the first experiment)' }),
          passed: z.boolean(),
          score_deltas: z
            .array(z.record(z.string(), z.number()))
            .meta({ description: 'per experiment after the first: each evaluator score minus the baseline one' }),
        }),
      }),
    ),
  })
  .meta({ id: 'ExperimentComparison' });
