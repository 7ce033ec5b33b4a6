/**
 * One entry of a Redis stream as the SSE layer sends it: the entry id is the cursor. Entries of
 * the resource feed also carry `seq`, their partition's own counter (src/kernel/feed.ts).
 */
export interface StreamEntry {
  id: string;
  data: Record<string, unknown>;
  seq?: number;
}

/** Entries as XRANGE/XREAD return them (`[id, [field, value, …]]`), their `data` parsed. */
export function parseEntries(raw: [string, string[]][]): StreamEntry[] {
  return raw.map(([id, fields]) => {
    const i = fields.indexOf('data');
    let data: Record<string, unknown> = {};
    try {
      data = i >= 0 ? (JSON.parse(fields[i + 1]) as Record<string, unknown>) : {};
    } catch {
      /* keep empty */
    }
    const j = fields.indexOf('seq');
    return j >= 0 ? { id, data, seq: Number(fields[j + 1]) } : { id, data };
  });
}

/** Orders two stream ids (`<ms>-<n>`): negative when a is older. */
export function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-');
  const [bm, bs] = b.split('-');
  return am.length - bm.length || (am < bm ? -1 : am > bm ? 1 : 0) || Number(as) - Number(bs);
}
