import { validationError } from '../errors.js';
import type { IndexEntry } from '../search/memory-index.js';
import { HAS_PATH, LISTABLE_TYPES, typeOf } from '../search/query.js';

export interface TreeNode {
  key: string;
  label: string;
  kind: 'type' | 'folder' | 'resource';
  type: string;
  has_children: boolean;
  count?: number;
  id?: string;
  url?: string;
  updated_at?: string;
}

/** The children of one tree key among the visible heads (see `tree`). */
export function childrenOf(heads: IndexEntry[], key: string | null): TreeNode[] {
  if (key === null) {
    return LISTABLE_TYPES.map((t) => {
      const count = heads.filter((e) => e.type === t).length;
      return { key: t, label: t, kind: 'type' as const, type: t, has_children: count > 0, count };
    });
  }
  if (key.startsWith('resource:')) return [];
  const slash = key.indexOf('/');
  const type = typeOf(slash < 0 ? key : key.slice(0, slash), LISTABLE_TYPES, 'parent_key');
  const folder = slash < 0 ? '' : key.slice(slash + 1).replace(/^\/+|\/+$/g, '');
  if (folder && !HAS_PATH.has(type)) throw validationError(`parent_key: ${type} have no folders`);
  const ofType = heads.filter((e) => e.type === type);
  const leaf = (e: IndexEntry): TreeNode => ({
    key: `resource:${e.resourceId}`,
    label: e.title,
    kind: 'resource',
    type,
    has_children: false,
    id: e.resourceId,
    url: e.url,
    updated_at: new Date(e.updatedAt).toISOString(),
  });
  const byTitle = (a: IndexEntry, b: IndexEntry) =>
    a.title.localeCompare(b.title) || (a.resourceId < b.resourceId ? -1 : 1);
  if (!HAS_PATH.has(type)) return ofType.sort(byTitle).map(leaf);
  const sub = new Map<string, number>();
  const here: IndexEntry[] = [];
  for (const e of ofType) {
    if (e.path === folder) {
      here.push(e);
      continue;
    }
    if (folder && !e.path.startsWith(`${folder}/`)) continue;
    const rest = folder ? e.path.slice(folder.length + 1) : e.path;
    const name = rest.split('/')[0];
    if (name) sub.set(name, (sub.get(name) ?? 0) + 1);
  }
  const folders: TreeNode[] = [...sub.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, count]) => ({
      key: `${type}/${folder ? `${folder}/` : ''}${name}`,
      label: name,
      kind: 'folder',
      type,
      has_children: true,
      count,
    }));
  return [...folders, ...here.sort(byTitle).map(leaf)];
}

export const encodeCursor = (key: string | null, offset: number) =>
  Buffer.from(JSON.stringify({ k: key, o: offset })).toString('base64url');
export function decodeCursor(cursor: string, key: string | null): number {
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { k?: unknown; o?: unknown };
    if ((c.k ?? null) === key && typeof c.o === 'number' && Number.isInteger(c.o) && c.o >= 0) return c.o;
  } catch {
    /* fall through */
  }
  throw validationError(
    'cursor: not a cursor of this parent_key (send the next_cursor you were given, with the same parent_key)',
  );
}
