/**
 * Pathway graph shapes (zod) and the helpers around them; the interpreter's run-time helpers are in
 * ./walk.ts (re-exported here), the one pathways module workflows import, so the interpreter walks
 * exactly the shapes the API validated. Validation lives in ./validate.ts and compilation in
 * ./compile.ts; both accept either graph form.
 */
import { z } from 'zod';
import {
  branchHandles,
  MAP_DEFAULT_CONCURRENCY,
  MAP_MAX_CONCURRENCY,
  MAP_MAX_ITEMS,
  HTTP_DEFAULT_TIMEOUT_MS,
  HTTP_MAX_TIMEOUT_MS,
  WHILE_DEFAULT_MAX_ITERATIONS,
  WHILE_MAX_ITERATIONS_CAP,
  type NodeType,
} from './walk.js';

export {
  ENTRY_TYPES,
  NODE_TYPES,
  branchHandles,
  canonicalType,
  mapConcurrency,
  nextEdges,
  whileMaxIterations,
  type NodeType,
} from './walk.js';

// ---------------------------------------------------------------- node data contracts

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const quote = (v: unknown) => JSON.stringify(v) ?? String(v);
const needs = (what: string) => (iss: { input?: unknown }) =>
  iss.input === undefined ? `missing; ${what}` : `${quote(iss.input)} is invalid; ${what}`;

/** Any UUID-shaped id (no version check: ids minted elsewhere, e.g. fixtures, need not be v4). */
export const NeuronId = z
  .string({ error: needs('expected a neuron UUID') })
  .regex(UUID_RE, { error: (iss) => `${quote(iss.input)} is not a UUID` });

/**
 * Keys every node's data may carry besides its own: what editors show (`label`, `description`,
 * `notes`) and the node's error policy (`retry` for nodes that do I/O; `on_error`: `fail`, the
 * default, fails the run; `continue` makes `{ error }` the node's value; `branch` follows the
 * node's `error` edges).
 */
const NodePolicyFields = {
  label: z.string().optional().meta({ description: "the editor's label; not used by runs" }),
  description: z.string().optional().meta({ description: "the editor's description; not used by runs" }),
  notes: z.string().optional().meta({ description: 'free text for the designer; not used by runs' }),
  retry: z
    .strictObject({
      max_attempts: z.int().min(1).max(10).optional(),
      initial_interval_ms: z.int().min(1).max(3_600_000).optional(),
      backoff: z.number().min(1).max(10).optional(),
    })
    .optional()
    .meta({ description: "retry policy of the node's activities or child runs (I/O nodes)" }),
  on_error: z
    .enum(['fail', 'continue', 'branch'])
    .optional()
    .meta({ description: 'fail (default) | continue: the value is { error } | branch: follow the "error" edges' }),
};

/**
 * A node type's data: its own keys plus NodePolicyFields; any other key is an error that names it
 * and lists what the type takes (a typo such as `expression` on an output node is not ignored).
 */
const nodeData = <S extends z.core.$ZodLooseShape>(own: S) => {
  const known = [...Object.keys(own), ...Object.keys(NodePolicyFields)];
  return z.strictObject(
    { ...NodePolicyFields, ...own },
    {
      error: (iss) =>
        iss.code === 'unrecognized_keys'
          ? `unknown key${iss.keys.length > 1 ? 's' : ''} ${iss.keys.map((k) => `"${k}"`).join(', ')} (this node type takes ${known.join(', ')})`
          : undefined,
    },
  );
};

/** Nodes whose data is free-form (start, input): extra keys are kept for the editor. */
const FreeNodeData = z.looseObject({});

/** `neuron`: runs one neuron. `message` is a template over the run context; omitted, the current value is sent. */
const NeuronNodeData = nodeData({
  neuron_id: NeuronId.meta({ description: 'neuron to run; must exist in the caller workspace and brain' }),
  message: z.string().optional().meta({ description: 'template for the message sent to the neuron' }),
}).meta({ id: 'PathwayNeuronNodeData' });
type NeuronNodeData = z.infer<typeof NeuronNodeData>;

