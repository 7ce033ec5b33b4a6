import { idempotentId, markCommitted } from '../kernel/request-context.js';
import { bestEffort } from '../kernel/best-effort.js';
import type { Logger } from '../kernel/logger.js';
import { randomUUID } from 'node:crypto';
import type { BlobStore } from '../blobs/store.js';
import type { Config } from '../kernel/config.js';
import type { DocumentVersion, KnowledgeDocument, Lane } from './model.js';
import type { KnowledgeStore } from './store.js';
import type { WorkspaceRepo, ResourceEvents, ResourceRef } from '../platform/index.js';
import { conflict, notFound, validationError } from '../kernel/errors.js';
import type { Guard } from '../net/guard.js';
import type { Scope } from '../kernel/scope.js';
import { newIngestState, type IngestService } from './ingest.js';
import { createAssetIntake } from './asset-intake.js';
import { applyEdits, changeCommon, folderStructure, normalizePath, type ArtifactEdit } from './document-paths.js';

export { folderStructure, normalizePath } from './document-paths.js';

const SORT = { created_at: 'createdAt', updated_at: 'updatedAt', name: 'name' } as const;
interface DocumentListQuery {
  brain_id?: string;
  path?: string;
  path_prefix?: string;
  limit: number;
  offset: number;
  cursor?: string;
  sortBy: keyof typeof SORT;
  sortDirection: 'asc' | 'desc';
}

const BODY_MAX_CHARS = 5_000_000;

/** What the document service is built from. */
interface DocumentDeps {
  repo: KnowledgeStore;
  workspaces: WorkspaceRepo;
  blobs: BlobStore;
  ingest: IngestService;
  events: ResourceEvents;
  guard: Guard;
  config: Config;
  log?: Logger;
}

const ref = (r: KnowledgeDocument, extra: Partial<ResourceRef> = {}): ResourceRef => ({
  kind: r.lane,
  id: r._id,
  brain_id: r.brainId,
  name: r.name,
  version: r.version,
  ...extra,
});
const by = (scope: Scope) => scope.userId ?? scope.apiKeyId;

