import { validationError } from '../kernel/errors.js';
import type { EntryWhere, IndexFilter, SearchBackend } from './backend.js';
import type { IndexEntry, SearchType } from './memory-index.js';
import { HAS_PATH, LISTABLE_TYPES, typeOf } from './query.js';

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

/**
 * What a level of the tree is made of (`childrenFrom`), for one brain's visible heads: the embedded
 * index answers from one scan of them (`headsSource`), an engine that counts and groups (Weaviate)
 * from a query per question (`engineSource`), so a folder's level costs its own heads and its
 * distinct paths, not the whole workspace's heads.
 */
export interface TreeSource {
  /** How many visible heads the type has. */
  count(type: SearchType): Promise<number>;
  /** The visible heads of the type; with a folder, those at exactly that folder ('' : at no folder). */
  heads(type: SearchType, folder?: string): Promise<IndexEntry[]>;
  /** How many visible heads of the type lie at each path below `folder` ('' : every path; the folder's own may be counted too). */
  paths(type: SearchType, folder: string): Promise<Map<string, number>>;
}

/** The fields a leaf needs (`engineSource` reads only those). */
const LEAF_FIELDS = ['resourceId', 'title', 'url', 'updatedAt'] as const;

/** The tree from the visible heads of every listable type (read once, when first needed). */
export function headsSource(read: () => Promise<IndexEntry[]>): TreeSource {
  let all: Promise<IndexEntry[]> | undefined;
  const heads = () => (all ??= read());
  return {
    count: async (type) => (await heads()).filter((e) => e.type === type).length,
    heads: async (type, folder) =>
      (await heads()).filter((e) => e.type === type && (folder === undefined || e.path === folder)),
    async paths(type, folder) {
      const out = new Map<string, number>();
      for (const e of await heads())
        if (e.type === type && (!folder || e.path === folder || e.path.startsWith(`${folder}/`)))
          out.set(e.path, (out.get(e.path) ?? 0) + 1);
      return out;
    },
  };
}

/**
 * The tree from an index that counts and groups itself (`page` for a count, `paths` for the
 * folders below one, a `scan` of one folder's heads reading only what a leaf shows); where it cannot
 * (null), the same question is answered from a scan.
 */
export function engineSource(
  index: SearchBackend,
  workspaceId: string,
  filter: (type: SearchType, where: Pick<EntryWhere, 'folder' | 'pathPrefix'>) => IndexFilter,
): TreeSource {
  return {
    async count(type) {
      const fl = filter(type, {});
      const page = index.page ? await index.page(workspaceId, fl, { offset: 0, limit: 0 }) : null;
      return page ? page.total : (await index.scan(workspaceId, fl, ['id'])).length;
    },
    heads: (type, folder) => index.scan(workspaceId, filter(type, folder === undefined ? {} : { folder }), LEAF_FIELDS),
    async paths(type, folder) {
      const fl = filter(type, folder ? { pathPrefix: folder } : {});
      const grouped = index.paths ? await index.paths(workspaceId, fl) : null;
      if (grouped) return grouped;
      const out = new Map<string, number>();
      for (const e of await index.scan(workspaceId, fl, ['path'])) out.set(e.path, (out.get(e.path) ?? 0) + 1);
      return out;
    },
  };
}

/** The children of one tree key (see `tree` in search.ts). */
export async function childrenFrom(src: TreeSource, key: string | null): Promise<TreeNode[]> {
  if (key === null) {
    return Promise.all(
      LISTABLE_TYPES.map(async (t) => {
        const count = await src.count(t);
        return { key: t, label: t, kind: 'type' as const, type: t, has_children: count > 0, count };
      }),
    );
  }
  if (key.startsWith('resource:')) return [];
  const slash = key.indexOf('/');
  const type = typeOf(slash < 0 ? key : key.slice(0, slash), LISTABLE_TYPES, 'parent_key');
  const folder = slash < 0 ? '' : key.slice(slash + 1).replace(/^\/+|\/+$/g, '');
  if (folder && !HAS_PATH.has(type)) throw validationError(`parent_key: ${type} have no folders`);
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
  if (!HAS_PATH.has(type)) return (await src.heads(type)).sort(byTitle).map(leaf);
  const [paths, here] = await Promise.all([src.paths(type, folder), src.heads(type, folder)]);
  const sub = new Map<string, number>();
  for (const [path, n] of paths) {
    if (path === folder) continue;
    if (folder && !path.startsWith(`${folder}/`)) continue;
    const rest = folder ? path.slice(folder.length + 1) : path;
    const name = rest.split('/')[0];
    if (name) sub.set(name, (sub.get(name) ?? 0) + n);
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