/** `if`: evaluates `condition` and follows the `true` or `false` edge. */
const IfNodeData = nodeData({
  condition: z.string({ error: needs('expected an expression string') }).min(1, 'must not be empty'),
}).meta({ id: 'PathwayIfNodeData' });
type IfNodeData = z.infer<typeof IfNodeData>;

/** `while`: follows `body` while `condition` holds, at most `max_iterations` times per entry, then `done`. */
const WhileNodeData = nodeData({
  condition: z.string({ error: needs('expected an expression string') }).min(1, 'must not be empty'),
  max_iterations: z
    .int()
    .min(1)
    .max(WHILE_MAX_ITERATIONS_CAP)
    .optional()
    .meta({
      description: `loop bound; default ${WHILE_DEFAULT_MAX_ITERATIONS}, hard cap ${WHILE_MAX_ITERATIONS_CAP}`,
    }),
}).meta({ id: 'PathwayWhileNodeData' });
type WhileNodeData = z.infer<typeof WhileNodeData>;

/** `classify`: asks a neuron (or a bare model) to pick one of `categories` and follows the edge of that name. */
const ClassifyNodeData = nodeData({
  categories: z
    .array(z.string().min(1), { error: needs('expected a non-empty array of category names') })
    .min(1, 'must list at least one category')
    .refine((c) => new Set(c).size === c.length, 'category names must be unique'),
  neuron_id: NeuronId.optional(),
  model: z.string().min(1).optional().meta({ description: "'provider/model' used when no neuron_id is given" }),
  input: z.string().optional().meta({ description: 'template for the text to classify; default the current value' }),
}).meta({ id: 'PathwayClassifyNodeData' });
type ClassifyNodeData = z.infer<typeof ClassifyNodeData>;

/** `human` (alias `approval`): pauses the run until input arrives; the reply becomes the current value. */
const HumanNodeData = nodeData({
  prompt: z.string().optional(),
  title: z.string().optional(),
  options: z
    .array(z.union([z.string(), z.looseObject({ label: z.string(), value: z.unknown().optional() })]))
    .optional(),
  expires_in_s: z.number().positive().optional().meta({ description: 'the wait fails after this many seconds' }),
  pause: z
    .boolean()
    .optional()
    .meta({ description: 'a pause node: the run waits until it is resumed (the only answer is resume)' }),
}).meta({ id: 'PathwayHumanNodeData' });
type HumanNodeData = z.infer<typeof HumanNodeData>;

/** `transform`: replaces the current value with an expression result or a rendered template. */
const TransformNodeData = nodeData({ expression: z.string().optional(), template: z.string().optional() }).meta({
  id: 'PathwayTransformNodeData',
});
type TransformNodeData = z.infer<typeof TransformNodeData>;

/** `delay`: a durable timer of `seconds` or `ms` (one is required). */
const DelayNodeData = nodeData({ seconds: z.number().min(0).optional(), ms: z.number().min(0).optional() })
  .refine((d) => d.seconds !== undefined || d.ms !== undefined, 'seconds or ms is required')
  .meta({ id: 'PathwayDelayNodeData' });
type DelayNodeData = z.infer<typeof DelayNodeData>;

/** `output` records the run result (the run continues along its edge, if any); `end` also stops the run. */
const OutputNodeData = nodeData({
  value: z.string().optional().meta({ description: 'expression; default the current value' }),
}).meta({ id: 'PathwayOutputNodeData' });
type OutputNodeData = z.infer<typeof OutputNodeData>;

/** `join`: waits for the parallel branches that reach it (`all`, the default) or takes the first (`any`, the others are cancelled); its value is the arrivals keyed by the node each came from. */
const JoinNodeData = nodeData({
  mode: z
    .enum(['all', 'any'], { error: needs('expected "all" or "any"') })
    .optional()
    .meta({
      description: 'all (default): every branch that can reach the join; any: the first, the others cancelled',
    }),
}).meta({ id: 'PathwayJoinNodeData' });
type JoinNodeData = z.infer<typeof JoinNodeData>;

