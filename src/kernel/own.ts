/**
 * Lookups and writes keyed by text that a request, a stored tenant document, a graph, a header or
 * a model's tool call chose (docs/security.md, "No lookup by request text"). A plain object's
 * `table[key]` answers for `constructor`, `toString`, `__proto__`… from `Object.prototype`, and
 * `obj[key] = v` with `__proto__` replaces the object's prototype: these two helpers never do.
 * Where the keys are a fixed set known at the schema, a zod enum is better (the 400 names the field).
 */

/** `table[key]` when `key` is the table's own property, else undefined (never an inherited member). */
export function own<V>(table: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** Sets `key` as an own, enumerable data property: `__proto__` stays a key like any other, never the prototype. */
export function setOwn<V>(target: Record<string, V>, key: string, value: V): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}
