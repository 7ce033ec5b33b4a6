/*
 * Two versions of a neuron compared field by field (pure; the agent page's version diff). A field is
 * a top-level setting (name, description, is_active, scope) or a key of neuron_config; values are
 * compared as JSON with sorted keys, so key order never shows as a change.
 */
export interface FieldChange {
  field: string;
  from: unknown;
  to: unknown;
}

export interface NeuronSnapshotLike {
  name: string;
  description: string;
  is_active: boolean;
  scope: string;
  neuron_config: Record<string, unknown>;
}

/** JSON with object keys sorted at every depth (undefined stays undefined). */
function stable(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(
          Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : x,
  );
}

/** Every field whose value differs between `a` and `b`, top-level fields first, then config keys by name. */
export function diffNeurons(a: NeuronSnapshotLike, b: NeuronSnapshotLike): FieldChange[] {
  const out: FieldChange[] = [];
  for (const f of ['name', 'description', 'is_active', 'scope'] as const)
    if (stable(a[f]) !== stable(b[f])) out.push({ field: f, from: a[f], to: b[f] });
  const keys = [...new Set([...Object.keys(a.neuron_config ?? {}), ...Object.keys(b.neuron_config ?? {})])].sort();
  for (const k of keys) {
    const from = a.neuron_config?.[k];
    const to = b.neuron_config?.[k];
    if (stable(from) !== stable(to)) out.push({ field: `neuron_config.${k}`, from, to });
  }
  return out;
}