/** A JSON value (the `http` node's body when it is not a string: its string leaves are templates). */
type Json = string | number | boolean | null | Json[] | { [k: string]: Json };
const isJson = (v: unknown): v is Json =>
  v === null ||
  ['string', 'number', 'boolean'].includes(typeof v) ||
  (Array.isArray(v) ? v.every(isJson) : typeof v === 'object' && Object.values(v as object).every(isJson));
/** Checked as JSON, published as any value (a recursive schema does not survive client generation). */
const JsonValue = z.unknown().refine(isJson, 'expected a JSON value');

/**
 * A field people write either way: an expression string (`"{ 'customer': item.name }"`), or an
 * object or array whose string leaves are templates (`{ "customer": "{{ item.name }}" }`).
 */
const ExpressionOrTemplates = z.union([z.string(), z.array(JsonValue), z.record(z.string(), JsonValue)], {
  error: needs('expected an expression string, or an object or array whose strings are templates'),
});

/** A stored pathway's id (UUID-shaped, as neuron ids). */
export const PathwayId = z
  .string({ error: needs('expected a pathway UUID') })
  .regex(UUID_RE, { error: (iss) => `${quote(iss.input)} is not a UUID` });

const PathwayVersion = z
  .int({ error: needs('expected a version number') })
  .min(1)
  .optional()
  .meta({ description: 'the pathway version to run; default the head version when the calling run starts (pinned)' });

/**
 * `pathway`: runs another pathway as a child run (its own job, linked to this one). `input` is an
 * expression over the run context whose value is the child's input; omitted, the current value
 * (an object as it is, anything else as `{ value }`). The node's value is the child's output.
 */
export const PathwayNodeData = nodeData({
  pathway_id: PathwayId.meta({ description: "pathway to run; must exist in the caller's workspace (and brain)" }),
  version: PathwayVersion,
  input: ExpressionOrTemplates.optional().meta({
    description:
      "the child's input: an expression, or an object or array whose strings are templates; default the current value",
  }),
}).meta({ id: 'PathwayPathwayNodeData' });
export type PathwayNodeData = z.infer<typeof PathwayNodeData>;

/**
 * `map`: runs a neuron (`neuron_id`, with `message` a template) or a pathway (`pathway_id`, with
 * `input` an expression) once per item of `items` (an expression that yields an array), as child
 * runs, at most `concurrency` at a time; `item` and `index` are in the context of `message` and
 * `input`. Its value is the results in item order.
 */
export const MapNodeData = nodeData({
  items: z
    .string({ error: needs('expected an expression that yields an array') })
    .min(1, 'must not be empty')
    .meta({
      description: `expression over the run context yielding the array to map over (at most ${MAP_MAX_ITEMS})`,
    }),
  neuron_id: NeuronId.optional().meta({ description: 'neuron to run per item (or pathway_id)' }),
  message: z.string().optional().meta({ description: 'neuron: template of the message per item; default {{ item }}' }),
  pathway_id: PathwayId.optional().meta({ description: 'pathway to run per item (or neuron_id)' }),
  version: PathwayVersion,
  input: ExpressionOrTemplates.optional().meta({
    description:
      "pathway: each child's input, an expression or an object or array whose strings are templates; default the item ({ value: item } if not an object)",
  }),
  concurrency: z
    .int()
    .min(1)
    .max(MAP_MAX_CONCURRENCY)
    .optional()
    .meta({
      description: `items running at once; default ${MAP_DEFAULT_CONCURRENCY}, at most ${MAP_MAX_CONCURRENCY}`,
    }),
  on_item_error: z
    .enum(['fail', 'continue'], { error: needs('expected "fail" or "continue"') })
    .optional()
    .meta({
      description:
        "fail (default): cancel the items still running and fail the node; continue: that item's result is { error }",
    }),
})
  .superRefine((d, ctx) => {
    const add = (message: string, path: string[] = []) => ctx.addIssue({ code: 'custom', message, path });
    if ((d.neuron_id === undefined) === (d.pathway_id === undefined))
      add('exactly one of neuron_id (run a neuron per item) or pathway_id (run a pathway per item) is required');
    if (d.neuron_id !== undefined && d.input !== undefined)
      add('input is for a map over a pathway; a neuron gets message', ['input']);
    if (d.neuron_id !== undefined && d.version !== undefined)
      add('version is for a map over a pathway (a neuron is pinned at start)', ['version']);
    if (d.pathway_id !== undefined && d.message !== undefined)
      add('message is for a map over a neuron; a pathway gets input', ['message']);
  })
  .meta({ id: 'PathwayMapNodeData' });
