import type { IndexFilter, SearchBackend } from './backend.js';
import type { IndexEntry, SearchType } from './memory-index.js';
import { CONTENT_GREP } from './query.js';
import { isHead } from './indexer.js';

/** The fields grep reads of each entry (src/search/backend.ts, `scan`). */
const GREP_FIELDS = ['id', 'resourceId', 'title', 'description', 'text', 'displayPath', 'url'] as const;
/** Resources whose heads one query reads. */
const HEADS_AT_ONCE = 500;

/** One resource grep matched: its head, the entry it matched first (`where`: 0 name, 1 description, 2 a head's content, 3 a chunk) and how often. */
export interface GrepRow {
  head: IndexEntry;
  match: IndexEntry;
  where: number;
  count: number;
}

/**
 * The resources of one type whose name or description (or content, for memories and artifacts)
 * contains `pattern`, case-insensitively: by where it matched first, then by count, then by title
 * (POST /v1/grep, docs/search.md). `filter` is the caller's visibility filter with grep's own
 * narrowing. Only the entries that contain the pattern in some field are read (the engine narrows
 * to them as far as its filter can, `EntryWhere.contains`), only heads for a type whose content
 * grep does not match, and only the fields grep shows; then the heads of the resources matched in a
 * chunk only.
 */
export async function grepRows(
  index: SearchBackend,
  workspaceId: string,
  type: SearchType,
  pattern: string,
  filter: (w: { contains?: string; resourceIds?: string[] }, headsOnly: boolean) => IndexFilter,
): Promise<GrepRow[]> {
  const needle = pattern.toLowerCase();
  const byResource = new Map<string, { head?: IndexEntry; match?: IndexEntry; where: number; count: number }>();
  const content = CONTENT_GREP.has(type);
  for (const e of await index.scan(workspaceId, filter({ contains: pattern }, !content), GREP_FIELDS)) {
    const slot = byResource.get(e.resourceId) ?? { where: 9, count: 0 };
    if (isHead(e)) slot.head = e;
    const fields = isHead(e)
      ? [e.title, e.description, ...(CONTENT_GREP.has(e.type) ? [e.text] : [])]
      : CONTENT_GREP.has(e.type)
        ? [e.text]
        : [];
    fields.forEach((f, i) => {
      const n = f.toLowerCase().split(needle).length - 1;
      if (!n) return;
      slot.count += n;
      // Where it matched first decides the order: the name, then the description, then content.
      const where = isHead(e) ? i : 3;
      if (where < slot.where) {
        slot.where = where;
        slot.match = e;
      }
    });
    byResource.set(e.resourceId, slot);
  }
  // The heads of resources matched only in a chunk (a head without the pattern was not read).
  const headless = [...byResource].filter(([, r]) => r.match && !r.head).map(([id]) => id);
  for (let i = 0; i < headless.length; i += HEADS_AT_ONCE) {
    const heads = filter({ resourceIds: headless.slice(i, i + HEADS_AT_ONCE) }, true);
    for (const e of await index.scan(workspaceId, heads, GREP_FIELDS)) {
      const slot = byResource.get(e.resourceId);
      if (slot && isHead(e)) slot.head = e;
    }
  }
  return [...byResource.values()]
    .filter((r): r is GrepRow => !!r.match && !!r.head)
    .sort((a, b) => a.where - b.where || b.count - a.count || (a.head.title < b.head.title ? -1 : 1));
}
