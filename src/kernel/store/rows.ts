import type { Collection, Document, Filter } from 'mongodb';
import { findByIds } from './client.js';

/** Rows per page of a walk. */
const WALK_PAGE = 500;

/**
 * What the search index reads of a resource kind (decoded, as the repository returns it): rows by
 * id in bulk, whatever their workspace (the index checks each against the key it was asked for),
 * and a walk of every row, a page at a time, for its snapshot.
 */
export function searchReader<D extends Document & { _id: string }, T>(
  coll: Collection<D>,
  decode: (d: D) => T,
  o: { walk?: Filter<D>; projection?: Document } = {},
) {
  const options = o.projection ? { projection: o.projection } : undefined;
  return {
    byIds: async (ids: string[]): Promise<T[]> => (await findByIds(coll, ids, options)).map((d) => decode(d as D)),
    async *all(): AsyncIterable<T[]> {
      let page: T[] = [];
      for await (const d of coll.find(o.walk ?? {}, options)) {
        page.push(decode(d as D));
        if (page.length >= WALK_PAGE) {
          yield page;
          page = [];
        }
      }
      if (page.length) yield page;
    },
  };
}
