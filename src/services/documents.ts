import { idempotentId, markCommitted } from '../request-context.js';
import { bestEffort } from '../best-effort.js';
import type { Logger } from '../logger.js';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Filter } from 'mongodb';
import type { BlobStore, StoredBlob } from '../blobs/store.js';
import { fromBuffer } from '../blobs/store.js';
import type { Config } from '../config.js';
import { claimNext } from '../db/claims.js';
import { decodeBlob, encodeBlob } from '../db/codec.js';
import type { DocumentDoc, DocumentVersionDoc, KnowledgeRepo, Lane } from '../db/knowledge.js';
import type { WorkspaceRepo } from '../db/workspaces.js';
import { conflict, notFound, validationError } from '../errors.js';
import { sniffContentType } from '../knowledge/extract.js';
import type { Guard } from '../net/guard.js';
import type { Scope } from '../scope.js';
import { newIngestState, type IngestService } from './ingest.js';
import type { ResourceEvents, ResourceRef } from './resource-events.js';
import { findById } from '../db/client.js';
import { page } from '../db/paging.js';

const SORT = { created_at: 'createdAt', updated_at: 'updatedAt', name: 'name' } as const;
export interface DocumentListQuery {
  brain_id?: string;
  path?: string;
  path_prefix?: string;
  limit: number;
  offset: number;
  cursor?: string;
  sortBy: keyof typeof SORT;
  sortDirection: 'asc' | 'desc';
}

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
export const underPrefix = (prefix: string) =>
  prefix ? { $regex: `^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(/|$)` } : undefined;

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

const BODY_MAX_CHARS = 5_000_000;

/**
 * Assets and artifacts (docs/knowledge.md, "The two lanes of the document table"): the two lanes of the document table. Assets keep an
 * immutable body in the blob store and version their metadata; artifacts are mutable UTF-8 text
 * with a content version on every change. Each body version is chunked and embedded by an
 * `ingest` job; every change is announced on the resource event stream.
 */
