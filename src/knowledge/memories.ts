import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { BlobStore, StoredBlob } from '../blobs/store.js';
import { fromBuffer } from '../blobs/store.js';
import type { Config } from '../kernel/config.js';
import type { Memory } from './model.js';
import type { KnowledgeStore } from './store.js';
import type { WorkspaceRepo, ResourceEvents } from '../platform/index.js';
import { notFound, validationError } from '../kernel/errors.js';
import { sniffContentType } from './extract.js';
import { refusedAs, type Guard } from '../net/guard.js';
import type { Scope } from '../kernel/scope.js';
import { newIngestState, type IngestService } from './ingest.js';
import { bestEffort } from '../kernel/best-effort.js';
import { createRecollectionSteps } from './recollections.js';
import type { Logger } from '../kernel/logger.js';

interface MemoryIngest {
  content?: string;
  file_url?: string;
  name?: string;
  description?: string;
  owner_type?: 'neuron' | 'trace';
  owner_id?: string;
  skip_title_description?: boolean;
  skip_embedding?: boolean;
  metadata?: Record<string, unknown>;
  tags?: string[];
  brain_id?: string;
}

/** What the memory service is built from. */
interface MemoryDeps {
  repo: KnowledgeStore;
  workspaces: WorkspaceRepo;
  blobs: BlobStore;
  ingest: IngestService;
  events: ResourceEvents;
  guard: Guard;
  config: Config;
  log?: Logger;
}

const by = (scope: Scope) => scope.userId ?? scope.apiKeyId;
const ref = (m: Memory) => ({ kind: 'memory' as const, id: m._id, brain_id: m.brainId, name: m.name, version: 1 });
const SORT = { created_at: 'createdAt', updated_at: 'updatedAt', name: 'name' } as const;

/** A new memory's row; the ingest state is set when it is inserted. */
function newMemory(
  scope: Scope,
  o: {
    id?: string;
    brainId: string;
    name?: string;
    description?: string | null;
    sourceType: 'text' | 'file';
    owner: { ownerType: 'neuron' | 'trace' | null; ownerId: string | null };
    blob: StoredBlob | null;
    contentType: string | null;
    fileName?: string | null;
    skipTitle: boolean;
    skipEmbedding: boolean;
    metadata?: Record<string, unknown>;
    tags?: string[];
  },
): Memory {
  const now = new Date();
  const given = !!o.name && o.description != null;
  return {
    _id: o.id ?? randomUUID(),
    workspaceId: scope.workspaceId,
    brainId: o.brainId,
    name: o.name ?? '',
    description: o.description ?? null,
    sourceType: o.sourceType,
    ownerType: o.owner.ownerType,
    ownerId: o.owner.ownerId,
    tags: o.tags ?? [],
    metadata: o.metadata ?? {},
    contentType: o.contentType,
    size: o.blob?.size ?? 0,
    blobKey: o.blob?.key ?? null,
    fileName: o.fileName ?? null,
    skipEmbedding: o.skipEmbedding,
    // Without skip_title_description, what the caller left out is generated once the text is chunked.
    titleSource: given || o.skipTitle || !o.blob ? 'caller' : 'pending',
    titleModel: null,
    ingest: newIngestState(1, null),
    createdBy: by(scope),
    createdAt: now,
    updatedAt: now,
  };
}
const blobKey = (scope: Scope, id: string) => `memories/${scope.workspaceId}/${id}`;