export type MapNodeData = z.infer<typeof MapNodeData>;

const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;
const HEADER_NAME_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * `http`: one HTTP request through the outbound guard, in an activity. `url`, the header values and
 * the body's strings are templates over the run's data; `{{ secrets.NAME }}` names a workspace
 * secret, rendered only inside the activity. The value is `{ status, headers, body }`.
 */
export const HttpNodeData = nodeData({
  method: z
    .enum(HTTP_METHODS, { error: needs(`expected one of ${HTTP_METHODS.join(', ')}`) })
    .default('GET')
    .meta({ description: 'default GET' }),
  url: z
    .string({ error: needs('expected a URL template') })
    .min(1, 'must not be empty')
    .meta({ description: 'template; http or https, checked by the outbound guard' }),
  headers: z
    .record(z.string().regex(HEADER_NAME_RE), z.string({ error: needs('expected a header value template') }), {
      error: (iss) =>
        iss.code === 'invalid_key' ? `${quote(iss.input)} is not a header name` : 'expected an object of headers',
    })
    .optional()
    .meta({ description: 'header name → value template' }),
  body: JsonValue.optional().meta({
    description: 'a template string sent as is, or a JSON value (its strings are templates) sent as JSON',
  }),
  timeout_ms: z
    .int()
    .min(1)
    .max(HTTP_MAX_TIMEOUT_MS)
    .default(HTTP_DEFAULT_TIMEOUT_MS)
    .meta({ description: `per attempt; default ${HTTP_DEFAULT_TIMEOUT_MS}, at most ${HTTP_MAX_TIMEOUT_MS}` }),
  expect: z
    .array(z.int().min(100).max(599))
    .min(1, 'must list at least one status')
    .optional()
    .meta({ description: 'statuses that count as success; default any 2xx' }),
})
  .refine((d) => d.body === undefined || (d.method !== 'GET' && d.method !== 'HEAD'), {
    message: 'a GET or HEAD request has no body',
    path: ['body'],
  })
  .meta({ id: 'PathwayHttpNodeData' });
export type HttpNodeData = z.infer<typeof HttpNodeData>;

/** The data contract of each canonical node type, used by validation and available to the interpreter. */
export const NODE_DATA: Readonly<Record<NodeType, z.ZodType>> = {
  start: FreeNodeData,
  input: FreeNodeData,
  neuron: NeuronNodeData,
  if: IfNodeData,
  while: WhileNodeData,
  classify: ClassifyNodeData,
  human: HumanNodeData,
  transform: TransformNodeData,
  delay: DelayNodeData,
  output: OutputNodeData,
  end: OutputNodeData,
  join: JoinNodeData,
  map: MapNodeData,
  http: HttpNodeData,
  pathway: PathwayNodeData,
};

// ---------------------------------------------------------------- the documented graph format

/** One node of the documented format: its id, its type and that type's data (aliases included). */
const documentedNode = (type: string | [string, ...string[]], data: z.ZodType, id: string) =>
  z
    .looseObject({
      id: z.string().min(1).meta({ description: "the node's id: stream entries, results and current_step name it" }),
      type: Array.isArray(type) ? z.enum(type) : z.literal(type),
      data: data.optional(),
    })
    .meta({ id });

/**
 * The id-based graph format, one schema per node type (a discriminated union on `type`), as the
 * OpenAPI document publishes it for `pathway_graph`. Requests are checked by the same per-type
 * data schemas (NODE_DATA) in validation, which names the node id and the field of each problem.
 * Node-level keys other than id, type and data (an editor's position, selection, …) are kept.
 */