export function createDocumentService(d: {
  repo: KnowledgeRepo;
  workspaces: WorkspaceRepo;
  blobs: BlobStore;
  ingest: IngestService;
  events: ResourceEvents;
  guard: Guard;
  config: Config;
  log?: Logger;
}) {
  const { repo, config } = d;
  const ref = (r: DocumentDoc, extra: Partial<ResourceRef> = {}): ResourceRef => ({
    kind: r.lane,
    id: r._id,
    brain_id: r.brainId,
    name: r.name,
    version: r.version,
    ...extra,
  });
  const by = (scope: Scope) => scope.userId ?? scope.apiKeyId;

  async function brainFor(scope: Scope, brainId?: string): Promise<string> {
    const b = brainId ?? scope.brainId;
    if (!b) throw validationError('brain_id: required (or send X-Brain-Id)');
    if (!(await d.workspaces.findBrain(scope.workspaceId, b))) throw notFound('Brain');
    return b;
  }

  /** A row of the lane; a row of the other lane is refused with a 400 that names the right route. */
  async function get(scope: Scope, id: string, lane: Lane): Promise<DocumentDoc> {
    const r = await findById(repo.documents, id, { workspaceId: scope.workspaceId });
    if (!r || (scope.brainId && r.brainId !== scope.brainId)) throw notFound(lane === 'asset' ? 'Asset' : 'Artifact');
    if (r.lane !== lane)
      throw validationError(`${id} is ${r.lane === 'asset' ? 'an asset' : 'an artifact'}: use /v1/${r.lane}s/${id}`);
    return r;
  }

  async function list(scope: Scope, lane: Lane, q: DocumentListQuery) {
    const filter: Filter<DocumentDoc> & { workspaceId: string } = { workspaceId: scope.workspaceId, lane };
    const brain = q.brain_id ?? scope.brainId;
    if (brain) filter.brainId = brain;
    if (q.path !== undefined) filter.path = normalizePath(q.path);
    else if (q.path_prefix) filter.path = underPrefix(normalizePath(q.path_prefix));
    const dir = q.sortDirection === 'asc' ? 1 : -1;
    return page(repo.documents, filter, { field: SORT[q.sortBy], dir }, q);
  }

  const versionDoc = (r: DocumentDoc, version: number, changes: string[], scope: Scope): DocumentVersionDoc => ({
    _id: `${r._id}:${version}`,
    documentId: r._id,
    workspaceId: r.workspaceId,
    lane: r.lane,
    version,
    name: r.name,
    path: r.path,
    metadata: r.metadata,
    skipEmbedding: r.skipEmbedding,
    changes,
    ...(r.lane === 'artifact' ? { content: r.content ?? '' } : {}),
    contentType: r.contentType,
    size: r.size,
    createdBy: by(scope),
    createdAt: new Date(),
  });

  /** Inserts a new row with its first version, starts its ingest when it has a body, announces it. */
  async function insert(
    scope: Scope,
    r: DocumentDoc,
    ingestBody: boolean,
  ): Promise<{ doc: DocumentDoc; jobId: string | null }> {
    const jobId = ingestBody ? randomUUID() : null;
    if (jobId) r.ingest = newIngestState(r.lane === 'artifact' ? r.version : 1, jobId);
    await repo.documents.insertOne(r);
    // The resource exists: the request answers its success from here on (src/request-context.ts),
    // and what follows cannot turn it into an error that would claim nothing was stored.
    markCommitted();
    await bestEffort(
      d.log,
      'first version record',
      repo.versions.insertOne(versionDoc(r, r.version, ['created'], scope)),
    );
    await bestEffort(d.log, 'created event', d.events.emit(scope.workspaceId, 'created', ref(r)));
    if (jobId)
      await bestEffort(
        d.log,
        'ingest start',
        d.ingest.start(
          scope,
          { kind: r.lane, id: r._id, version: r.ingest.version, brainId: r.brainId, name: r.name },
          jobId,
        ),
      );
    return { doc: r, jobId };
  }

  function newAsset(
    scope: Scope,
    o: {
      id?: string;
      brainId: string;
      name: string;
      path: string;
      metadata: unknown;
      skipEmbedding: boolean;
      source: DocumentDoc['source'];
      blob: StoredBlob | null;
      contentType: string | null;
    },
  ): DocumentDoc {
    const now = new Date();
    return {
      _id: o.id ?? randomUUID(),
      workspaceId: scope.workspaceId,
      brainId: o.brainId,
      lane: 'asset',
      name: o.name,
      path: o.path,
      metadata: encodeBlob(o.metadata ?? {}),
      skipEmbedding: o.skipEmbedding,
      contentType: o.contentType,
      size: o.blob?.size ?? 0,
      sha256: o.blob?.sha256 ?? null,
      blobKey: o.blob?.key ?? null,
      source: o.source,
      version: 1,
      ingest: newIngestState(1, null, 'skipped'),
      createdBy: by(scope),
      createdAt: now,
      updatedAt: now,
    };
  }
  const blobKey = (scope: Scope, id: string) => `assets/${scope.workspaceId}/${id}`;

  /** Stores a body stream as a new asset's blob; the row is written once the body is complete. */
  async function storeBody(scope: Scope, id: string, body: Readable, hint: { declared?: string; name?: string }) {
    const blob = await d.blobs.put(blobKey(scope, id), body, {
      maxBytes: config.ASSET_MAX_BYTES,
      contentType: hint.declared,
    });
    return { blob, contentType: await sniffContentType(blob.head, hint) };
  }

  const firstLine = (t: string) =>
    t
      .split('\n')
      .find((l) => l.trim())
      ?.trim()
      .slice(0, 80) || 'Untitled';

  /** Every version is a claimed `<id>:<n>`; the head is written under the row's hold when it is still older (src/db/knowledge.ts). */
  async function newVersion(
    scope: Scope,
    cur: DocumentDoc,
    change: (prev: DocumentDoc) => { next: DocumentDoc; changes: string[] } | null,
    baseVersion?: number,
  ) {
    let made: { next: DocumentDoc; changes: string[] } | null = null;
    await claimNext(repo.versions, { documentId: cur._id }, 'version', (prev) => {
      const prevVersion = prev?.version ?? cur.version;
      if (baseVersion !== undefined && baseVersion !== prevVersion)
        throw conflict(
          `base_version ${baseVersion} is not the current version (${prevVersion}): re-read the artifact and apply the change again`,
        );
      const base: DocumentDoc = prev
        ? {
            ...cur,
            name: prev.name,
            path: prev.path,
            metadata: prev.metadata,
            skipEmbedding: prev.skipEmbedding,
            contentType: prev.contentType,
            size: prev.size,
            content: prev.content ?? cur.content,
            version: prev.version,
          }
        : cur;
      made = change(base);
      if (!made) return null;
      made.next.version = prevVersion + 1;
      return versionDoc(made.next, made.next.version, made.changes, scope);
    });
    return made as { next: DocumentDoc; changes: string[] } | null;
  }

  async function remove(scope: Scope, id: string, lane: Lane): Promise<void> {
    const r = await get(scope, id, lane);
    await repo.documents.deleteOne({ _id: r._id, workspaceId: scope.workspaceId });
    await Promise.all([
      repo.versions.deleteMany({ documentId: r._id, workspaceId: scope.workspaceId }),
      repo.chunks.deleteMany({ resourceId: r._id, workspaceId: scope.workspaceId }),
      repo.members.deleteMany({ resourceId: r._id, workspaceId: scope.workspaceId }),
      r.blobKey ? d.blobs.delete(r.blobKey) : Promise.resolve(),
    ]);
    await d.events.emit(scope.workspaceId, 'deleted', ref(r));
  }

  async function versions(scope: Scope, id: string, lane: Lane) {
    const r = await get(scope, id, lane);
    return repo.versions
      .find({ documentId: r._id, workspaceId: scope.workspaceId })
      .sort({ version: -1 })
      .limit(500)
      .toArray();
  }

  async function structure(scope: Scope, lane: Lane, q: { path_prefix?: string; brain_id?: string }) {
    const prefix = normalizePath(q.path_prefix);
    const filter: Filter<DocumentDoc> & { workspaceId: string } = { workspaceId: scope.workspaceId, lane };
    const brain = q.brain_id ?? scope.brainId;
    if (brain) filter.brainId = brain;
    if (prefix) filter.path = underPrefix(prefix);
    const rows = await repo.documents
      .find(filter, { projection: { _id: 1, name: 1, path: 1 } })
      .limit(10_000)
      .toArray();
    return folderStructure(rows, prefix);
  }

  /** Chunk counts are read from the rows after a removal (never kept as counters). */
  async function recount(r: DocumentDoc) {
    const [chunkCount, embeddedCount] = await Promise.all([
      repo.chunks.countDocuments({ resourceId: r._id }),
      repo.chunks.countDocuments({ resourceId: r._id, embedding: { $ne: null } }),
    ]);
    await repo.updateHeld(
      repo.documents,
      { _id: r._id, workspaceId: r.workspaceId },
      { 'ingest.chunkCount': chunkCount, 'ingest.embeddedCount': embeddedCount },
    );
  }

  return {
    get,
    list,
    remove,
    versions,
    structure,
    async chunks(
      scope: Scope,
      id: string,
      lane: Lane,
      q: { limit: number; offset: number; cursor?: string; source?: string },
    ) {
      const r = await get(scope, id, lane);
      return d.ingest.chunks(scope.workspaceId, r._id, q);
    },
    async chunk(scope: Scope, chunkId: string, lane: Lane) {
      const c = await d.ingest.chunk(scope.workspaceId, chunkId);
      if (!c || (scope.brainId && c.brainId !== scope.brainId)) throw notFound('Chunk');
      if (c.resourceKind !== lane)
        throw validationError(
          `chunk ${chunkId} belongs to ${c.resourceKind === 'asset' ? 'an asset' : c.resourceKind === 'artifact' ? 'an artifact' : 'a memory'}`,
        );
      return c;
    },
    async deleteChunks(scope: Scope, id: string, lane: Lane, source?: string) {
      const r = await get(scope, id, lane);
      const n = await d.ingest.deleteChunks(scope.workspaceId, r._id, source);
      await recount(r);
      await d.events.emit(scope.workspaceId, 'updated', ref(r, { change: 'chunks' }));
      return n;
    },

    // ---- assets ----
    /** POST /v1/assets: a row with metadata, and a body when `content` is sent. */
    async createAsset(
      scope: Scope,
      b: {
        name: string;
        path?: string;
        metadata?: Record<string, unknown>;
        content?: string;
        content_type?: string;
        skip_embedding?: boolean;
        brain_id?: string;
      },
    ) {
      const brainId = await brainFor(scope, b.brain_id);
      const path = normalizePath(b.path);
      const id = randomUUID();
      const stored =
        b.content !== undefined
          ? await storeBody(scope, id, fromBuffer(Buffer.from(b.content, 'utf8')), {
              declared: b.content_type,
              name: b.name,
            })
          : null;
      const doc = newAsset(scope, {
        id,
        brainId,
        name: b.name,
        path,
        metadata: b.metadata,
        skipEmbedding: b.skip_embedding ?? false,
        source: { type: stored ? 'text' : 'none', value: null },
        blob: stored?.blob ?? null,
        contentType: stored?.contentType ?? null,
      });
      return insert(scope, doc, !!stored);
    },

    /** POST /v1/assets/ingest (JSON): `source { type: text | url, value }`; a URL is fetched through the outbound guard. */
    async ingestSource(
      scope: Scope,
      b: {
        source: { type: 'text' | 'url'; value: string };
        name?: string;
        path?: string;
        metadata?: Record<string, unknown>;
        skip_embedding?: boolean;
        brain_id?: string;
      },
    ) {
      const brainId = await brainFor(scope, b.brain_id);
      const path = normalizePath(b.path);
      const id = randomUUID();
      let stored: { blob: StoredBlob; contentType: string };
      let name = b.name;
      if (b.source.type === 'text') {
        stored = await storeBody(scope, id, fromBuffer(Buffer.from(b.source.value, 'utf8')), { name: b.name });
        name ??= firstLine(b.source.value);
      } else {
        const url = new URL(b.source.value);
        const res = await d.guard.fetch(url, {
          headers: { accept: 'text/html, text/plain, text/markdown, application/pdf, */*;q=0.5' },
        });
        if (!res.ok || !res.body) {
          await res.body?.cancel();
          throw validationError(`source.value: ${url.host} answered ${res.status}`);
        }
        const lastSegment = decodeURIComponent(url.pathname.split('/').filter(Boolean).pop() ?? '');
        stored = await storeBody(scope, id, Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), {
          declared: res.headers.get('content-type') ?? undefined,
          name: lastSegment,
        });
        name ??= lastSegment || url.host;
      }
      const doc = newAsset(scope, {
        id,
        brainId,
        name: name.slice(0, 300),
        path,
        metadata: b.metadata,
        skipEmbedding: b.skip_embedding ?? false,
        source: { type: b.source.type, value: b.source.type === 'url' ? b.source.value : null },
        blob: stored.blob,
        contentType: stored.contentType,
      });
      return insert(scope, doc, true);
    },

    /** POST /v1/assets/ingest (multipart): the file streams into the blob store; the row is written when it is complete. */
    async ingestUpload(scope: Scope, id: string, file: { stream: Readable; fileName: string; declaredType: string }) {
      return storeBody(scope, id, file.stream, { declared: file.declaredType, name: file.fileName });
    },
    async finishUpload(
      scope: Scope,
      id: string,
      stored: { blob: StoredBlob; contentType: string },
      f: {
        fileName: string;
        name?: string;
        path?: string;
        metadata?: Record<string, unknown>;
        skip_embedding?: boolean;
        brain_id?: string;
      },
    ) {
      try {
        const brainId = await brainFor(scope, f.brain_id);
        const doc = newAsset(scope, {
          id,
          brainId,
          name: (f.name || f.fileName || 'upload').slice(0, 300),
          path: normalizePath(f.path),
          metadata: f.metadata,
          skipEmbedding: f.skip_embedding ?? false,
          source: { type: 'upload', value: f.fileName },
          blob: stored.blob,
          contentType: stored.contentType,
        });
        return await insert(scope, doc, true);
      } catch (e) {
        await bestEffort(d.log, "deleting a refused upload's blob", d.blobs.delete(stored.blob.key));
        throw e;
      }
    },
    discardUpload: (scope: Scope, id: string) => d.blobs.delete(blobKey(scope, id)),

    /** PUT /v1/assets/:id: name, metadata, path or skip_embedding, each change a metadata version (the body never changes). */
    async updateAsset(
      scope: Scope,
      id: string,
      b: { name?: string; path?: string; metadata?: Record<string, unknown>; skip_embedding?: boolean },
    ) {
      const cur = await get(scope, id, 'asset');
      const path = b.path !== undefined ? normalizePath(b.path) : undefined;
      const made = await newVersion(scope, cur, (prev) => {
        const next = { ...prev };
        const changes: string[] = [];
        if (b.name !== undefined && b.name !== prev.name) {
          next.name = b.name;
          changes.push('name');
        }
        if (path !== undefined && path !== prev.path) {
          next.path = path;
          changes.push('path');
        }
        if (b.metadata !== undefined && encodeBlob(b.metadata) !== prev.metadata) {
          next.metadata = encodeBlob(b.metadata);
          changes.push('metadata');
        }
        if (b.skip_embedding !== undefined && b.skip_embedding !== prev.skipEmbedding) {
          next.skipEmbedding = b.skip_embedding;
          changes.push('skip_embedding');
        }
        return changes.length ? { next, changes } : null;
      });
      if (!made) return { doc: cur, jobId: null };
      const { next, changes } = made;
      const set: Partial<DocumentDoc> = {
        name: next.name,
        path: next.path,
        metadata: next.metadata,
        skipEmbedding: next.skipEmbedding,
        version: next.version,
        updatedAt: new Date(),
      };
      let jobId: string | null = null;
      // Turned on again: the stored chunks get their vectors (same body version, its own job).
      if (changes.includes('skip_embedding') && !next.skipEmbedding && cur.blobKey) {
        jobId = randomUUID();
        set.ingest = { ...cur.ingest, jobId, status: 'pending' };
      }
      const applied = await repo.updateHeld(
        repo.documents,
        { _id: cur._id, workspaceId: scope.workspaceId, version: { $lt: next.version } },
        set,
      );
      if (!applied) return { doc: await get(scope, id, 'asset'), jobId: null };
      if (changes.includes('path'))
        await repo.chunks.updateMany(
          { resourceId: cur._id, workspaceId: scope.workspaceId },
          { $set: { path: next.path } },
        );
      if (changes.includes('skip_embedding') && next.skipEmbedding) {
        await repo.chunks.updateMany(
          { resourceId: cur._id, workspaceId: scope.workspaceId },
          { $set: { embedding: null } },
        );
        await recount(cur);
      }
      const doc = { ...cur, ...set } as DocumentDoc;
      await d.events.emit(
        scope.workspaceId,
        changes.length === 1 && changes[0] === 'path' ? 'moved' : 'updated',
        ref(doc, changes.includes('path') ? { from_path: cur.path, to_path: next.path } : {}),
      );
      if (jobId)
        await d.ingest.start(
          scope,
          { kind: 'asset', id: cur._id, version: cur.ingest.version, brainId: cur.brainId, name: doc.name },
          jobId,
        );
      return { doc, jobId };
    },

    // ---- artifacts ----
    /** `id` (platform callers only): a retried writer names the artifact it meant, and finds it instead of writing a second. */
    async createArtifact(
      scope: Scope,
      b: {
        title: string;
        content: string;
        content_type?: string;
        path?: string;
        metadata?: Record<string, unknown>;
        skip_embedding?: boolean;
        brain_id?: string;
      },
      given?: string,
    ) {
      // With an Idempotency-Key the id is derived from it: a retry returns the first attempt's artifact.
      const id = given ?? idempotentId('artifact');
      const brainId = await brainFor(scope, b.brain_id);
      if (id) {
        const existing = await findById(repo.documents, id, { workspaceId: scope.workspaceId });
        if (existing) return { doc: existing, jobId: existing.ingest.jobId };
      }
      const now = new Date();
      const doc: DocumentDoc = {
        _id: id ?? randomUUID(),
        workspaceId: scope.workspaceId,
        brainId,
        lane: 'artifact',
        name: b.title,
        path: normalizePath(b.path),
        metadata: encodeBlob(b.metadata ?? {}),
        skipEmbedding: b.skip_embedding ?? false,
        contentType: b.content_type ?? 'text/markdown',
        size: Buffer.byteLength(b.content),
        sha256: null,
        blobKey: null,
        source: { type: 'artifact', value: null },
        version: 1,
        content: b.content,
        ingest: newIngestState(1, null),
        createdBy: by(scope),
        createdAt: now,
        updatedAt: now,
      };
      return insert(scope, doc, true);
    },

    /** PUT /v1/artifacts/:id and the patch envelope: each change a content version; a stale base_version is a 409. */
    async updateArtifact(
      scope: Scope,
      id: string,
      b: {
        title?: string;
        content?: string;
        content_type?: string;
        path?: string;
        metadata?: Record<string, unknown>;
        skip_embedding?: boolean;
        base_version?: number;
        edits?: ArtifactEdit[];
      },
    ) {
      const cur = await get(scope, id, 'artifact');
      const path = b.path !== undefined ? normalizePath(b.path) : undefined;
      const made = await newVersion(
        scope,
        cur,
        (prev) => {
          const next = { ...prev };
          const changes: string[] = [];
          let content = b.content ?? prev.content ?? '';
          if (b.edits?.length) content = applyEdits(content, b.edits);
          if (content.length > BODY_MAX_CHARS) throw validationError(`content: at most ${BODY_MAX_CHARS} characters`);
          if (content !== (prev.content ?? '')) {
            next.content = content;
            next.size = Buffer.byteLength(content);
            changes.push('content');
          }
          if (b.title !== undefined && b.title !== prev.name) {
            next.name = b.title;
            changes.push('title');
          }
          if (b.content_type !== undefined && b.content_type !== prev.contentType) {
            next.contentType = b.content_type;
            changes.push('content_type');
          }
          if (path !== undefined && path !== prev.path) {
            next.path = path;
            changes.push('path');
          }
          if (b.metadata !== undefined && encodeBlob(b.metadata) !== prev.metadata) {
            next.metadata = encodeBlob(b.metadata);
            changes.push('metadata');
          }
          if (b.skip_embedding !== undefined && b.skip_embedding !== prev.skipEmbedding) {
            next.skipEmbedding = b.skip_embedding;
            changes.push('skip_embedding');
          }
          return changes.length ? { next, changes } : null;
        },
        b.base_version,
      );
      if (!made) return { doc: cur, jobId: null };
      const { next, changes } = made;
      const set: Partial<DocumentDoc> = {
        name: next.name,
        path: next.path,
        metadata: next.metadata,
        skipEmbedding: next.skipEmbedding,
        contentType: next.contentType,
        size: next.size,
        content: next.content,
        version: next.version,
        updatedAt: new Date(),
      };
      // New text is indexed by its own ingest job (the newest finished one is the live index); vectors
      // turned on again are added to the indexed version. A move or a rename keeps the index.
      let jobId: string | null = null;
      let ingestVersion = cur.ingest.version;
      if (changes.includes('content') || changes.includes('content_type')) {
        jobId = randomUUID();
        ingestVersion = next.version;
        set.ingest = newIngestState(next.version, jobId);
      } else if (changes.includes('skip_embedding') && !next.skipEmbedding) {
        jobId = randomUUID();
        set.ingest = { ...cur.ingest, jobId, status: 'pending' };
      }
      // Held (src/db/knowledge.ts): an ingest job writing its state meanwhile must not put the previous version back.
      const applied = await repo.updateHeld(
        repo.documents,
        { _id: cur._id, workspaceId: scope.workspaceId, version: { $lt: next.version } },
        set,
      );
      if (!applied) return { doc: await get(scope, id, 'artifact'), jobId: null };
      if (changes.includes('path'))
        await repo.chunks.updateMany(
          { resourceId: cur._id, workspaceId: scope.workspaceId },
          { $set: { path: next.path } },
        );
      if (changes.includes('skip_embedding') && next.skipEmbedding) {
        await repo.chunks.updateMany(
          { resourceId: cur._id, workspaceId: scope.workspaceId },
          { $set: { embedding: null } },
        );
        await recount(cur);
      }
      const doc = { ...cur, ...set } as DocumentDoc;
      await d.events.emit(
        scope.workspaceId,
        changes.length === 1 && changes[0] === 'path' ? 'moved' : 'updated',
        ref(doc, changes.includes('path') ? { from_path: cur.path, to_path: next.path } : {}),
      );
      if (jobId)
        await d.ingest.start(
          scope,
          { kind: 'artifact', id: cur._id, version: ingestVersion, brainId: cur.brainId, name: doc.name },
          jobId,
        );
      return { doc, jobId };
    },

    /** The raw body of a content version (the current one without `version`). */
    async artifactBody(
      scope: Scope,
      id: string,
      version?: number,
    ): Promise<{ content: string; version: number; contentType: string }> {
      const r = await get(scope, id, 'artifact');
      if (version === undefined || version === r.version)
        return { content: r.content ?? '', version: r.version, contentType: r.contentType ?? 'text/plain' };
      const v = await repo.versions.findOne({ _id: `${r._id}:${version}`, workspaceId: scope.workspaceId });
      if (!v) throw notFound(`Version ${version} of the artifact`);
      return { content: v.content ?? '', version: v.version, contentType: v.contentType ?? 'text/plain' };
    },

    /** Moves rows of the document lanes to a folder path (POST /v1/resources/move); each a `moved` event. */
    async move(scope: Scope, id: string, path: string) {
      const r = await findById(repo.documents, id, { workspaceId: scope.workspaceId });
      if (!r) return null;
      return r.lane === 'asset'
        ? (await this.updateAsset(scope, id, { path })).doc
        : (await this.updateArtifact(scope, id, { path })).doc;
    },
    metadataOf: (r: DocumentDoc) => decodeBlob<Record<string, unknown>>(r.metadata, {}),
  };
}
export type DocumentService = ReturnType<typeof createDocumentService>;