/** What every group of the memory service shares: its dependencies and the steps that check, store and insert. */
function memoryContext(d: MemoryDeps) {
  const { repo, config } = d;

  async function brainFor(scope: Scope, brainId?: string): Promise<string> {
    const b = brainId ?? scope.brainId;
    if (!b) throw validationError('brain_id: required (or send X-Brain-Id)');
    if (!(await d.workspaces.findBrain(scope.workspaceId, b))) throw notFound('Brain');
    return b;
  }
  async function checkOwner(scope: Scope, type?: 'neuron' | 'trace', id?: string) {
    if (!type && !id) return { ownerType: null, ownerId: null };
    if (!type || !id) throw validationError('owner_type and owner_id go together');
    if (!(await repo.owners.exists(scope.workspaceId, type, id)))
      throw notFound(type === 'neuron' ? 'Neuron' : 'Trace');
    return { ownerType: type, ownerId: id };
  }

  async function get(scope: Scope, id: string): Promise<Memory> {
    const m = await repo.memories.get(scope.workspaceId, id);
    if (!m || (scope.brainId && m.brainId !== scope.brainId)) throw notFound('Memory');
    return m;
  }

  async function insertMemory(scope: Scope, m: Memory, withBody: boolean) {
    const jobId = withBody ? randomUUID() : null;
    m.ingest = newIngestState(1, jobId, withBody ? 'pending' : 'skipped');
    await repo.memories.insert(m);
    await d.events.emit(scope.workspaceId, 'created', ref(m));
    if (jobId)
      await d.ingest.start(
        scope,
        { kind: 'memory', id: m._id, version: 1, brainId: m.brainId, name: m.name || 'memory' },
        jobId,
      );
    return { memory: m, jobId };
  }

  const store = async (scope: Scope, id: string, body: Readable, hint: { declared?: string; name?: string }) => {
    const blob = await d.blobs.put(blobKey(scope, id), body, {
      maxBytes: config.ASSET_MAX_BYTES,
      contentType: hint.declared,
    });
    return { blob, contentType: await sniffContentType(blob.head, hint) };
  };

  return { d, brainFor, checkOwner, get, insertMemory, store };
}
type MemoryContext = ReturnType<typeof memoryContext>;

/**
 * Memories and recollections (docs/knowledge.md, "Memories and recollections"). A memory is text (or a file's text) that an owner
 * keeps: a neuron (what an agent knows) or a trace (what a conversation established), or the
 * brain itself when no owner is named. A recollection groups resources of one brain (memories,
 * assets, artifacts) by explicit membership; its stats are counted from the rows on every read.
 */
export function createMemoryService(d: MemoryDeps) {
  const ctx = memoryContext(d);
  return {
    ...createMemoryReads(ctx), // get, list, chunks
    ...createMemoryIntake(ctx), // create, ingest, storeUpload, finishUpload, discardUpload
    ...createMemoryRemovals(ctx), // bulkDelete
    ...createRecollectionSteps(ctx), // getRecollection, listRecollections, createRecollection, join, … (recollections.ts)
  };
}
export type MemoryService = ReturnType<typeof createMemoryService>;

/** Reads: a memory, a page of memories and a memory's chunks. */
function createMemoryReads(ctx: MemoryContext) {
  const { d, get } = ctx;
  const { repo } = d;
  return {
    get,
    async list(
      scope: Scope,
      q: {
        source_type?: string;
        limit: number;
        offset: number;
        cursor?: string;
        sortBy: keyof typeof SORT;
        sortDirection: 'asc' | 'desc';
        owner_type?: string;
        owner_id?: string;
        brain_id?: string;
      },
    ) {
      const where = {
        brainId: q.brain_id ?? scope.brainId,
        sourceType: (q.source_type || undefined) as Memory['sourceType'] | undefined,
        ownerType: (q.owner_type || undefined) as Memory['ownerType'] | undefined,
        ownerId: q.owner_id || undefined,
      };
      const dir = q.sortDirection === 'asc' ? 1 : -1;
      return repo.memories.page(scope.workspaceId, where, { field: SORT[q.sortBy], dir }, q);
    },

    async chunks(scope: Scope, id: string, q: { limit: number; offset: number; cursor?: string }) {
      const m = await get(scope, id);
      return d.ingest.chunks(scope.workspaceId, m._id, q);
    },
  };
}