const versionDoc = (r: KnowledgeDocument, version: number, changes: string[], scope: Scope): DocumentVersion => ({
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

/** What every group of the document service shares: its dependencies and the steps that read and write a row. */
function documentContext(d: DocumentDeps) {
  const { repo } = d;

  async function brainFor(scope: Scope, brainId?: string): Promise<string> {
    const b = brainId ?? scope.brainId;
    if (!b) throw validationError('brain_id: required (or send X-Brain-Id)');
    if (!(await d.workspaces.findBrain(scope.workspaceId, b))) throw notFound('Brain');
    return b;
  }

  /** A row of the lane; a row of the other lane is refused with a 400 that names the right route. */
  async function get(scope: Scope, id: string, lane: Lane): Promise<KnowledgeDocument> {
    const r = await repo.documents.get(scope.workspaceId, id);
    if (!r || (scope.brainId && r.brainId !== scope.brainId)) throw notFound(lane === 'asset' ? 'Asset' : 'Artifact');
    if (r.lane !== lane)
      throw validationError(`${id} is ${r.lane === 'asset' ? 'an asset' : 'an artifact'}: use /v1/${r.lane}s/${id}`);
    return r;
  }

  /** Inserts a new row with its first version, starts its ingest when it has a body, announces it. */
  async function insert(
    scope: Scope,
    r: KnowledgeDocument,
    ingestBody: boolean,
  ): Promise<{ doc: KnowledgeDocument; jobId: string | null }> {
    const jobId = ingestBody ? randomUUID() : null;
    if (jobId) r.ingest = newIngestState(r.lane === 'artifact' ? r.version : 1, jobId);
    await repo.documents.insert(r);
    // The resource exists: the request answers its success from here on (src/kernel/request-context.ts),
    // and what follows cannot turn it into an error that would claim nothing was stored.
    markCommitted();
    await bestEffort(
      d.log,
      'first version record',
      repo.documents.recordVersion(versionDoc(r, r.version, ['created'], scope)),
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

  /** Claims the row's next version, built by `change` on the newest one (the repository claims each number once). */
  async function newVersion(
    scope: Scope,
    cur: KnowledgeDocument,
    change: (prev: KnowledgeDocument) => { next: KnowledgeDocument; changes: string[] } | null,
    baseVersion?: number,
  ) {
    let made: { next: KnowledgeDocument; changes: string[] } | null = null;
    await repo.documents.claimVersion(cur._id, (prev) => {
      const prevVersion = prev?.version ?? cur.version;
      if (baseVersion !== undefined && baseVersion !== prevVersion)
        throw conflict(
          `base_version ${baseVersion} is not the current version (${prevVersion}): re-read the artifact and apply the change again`,
        );
      const base: KnowledgeDocument = prev
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
    return made as { next: KnowledgeDocument; changes: string[] } | null;
  }

  /** Chunk counts are read from the rows after a removal (never kept as counters). */
  async function recount(r: KnowledgeDocument) {
    await repo.ingest.setCounts(r.lane, r.workspaceId, r._id, await repo.chunks.counts(r._id));
  }

  /**
   * Writes a new version's head (held, and only over an older one: an ingest job writing its state
   * meanwhile must not put the previous version back), then what follows from it: the chunks' path,
   * dropped vectors, the event and the ingest job.
   */
  async function applyHead(
    scope: Scope,
    cur: KnowledgeDocument,
    { next, changes }: { next: KnowledgeDocument; changes: string[] },
    set: Partial<KnowledgeDocument>,
    ingest: { jobId: string | null; version: number },
  ): Promise<{ doc: KnowledgeDocument; jobId: string | null }> {
    if (!(await repo.documents.setHead(scope.workspaceId, cur._id, set)))
      return { doc: await get(scope, cur._id, cur.lane), jobId: null };
    if (changes.includes('path')) await repo.chunks.setPath(scope.workspaceId, cur._id, next.path);
    if (changes.includes('skip_embedding') && next.skipEmbedding) {
      await repo.chunks.dropVectors(scope.workspaceId, cur._id);
      await recount(cur);
    }
    const doc = { ...cur, ...set } as KnowledgeDocument;
    await d.events.emit(
      scope.workspaceId,
      changes.length === 1 && changes[0] === 'path' ? 'moved' : 'updated',
      ref(doc, changes.includes('path') ? { from_path: cur.path, to_path: next.path } : {}),
    );
    const { jobId } = ingest;
    if (jobId)
      await d.ingest.start(
        scope,
        { kind: cur.lane, id: cur._id, version: ingest.version, brainId: cur.brainId, name: doc.name },
        jobId,
      );
    return { doc, jobId };
  }

  return { d, brainFor, get, insert, newVersion, recount, applyHead };
}
type DocumentContext = ReturnType<typeof documentContext>;

/**
 * Assets and artifacts (docs/knowledge.md, "The two lanes of the document table"): the two lanes of the document table. Assets keep an
 * immutable body in the blob store and version their metadata; artifacts are mutable UTF-8 text
 * with a content version on every change. Each body version is chunked and embedded by an
 * `ingest` job; every change is announced on the resource event stream.
 */
export function createDocumentService(d: DocumentDeps) {
  const ctx = documentContext(d);
  const { brainFor, insert } = ctx;
  return {
    ...createDocumentReads(ctx), // get, list, versions, structure, chunks, chunk, artifactBody, metadataOf
    ...createDocumentRemovals(ctx), // remove, deleteChunks
    // ---- assets ----
    ...createAssetIntake({ ...d, brainFor, insert, by }),
    // ---- artifacts ----
    ...createArtifactIntake(ctx), // createArtifact
    ...createDocumentEdits(ctx), // updateAsset, updateArtifact, move
  };
}
export type DocumentService = ReturnType<typeof createDocumentService>;

/** Reads of both lanes: a row, a page, its versions, the folder tree, its chunks and an artifact's body. */
function createDocumentReads(ctx: DocumentContext) {
  const { d, get } = ctx;
  const { repo } = d;

  async function list(scope: Scope, lane: Lane, q: DocumentListQuery) {
    const where = {
      lane,
      brainId: q.brain_id ?? scope.brainId,
      ...(q.path !== undefined
        ? { path: normalizePath(q.path) }
        : q.path_prefix
          ? { pathPrefix: normalizePath(q.path_prefix) }
          : {}),
    };
    const dir = q.sortDirection === 'asc' ? 1 : -1;
    return repo.documents.page(scope.workspaceId, where, { field: SORT[q.sortBy], dir }, q);
  }

  async function versions(scope: Scope, id: string, lane: Lane) {
    const r = await get(scope, id, lane);
    return repo.documents.versions(scope.workspaceId, r._id);
  }

  async function structure(scope: Scope, lane: Lane, q: { path_prefix?: string; brain_id?: string }) {
    const prefix = normalizePath(q.path_prefix);
    const where = { lane, brainId: q.brain_id ?? scope.brainId, pathPrefix: prefix };
    return folderStructure(await repo.documents.folderRows(scope.workspaceId, where, 10_000), prefix);
  }

  return {
    get,
    list,
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

    /** The raw body of a content version (the current one without `version`). */
    async artifactBody(
      scope: Scope,
      id: string,
      version?: number,
    ): Promise<{ content: string; version: number; contentType: string }> {
      const r = await get(scope, id, 'artifact');
      if (version === undefined || version === r.version)
        return { content: r.content ?? '', version: r.version, contentType: r.contentType ?? 'text/plain' };
      const v = await repo.documents.version(scope.workspaceId, r._id, version);
      if (!v) throw notFound(`Version ${version} of the artifact`);
      return { content: v.content ?? '', version: v.version, contentType: v.contentType ?? 'text/plain' };
    },
    metadataOf: (r: KnowledgeDocument) => r.metadata,
  };
}

/** Removals: a row with everything stored for it, or some of its chunks. */
function createDocumentRemovals(ctx: DocumentContext) {
  const { d, get, recount } = ctx;
  const { repo } = d;

  async function remove(scope: Scope, id: string, lane: Lane): Promise<void> {
    const r = await get(scope, id, lane);
    await repo.documents.remove(scope.workspaceId, r._id);
    await Promise.all([
      repo.documents.removeRelated(scope.workspaceId, r._id),
      r.blobKey ? d.blobs.delete(r.blobKey) : Promise.resolve(),
    ]);
    await d.events.emit(scope.workspaceId, 'deleted', ref(r));
  }

  return {
    remove,
    async deleteChunks(scope: Scope, id: string, lane: Lane, source?: string) {
      const r = await get(scope, id, lane);
      const n = await d.ingest.deleteChunks(scope.workspaceId, r._id, source);
      await recount(r);
      await d.events.emit(scope.workspaceId, 'updated', ref(r, { change: 'chunks' }));
      return n;
    },
  };
}

/** A new artifact: its row with the first content version, indexed by its own ingest job. */
function createArtifactIntake(ctx: DocumentContext) {
  const { d, brainFor, insert } = ctx;
  const { repo } = d;
  return {
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
        const existing = await repo.documents.get(scope.workspaceId, id);
        if (existing) return { doc: existing, jobId: existing.ingest.jobId };
      }
      const now = new Date();
      const doc: KnowledgeDocument = {
        _id: id ?? randomUUID(),
        workspaceId: scope.workspaceId,
        brainId,
        lane: 'artifact',
        name: b.title,
        path: normalizePath(b.path),
        metadata: b.metadata ?? {},
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
  };
}

/** Changes that claim a new version: an asset's metadata, an artifact's content or metadata, a move of either. */
function createDocumentEdits(ctx: DocumentContext) {
  const { get, newVersion, applyHead } = ctx;
  const { repo } = ctx.d;
  return {
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
        changeCommon(prev, next, changes, { ...b, path });
        return changes.length ? { next, changes } : null;
      });
      if (!made) return { doc: cur, jobId: null };
      const { next, changes } = made;
      const set: Partial<KnowledgeDocument> = {
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
      return applyHead(scope, cur, made, set, { jobId, version: cur.ingest.version });
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
          changeCommon(prev, next, changes, { ...b, path });
          return changes.length ? { next, changes } : null;
        },
        b.base_version,
      );
      if (!made) return { doc: cur, jobId: null };
      const { next, changes } = made;
      const set: Partial<KnowledgeDocument> = {
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
      return applyHead(scope, cur, made, set, { jobId, version: ingestVersion });
    },

    /** Moves rows of the document lanes to a folder path (POST /v1/resources/move); each a `moved` event. */
    async move(scope: Scope, id: string, path: string) {
      const r = await repo.documents.get(scope.workspaceId, id);
      if (!r) return null;
      return r.lane === 'asset'
        ? (await this.updateAsset(scope, id, { path })).doc
        : (await this.updateArtifact(scope, id, { path })).doc;
    },
  };
}
