import { conflict, validationError } from '../kernel/errors.js';

/**
 * The pure parts of the document lanes (docs/knowledge.md): folder paths, the folder structure of
 * a set of rows, the artifact patch envelope's edits and what a head change changes.
 */

/** A folder path: segments of letters, digits, spaces and `._-`, joined by `/`, no `..`; '' is the root. */
export function normalizePath(raw: string | undefined | null): string {
  const p = (raw ?? '')
    .trim()
    .replace(/\\/g, '/')
    .replace(/^\/+|\/+$/g, '')
    .replace(/\/{2,}/g, '/');
  if (p.length > 500) throw validationError('path: at most 500 characters');
  for (const seg of p ? p.split('/') : []) {
    if (seg === '.' || seg === '..' || !/^[\p{L}\p{N} ._@()-]+$/u.test(seg))
      throw validationError(`path: "${seg}" is not a valid folder name`);
  }
  return p;
}

/** Folder structure of a lane under a path: direct sub-folders (with item counts below them) and the items right there. */
export function folderStructure(rows: { _id: string; name: string; path: string }[], prefix: string) {
  const folders = new Map<string, number>();
  const items: { id: string; name: string; path: string }[] = [];
  for (const r of rows) {
    if (r.path === prefix) {
      items.push({ id: r._id, name: r.name, path: r.path });
      continue;
    }
    const rest = prefix ? r.path.slice(prefix.length + 1) : r.path;
    const child = prefix ? `${prefix}/${rest.split('/')[0]}` : rest.split('/')[0];
    folders.set(child, (folders.get(child) ?? 0) + 1);
  }
  return {
    path: prefix,
    folders: [...folders]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([path, count]) => ({ path, name: path.split('/').pop() ?? path, item_count: count })),
    items: items.sort((a, b) => a.name.localeCompare(b.name)),
    total: rows.length,
  };
}

/** The operations of an artifact patch envelope (docs/knowledge.md). */
export type ArtifactEdit =
  | { op: 'replace'; content: string }
  | { op: 'append'; text: string }
  | { op: 'prepend'; text: string }
  | { op: 'search_replace'; search: string; replace: string; all?: boolean };

export function applyEdits(content: string, edits: ArtifactEdit[]): string {
  let out = content;
  edits.forEach((e, k) => {
    if (e.op === 'replace') out = e.content;
    else if (e.op === 'append') out += e.text;
    else if (e.op === 'prepend') out = e.text + out;
    else {
      if (!out.includes(e.search))
        throw conflict(`edits[${k}]: "${e.search.slice(0, 60)}" does not occur in the artifact`);
      out = e.all ? out.split(e.search).join(e.replace) : out.replace(e.search, () => e.replace);
    }
  });
  return out;
}

/** Two client JSON values are the same when they serialize the same (as they are stored). */
const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The head fields both lanes change the same way: path, metadata and skip_embedding (each named in `changes` when it changed). */
export function changeCommon<T extends { path: string; metadata: Record<string, unknown>; skipEmbedding: boolean }>(
  prev: T,
  next: T,
  changes: string[],
  b: { path?: string; metadata?: Record<string, unknown>; skip_embedding?: boolean },
): void {
  if (b.path !== undefined && b.path !== prev.path) {
    next.path = b.path;
    changes.push('path');
  }
  if (b.metadata !== undefined && !sameJson(b.metadata, prev.metadata)) {
    next.metadata = b.metadata;
    changes.push('metadata');
  }
  if (b.skip_embedding !== undefined && b.skip_embedding !== prev.skipEmbedding) {
    next.skipEmbedding = b.skip_embedding;
    changes.push('skip_embedding');
  }
}

/** The first non-empty line of a text (at most 80 characters), a name for a body sent without one. */
export const firstLine = (t: string) =>
  t
    .split('\n')
    .find((l) => l.trim())
    ?.trim()
    .slice(0, 80) || 'Untitled';
