import type { Collection, Document, Filter, FindOptions, WithId } from 'mongodb';
import { z } from 'zod';
import { validationError } from '../errors.js';
import type { IndexSpec } from './client.js';

/**
 * The one way a list reads a page (docs/decisions.md, "Lists that page by key").
 *
 * A list is a base filter (the workspace always inside it, never checked after the read), one sort
 * field with `_id` as tie-break in the same direction, and a limit; the page starts at an `offset`
 * or after an opaque `cursor`. Each list declares an index whose keys are its equality fields,
 * then the sort field, so a page is one bounded index range read:
 *
 * - a cursor is the last row's sort value and `_id`: the next page is
 *   `{ $or: [{ f: { $lt: v } }, { f: v, _id: { $lt: id } }] }` (mirrored for ascending), the same
 *   cost at any depth;
 * - an offset skips that many rows of the same sorted read (always correct; its cost grows with
 *   the offset, so deep paging should follow `next_cursor`);
 * - one row past the page is read to know `has_more`;
 * - `total` is exact when the page shows it (the last page of an offset walk) or when at most
 *   TOTAL_CAP rows match (counted by reading at most TOTAL_CAP + 1 `_id`s in index order);
 *   otherwise it is a lower bound with `totalExact: false`. No request counts the whole history.
 */

/** Above this many matching rows `total` is no longer counted exactly (it becomes a lower bound). */
export const TOTAL_CAP = 1000;

export interface PageSort {
  field: string;
  dir: 1 | -1;
}

/**
 * The indexes a list pages on: for each sort field, `equalities` (top-level fields, the workspace
 * first) then the field and `_id`, so a page is one index range in either direction.
 */
export function pageIndexes(collection: string, equalities: string[], fields: string[]): IndexSpec[] {
  return fields.map((f) => ({
    collection,
    keys: { ...Object.fromEntries(equalities.map((e) => [e, 1 as const])), [f]: -1 as const, _id: -1 as const },
    name: `page_${[...equalities.map((e) => e.replace(/Id$/, '')), f].join('_')}`,
  }));
}
export interface PageQuery {
  limit: number;
  offset?: number;
  cursor?: string;
}
export interface Page<T> {
  items: T[];
  total: number;
  totalExact: boolean;
  hasMore: boolean;
  nextCursor: string | null;
  limit: number;
  offset: number;
}

type SortValue = string | number | boolean | Date | null;

const CursorBody = z
  .object({
    /** The sort it belongs to (`field:dir`): a cursor of another sort is refused. */
    s: z.string(),
    /** The sort value; `d` marks an ISO date. */
    v: z.union([z.string(), z.number(), z.boolean(), z.null()]),
    d: z.literal(1).optional(),
    id: z.string().min(1),
  })
  .strict();

const sortKey = (sort: PageSort) => `${sort.field}:${sort.dir}`;

function fieldValue(row: Document, field: string): SortValue {
  const v = field
    .split('.')
    .reduce<unknown>((o, k) => (o == null ? undefined : (o as Record<string, unknown>)[k]), row);
  return (v ?? null) as SortValue;
}