/** Memories coming in: by name with optional content, a text or a URL to fetch, or a multipart upload. */
function createMemoryIntake(ctx: MemoryContext) {
  const { d, brainFor, checkOwner, insertMemory, store } = ctx;
  return {
    /** POST /v1/memories: a memory by name (and `content` when sent). */
    async create(
      scope: Scope,
      b: {
        name: string;
        description?: string;
        source_type: 'text' | 'file';
        content?: string;
        owner_type?: 'neuron' | 'trace';
        owner_id?: string;
        metadata?: Record<string, unknown>;
        tags?: string[];
        skip_embedding?: boolean;
        brain_id?: string;
      },
    ) {
      const brainId = await brainFor(scope, b.brain_id);
      const owner = await checkOwner(scope, b.owner_type, b.owner_id);
      const id = randomUUID();
      const stored =
        b.content !== undefined ? await store(scope, id, fromBuffer(Buffer.from(b.content, 'utf8')), {}) : null;
      const m = newMemory(scope, {
        id,
        brainId,
        name: b.name,
        description: b.description ?? null,
        sourceType: b.source_type,
        owner,
        blob: stored?.blob ?? null,
        contentType: stored?.contentType ?? null,
        skipTitle: true,
        skipEmbedding: b.skip_embedding ?? false,
        metadata: b.metadata,
        tags: b.tags,
      });
      return insertMemory(scope, m, !!stored);
    },

    /** POST /v1/memories/ingest (JSON): `content` or an http(s) `file_url` fetched through the outbound guard. */
    async ingest(scope: Scope, b: MemoryIngest) {
      const brainId = await brainFor(scope, b.brain_id);
      const owner = await checkOwner(scope, b.owner_type, b.owner_id);
      const id = randomUUID();
      let stored: { blob: StoredBlob; contentType: string };
      let fileName: string | null = null;
      if (b.content !== undefined) stored = await store(scope, id, fromBuffer(Buffer.from(b.content, 'utf8')), {});
      else {
        const url = new URL(b.file_url!);
        const res = await d.guard.fetch(url).catch(refusedAs('file_url'));
        if (!res.ok || !res.body) {
          await res.body?.cancel();
          throw validationError(`file_url: ${url.host} answered ${res.status}`);
        }
        fileName = decodeURIComponent(url.pathname.split('/').filter(Boolean).pop() ?? '') || url.host;
        stored = await store(scope, id, Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), {
          declared: res.headers.get('content-type') ?? undefined,
          name: fileName,
        });
      }
      const m = newMemory(scope, {
        id,
        brainId,
        name: b.name,
        description: b.description ?? null,
        sourceType: b.content !== undefined ? 'text' : 'file',
        owner,
        blob: stored.blob,
        contentType: stored.contentType,
        fileName,
        skipTitle: b.skip_title_description ?? false,
        skipEmbedding: b.skip_embedding ?? false,
        metadata: b.metadata,
        tags: b.tags,
      });
      if (!m.name && m.titleSource === 'caller') m.name = fileName ?? 'memory';
      return insertMemory(scope, m, true);
    },
    /** Multipart ingest: the file streams into the blob store first. */
    storeUpload: (scope: Scope, id: string, f: { stream: Readable; fileName: string; declaredType: string }) =>
      store(scope, id, f.stream, { declared: f.declaredType, name: f.fileName }),
    async finishUpload(
      scope: Scope,
      id: string,
      stored: { blob: StoredBlob; contentType: string },
      f: {
        fileName: string;
        name?: string;
        description?: string;
        owner_type?: 'neuron' | 'trace';
        owner_id?: string;
        skip_title_description?: boolean;
        skip_embedding?: boolean;
        brain_id?: string;
      },
    ) {
      try {
        const brainId = await brainFor(scope, f.brain_id);
        const owner = await checkOwner(scope, f.owner_type, f.owner_id);
        const m = newMemory(scope, {
          id,
          brainId,
          name: f.name,
          description: f.description ?? null,
          sourceType: 'file',
          owner,
          blob: stored.blob,
          contentType: stored.contentType,
          fileName: f.fileName,
          skipTitle: f.skip_title_description ?? false,
          skipEmbedding: f.skip_embedding ?? false,
        });
        if (!m.name && m.titleSource === 'caller') m.name = f.fileName;
        return await insertMemory(scope, m, true);
      } catch (e) {
        await bestEffort(d.log, "deleting a refused upload's blob", d.blobs.delete(stored.blob.key));
        throw e;
      }
    },
    discardUpload: (scope: Scope, id: string) => d.blobs.delete(blobKey(scope, id)),
  };
}

/** Deleting memories with everything stored for them. */
function createMemoryRemovals(ctx: MemoryContext) {
  const { d } = ctx;
  const { repo } = d;
  return {
    /** Deletes the memories of this workspace (and brain) among `ids`; the rest count as not found. */
    async bulkDelete(scope: Scope, ids: string[]): Promise<{ deletedCount: number; notFoundCount: number }> {
      const unique = [...new Set(ids.map((i) => i.toLowerCase()))];
      const found = await repo.memories.findMany(scope.workspaceId, unique, scope.brainId);
      let deleted = 0;
      for (const m of found) {
        if (!(await repo.memories.remove(scope.workspaceId, m._id))) continue;
        deleted++;
        await Promise.all([
          repo.memories.removeRelated(scope.workspaceId, m._id),
          m.blobKey
            ? bestEffort(d.log, "deleting a deleted memory's blob", d.blobs.delete(m.blobKey))
            : Promise.resolve(),
        ]);
        await d.events.emit(scope.workspaceId, 'deleted', ref(m));
      }
      return { deletedCount: deleted, notFoundCount: ids.length - deleted };
    },
  };
}