export const PathwayGraphFormat = z
  .object({
    nodes: z.array(
      z.discriminatedUnion('type', [
        documentedNode(['start', 'input'], FreeNodeData, 'PathwayStartNode'),
        documentedNode('transform', TransformNodeData, 'PathwayTransformNode'),
        documentedNode('if', IfNodeData, 'PathwayIfNode'),
        documentedNode('while', WhileNodeData, 'PathwayWhileNode'),
        documentedNode('delay', DelayNodeData, 'PathwayDelayNode'),
        documentedNode('neuron', NeuronNodeData, 'PathwayNeuronNode'),
        documentedNode('classify', ClassifyNodeData, 'PathwayClassifyNode'),
        documentedNode(['human', 'approval'], HumanNodeData, 'PathwayHumanNode'),
        documentedNode(['output', 'end'], OutputNodeData, 'PathwayOutputNode'),
        documentedNode('join', JoinNodeData, 'PathwayJoinNode'),
        documentedNode('map', MapNodeData, 'PathwayMapNode'),
        documentedNode('http', HttpNodeData, 'PathwayHttpNode'),
        documentedNode('pathway', PathwayNodeData, 'PathwayPathwayNode'),
      ]),
    ),
    edges: z.array(z.lazy(() => GraphEdge)),
  })
  .meta({
    id: 'PathwayGraph',
    // A component of its own (api/openapi.ts) that request fields reference: the format is what a
    // client sends, so it is rendered as input (fields with defaults are optional).
    unusedIO: 'input',
    description:
      'A pathway graph: nodes (one schema per type) and edges { source, target, handle? }; several plain edges leaving a node run in parallel. See docs/pathways.md.',
  });

// ---------------------------------------------------------------- id-based graph (stored pathways, editor)

const NodeData = z.record(z.string(), z.unknown());

/** A node of the id-based graph. Unknown keys (position, selected, …) are kept so editor round trips lose nothing. */
const GraphNode = z
  .looseObject({
    id: z.string().min(1),
    type: z.string().min(1),
    data: NodeData.nullish().meta({ description: 'type-specific settings, see the Pathway*NodeData schemas' }),
  })
  .meta({ id: 'PathwayGraphNode' });
type GraphNode = z.infer<typeof GraphNode>;

/**
 * An edge of the id-based graph. The branch name is `handle`, or React Flow's `sourceHandle` when `handle` is absent
 * (`handle` wins when both are set). `label` is display text only and never selects a branch.
 */
export const GraphEdge = z
  .looseObject({
    id: z.string().nullish(),
    source: z.string().min(1),
    target: z.string().min(1),
    handle: z.string().nullish(),
    sourceHandle: z.string().nullish(),
    label: z.string().nullish(),
  })
  .meta({ id: 'PathwayGraphEdge' });
export type GraphEdge = z.infer<typeof GraphEdge>;

/** The branch an id-based edge takes (see GraphEdge), or undefined. */
export function edgeHandle(edge: Pick<GraphEdge, 'handle' | 'sourceHandle'>): string | undefined {
  return edge.handle ?? edge.sourceHandle ?? undefined;
}

/** Id-based graph as stored on a pathway and sent to POST /v1/pathways/validate; both lists default to empty. */
export const IdGraph = z
  .object({
    nodes: z.array(GraphNode).default([]),
    edges: z.array(GraphEdge).default([]),
  })
  .meta({ id: 'PathwayIdGraph' });
export type IdGraph = z.infer<typeof IdGraph>;
/** What callers may send for an IdGraph (lists optional). */
export type IdGraphInput = z.input<typeof IdGraph>;

// ---------------------------------------------------------------- index-based graph (compiled, inline jobs)

/** A compiled node: its index is its array position; no id. */
const CompiledNode = z
  .object({
    id: z.string().min(1).optional().meta({ description: "the designer's node id (an index graph's: its position)" }),
    type: z.string().min(1),
    data: NodeData.default({}),
  })
  .meta({ id: 'PathwayCompiledNode' });
type CompiledNode = z.infer<typeof CompiledNode>;

/** `[source, target, handle?]`; target -1 is terminal. A null handle (JSON of `undefined`) means none. */
export const CompiledEdge = z
  .tuple([z.int().min(-1), z.int().min(-1), z.string().nullish()])
  .meta({ id: 'PathwayCompiledEdge' });
export type CompiledEdge = z.infer<typeof CompiledEdge>;