/** The opaque cursor after `row`: base64url JSON of its sort value and `_id`. */
export function encodeCursor(sort: PageSort, row: Document): string {
  const v = fieldValue(row, sort.field);
  const body =
    v instanceof Date
      ? { s: sortKey(sort), v: v.toISOString(), d: 1 as const, id: String(row._id) }
      : { s: sortKey(sort), v, id: String(row._id) };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

/** The position a cursor names; a cursor that is not one of this list's (or not a cursor at all) is a 400 naming `cursor`. */
function decodeCursor(sort: PageSort, cursor: string): { v: SortValue; id: string } {
  let parsed: z.infer<typeof CursorBody>;
  try {
    parsed = CursorBody.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    throw validationError('cursor: not a cursor of this list (pass next_cursor as it was returned)');
  }
  if (parsed.s !== sortKey(sort)) throw validationError('cursor: it belongs to another sort order of this list');
  if (parsed.d) {
    const at = new Date(String(parsed.v));
    if (Number.isNaN(at.getTime()))
      throw validationError('cursor: not a cursor of this list (pass next_cursor as it was returned)');
    return { v: at, id: parsed.id };
  }
  return { v: parsed.v, id: parsed.id };
}

/** The rows strictly after (v, id) in the order of `sort` (ties on v ordered by `_id`). */
function afterCondition(sort: PageSort, v: SortValue, id: string): Document {
  const op = sort.dir === -1 ? '$lt' : '$gt';
  // Sort fields are never null on stored rows; a null position still pages through its ties.
  if (v === null) return { [sort.field]: null, _id: { [op]: id } };
  return { $or: [{ [sort.field]: { [op]: v } }, { [sort.field]: v, _id: { [op]: id } }] };
}

/** `filter` and `extra` together, keeping equalities top-level (the shape an index answers). */
function and(filter: Document, extra: Document): Document {
  const clash = Object.keys(extra).some((k) => Object.hasOwn(filter, k));
  return clash ? { $and: [filter, extra] } : { ...filter, ...extra };
}

/**
 * Matching rows counted up to TOTAL_CAP + 1 (a result above TOTAL_CAP means "more than TOTAL_CAP"):
 * `countDocuments` with a limit, which MongoDB answers from the filter's index and the embedded
 * FerretDB (patch level cortex.4) counts in SQL over at most that many index entries, reading no
 * document.
 */
export async function boundedCount<T extends Document>(coll: Collection<T>, filter: Filter<T>): Promise<number> {
  return coll.countDocuments(filter, { limit: TOTAL_CAP + 1 });
}

/**
 * A condition checked on the rows read instead of in the store (a substring search): the page reads
 * the list's index order and stops after `scanMax` rows, so a rare match never turns a request into
 * a scan of the whole history. A page that reaches `scanMax` first may be short (even empty), with
 * `hasMore` and a `nextCursor` after the last row read; `total` then counts only what was seen.
 */
export interface PageScan<T> {
  match: (row: T) => boolean;
  scanMax: number;
}

/**
 * One page of `coll` under `filter` in the order of `sort` (then `_id`), from `q.offset` or after
 * `q.cursor` (a cursor with a non-zero offset is refused: one position per request).
 */
export async function page<T extends Document>(
  coll: Collection<T>,
  filter: Filter<T>,
  sort: PageSort,
  asked: PageQuery,
  options: Pick<FindOptions, 'projection'> & { scan?: PageScan<WithId<T>> } = {},
): Promise<Page<WithId<T>>> {
  // `cursor=first`: cursor paging from the first page (no position yet).
  const q = asked.cursor === 'first' ? { ...asked, cursor: undefined } : asked;
  const offset = q.offset ?? 0;
  if (q.cursor !== undefined && offset > 0) throw validationError('offset: pass either cursor or offset, not both');
  const sortSpec: Record<string, 1 | -1> =
    sort.field === '_id' ? { _id: sort.dir } : { [sort.field]: sort.dir, _id: sort.dir };
  let where = filter as Document;
  if (q.cursor !== undefined) {
    const at = decodeCursor(sort, q.cursor);
    where = and(where, afterCondition(sort, at.v, at.id));
  }
  const { scan, ...findOptions } = options;
  if (scan) return scanPage(coll, where as Filter<T>, sort, sortSpec, q, offset, scan);
  const rows = (await coll
    .find(where as Filter<T>, findOptions)
    .sort(sortSpec)
    .skip(offset)
    .limit(q.limit + 1)
    .toArray()) as WithId<T>[];
  const hasMore = rows.length > q.limit;
  const items = hasMore ? rows.slice(0, q.limit) : rows;
  const nextCursor = hasMore ? encodeCursor(sort, items[items.length - 1]!) : null;
  // The page itself shows the total when an offset walk reaches the end.
  if (q.cursor === undefined && !hasMore && (items.length > 0 || offset === 0)) {
    return { items, total: offset + items.length, totalExact: true, hasMore, nextCursor, limit: q.limit, offset };
  }
  const counted = await boundedCount(coll, filter);
  const totalExact = counted <= TOTAL_CAP;
  const seen = offset + items.length + (hasMore ? 1 : 0);
  return {
    items,
    total: totalExact ? counted : Math.max(counted, seen),
    totalExact,
    hasMore,
    nextCursor,
    limit: q.limit,
    offset,
  };
}

/** page() with a condition checked on the rows read, at most `scan.scanMax` of them (see PageScan). */
async function scanPage<T extends Document>(
  coll: Collection<T>,
  where: Filter<T>,
  sort: PageSort,
  sortSpec: Record<string, 1 | -1>,
  q: PageQuery,
  offset: number,
  scan: PageScan<WithId<T>>,
): Promise<Page<WithId<T>>> {
  const matched: WithId<T>[] = [];
  let scanned = 0;
  let last: WithId<T> | null = null;
  let exhausted = true;
  const cur = coll.find(where).sort(sortSpec).batchSize(Math.min(scan.scanMax, 500));
  try {
    for await (const row of cur) {
      if (scanned >= scan.scanMax) {
        exhausted = false;
        break;
      }
      scanned++;
      last = row;
      if (!scan.match(row)) continue;
      matched.push(row);
      if (matched.length > offset + q.limit) {
        exhausted = false;
        break;
      }
    }
  } finally {
    await cur.close();
  }
  const items = matched.slice(offset, offset + q.limit);
  const full = matched.length > offset + q.limit;
  // Stopped by the bound: the rest is unknown, and the next page starts after the last row read.
  const hasMore = !exhausted;
  const resumeAt = full ? items[items.length - 1]! : last;
  const nextCursor = hasMore && resumeAt ? encodeCursor(sort, resumeAt) : null;
  const seen = offset + items.length + (hasMore ? 1 : 0);
  const totalExact = exhausted && q.cursor === undefined;
  return { items, total: totalExact ? matched.length : seen, totalExact, hasMore, nextCursor, limit: q.limit, offset };
}
