/*
 * The node types an editor offers and the JSON Schema of each type's `data`, read at run time from
 * the API's own OpenAPI document (GET /v1/openapi.json: `PathwayGraph` is a discriminated union on
 * `type`, one schema per node type). The console keeps no copy of the format: a node type or field
 * the API adds shows up in the editor without a console change. Loaded once per page load.
 */

/** The subset of JSON Schema the API's node schemas use (zod's JSON Schema output). */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  minItems?: number;
  pattern?: string;
  discriminator?: { propertyName: string; mapping?: Record<string, string> };
}

export interface NodeSchemas {
  /** Node types in the document's order (aliases included: input, approval, end). */
  types: string[];
  /** Each type's `data` schema, `$ref`s resolved. */
  data: Record<string, JsonSchema>;
  /** Fields every typed node's data takes (label, description, notes, retry, on_error): shown apart. */
  common: string[];
}

type Doc = { components?: { schemas?: Record<string, JsonSchema> } };

/** Resolves `#/components/schemas/X` references (the document has no cycles in node data). */
function resolve(schema: JsonSchema, all: Record<string, JsonSchema>, depth = 0): JsonSchema {
  if (depth > 20) return {};
  if (schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    return resolve(all[name] ?? {}, all, depth + 1);
  }
  const out: JsonSchema = { ...schema };
  if (schema.properties)
    out.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([k, v]) => [k, resolve(v, all, depth + 1)]),
    );
  if (schema.items) out.items = resolve(schema.items, all, depth + 1);
  if (schema.anyOf) out.anyOf = schema.anyOf.map((s) => resolve(s, all, depth + 1));
  if (schema.oneOf) out.oneOf = schema.oneOf.map((s) => resolve(s, all, depth + 1));
  if (typeof schema.additionalProperties === 'object')
    out.additionalProperties = resolve(schema.additionalProperties, all, depth + 1);
  return out;
}

/** The node schemas of an OpenAPI document (pure: unit-testable without a server). */
export function nodeSchemasOf(doc: Doc): NodeSchemas {
  const all = doc.components?.schemas ?? {};
  const items = all.PathwayGraph?.properties?.nodes?.items;
  const mapping = items?.discriminator?.mapping ?? {};
  const data: Record<string, JsonSchema> = {};
  for (const [type, ref] of Object.entries(mapping)) {
    const node = resolve({ $ref: ref }, all);
    data[type] = node.properties?.data ?? { type: 'object' };
  }
  const typed = Object.values(data).filter((d) => d.properties && Object.keys(d.properties).length > 0);
  const common = typed.length
    ? Object.keys(typed[0].properties!).filter((k) => typed.every((d) => k in d.properties!))
    : [];
  return { types: Object.keys(mapping), data, common };
}

/** The control a form shows for a property (components/SchemaForm.tsx). */
export type FieldKind = 'enum' | 'boolean' | 'number' | 'string' | 'lines' | 'object' | 'json';

const typeOf = (s: JsonSchema): string | undefined =>
  Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;

/**
 * A property's control, from its schema alone: a string enum is a choice, numbers and booleans
 * their inputs, a string a text, an array of strings one item per line, an object with declared
 * (closed) properties a nested form; anything else (free-form objects, unions, arrays of objects)
 * is edited as JSON.
 */
export function kindOf(s: JsonSchema): FieldKind {
  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) return 'enum';
  const t = typeOf(s);
  if (t === 'boolean') return 'boolean';
  if (t === 'integer' || t === 'number') return 'number';
  if (t === 'string' && !s.anyOf && !s.oneOf) return 'string';
  if (t === 'array' && s.items && typeOf(s.items) === 'string' && !s.items.enum) return 'lines';
  if (t === 'object' && s.properties && Object.keys(s.properties).length > 0 && s.additionalProperties === false)
    return 'object';
  return 'json';
}

let loading: Promise<NodeSchemas> | null = null;

/** The node schemas of this API (one fetch per page load; a failure is retried on the next call). */
export function loadNodeSchemas(): Promise<NodeSchemas> {
  loading ??= fetch('/v1/openapi.json')
    .then((r) => {
      if (!r.ok) throw new Error(`GET /v1/openapi.json answered ${r.status}`);
      return r.json() as Promise<Doc>;
    })
    .then(nodeSchemasOf)
    .catch((e: unknown) => {
      loading = null;
      throw e;
    });
  return loading;
}