/**
 * The index-based graph the workflow interpreter walks. After compileGraph: node 0 is the entry, every node has its
 * outgoing edges (terminals as -1, handles only on branches), and types are canonical.
 */
export const CompiledGraph = z
  .object({
    nodes: z.array(CompiledNode).default([]),
    edges: z.array(CompiledEdge).default([]),
  })
  .meta({ id: 'PathwayCompiledGraph' });
export type CompiledGraph = z.infer<typeof CompiledGraph>;

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * Shape sniff: true when `x` is an index-based graph (nodes without ids, edges as arrays), so callers such as
 * POST /v1/jobs can accept either form. It does not validate; validateGraph/compileGraph do.
 */
export function isIndexGraph(x: unknown): x is { nodes: unknown[]; edges?: unknown[] } {
  if (!isRecord(x) || !Array.isArray(x.nodes)) return false;
  if (x.edges !== undefined && !(Array.isArray(x.edges) && x.edges.every(Array.isArray))) return false;
  // Edges as index pairs make it an index graph (a compiled graph keeps its nodes' ids); without edges, nodes without ids do.
  if (Array.isArray(x.edges) && x.edges.length > 0) return true;
  return x.nodes.every((n) => !(isRecord(n) && 'id' in n));
}

/**
 * Converts an index-based graph to the id form for the editor: node ids are the indices ("0", "1", …). Terminal
 * edges are implicit in the id form and dropped, except a branch that explicitly ends the run, which points at one
 * added `end` node with id "end" (otherwise validation would report the branch missing).
 */
export function toIdGraph(compiled: CompiledGraph): IdGraph {
  const nodes: GraphNode[] = compiled.nodes.map((n, i) => ({
    id: n.id ?? String(i),
    type: n.type,
    data: { ...n.data },
  }));
  const edges: GraphEdge[] = [];
  let needsEnd = false;
  compiled.edges.forEach(([s, t, h], k) => {
    const handle = h ?? undefined;
    if (t === -1) {
      const node = compiled.nodes[s];
      if (!node || handle === undefined || branchHandles(node.type, node.data) === null) return;
      needsEnd = true;
    }
    edges.push({
      id: `e${k}`,
      source: nodes[s]?.id ?? String(s),
      target: t === -1 ? 'end' : (nodes[t]?.id ?? String(t)),
      ...(handle !== undefined && { handle }),
    });
  });
  if (needsEnd) nodes.push({ id: 'end', type: 'end', data: {} });
  return { nodes, edges };
}

/** Per-node data patches: key = node id (id form) or array index (index form), value shallow-merged into `data`. */
export const GraphOverrides = z.record(z.string(), z.record(z.string(), z.unknown())).meta({ id: 'PathwayOverrides' });
export type GraphOverrides = z.infer<typeof GraphOverrides>;

type OverridableNode = { id?: unknown; data?: Record<string, unknown> | null };

/**
 * Applies POST /v1/pathways/compile `overrides` (e.g. swap a neuron or a prompt for a preview run) without touching
 * the stored graph. A node is addressed by its string `id`, or by its index when it has none. Merging is shallow;
 * a key matching no node is reported, not ignored, so a typo is visible. Returns a new graph.
 */
export function applyOverrides<G extends { nodes: readonly OverridableNode[] }>(
  graph: G,
  overrides: GraphOverrides,
): { graph: G; errors: string[] } {
  const keyOf = (n: OverridableNode, i: number) => (typeof n.id === 'string' ? n.id : String(i));
  const keys = new Set(graph.nodes.map(keyOf));
  const errors: string[] = [];
  for (const [key, patch] of Object.entries(overrides)) {
    if (!keys.has(key)) errors.push(`overrides: no node "${key}"`);
    else if (!isRecord(patch)) errors.push(`overrides: node "${key}": expected an object of data fields`);
  }
  const nodes = graph.nodes.map((n, i) => {
    const patch = overrides[keyOf(n, i)];
    return isRecord(patch) ? { ...n, data: { ...(n.data ?? {}), ...patch } } : n;
  });
  return { graph: { ...graph, nodes }, errors };
}
