import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { bestEffort } from '../kernel/best-effort.js';
import type { BlobStore, StoredBlob } from '../blobs/store.js';
import { fromBuffer } from '../blobs/store.js';
import type { Config } from '../kernel/config.js';
import type { KnowledgeDocument } from './model.js';
import { validationError } from '../kernel/errors.js';
import { sniffContentType } from './extract.js';
import type { Logger } from '../kernel/logger.js';
import { refusedAs, type Guard } from '../net/guard.js';
import type { Scope } from '../kernel/scope.js';
import { firstLine, normalizePath } from './document-paths.js';
import { newIngestState } from './ingest.js';

/** What the asset intake is built from: the document service's dependencies and the steps it shares. */
interface AssetIntakeDeps {
  blobs: BlobStore;
  guard: Guard;
  config: Config;
  log?: Logger;
  brainFor: (scope: Scope, brainId?: string) => Promise<string>;
  insert: (
    scope: Scope,
    r: KnowledgeDocument,
    ingestBody: boolean,
  ) => Promise<{ doc: KnowledgeDocument; jobId: string | null }>;
  by: (scope: Scope) => string | null;
}

/** What both groups of the intake share: the dependencies, a new asset's row and the store of its body. */
function assetIntakeContext(d: AssetIntakeDeps) {
  const { config, by } = d;
  const blobKey = (scope: Scope, id: string) => `assets/${scope.workspaceId}/${id}`;
  return {
    d,
    blobKey,
    newAsset: (
      scope: Scope,
      o: {
        id?: string;
        brainId: string;
        name: string;
        path: string;
        metadata: Record<string, unknown> | undefined;
        skipEmbedding: boolean;
        source: KnowledgeDocument['source'];
        blob: StoredBlob | null;
        contentType: string | null;
      },
    ): KnowledgeDocument => {
      const now = new Date();
      return {
        _id: o.id ?? randomUUID(),
        workspaceId: scope.workspaceId,
        brainId: o.brainId,
        lane: 'asset',
        name: o.name,
        path: o.path,
        metadata: o.metadata ?? {},
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
    },

    /** Stores a body stream as a new asset's blob; the row is written once the body is complete. */
    storeBody: async (scope: Scope, id: string, body: Readable, hint: { declared?: string; name?: string }) => {
      const blob = await d.blobs.put(blobKey(scope, id), body, {
        maxBytes: config.ASSET_MAX_BYTES,
        contentType: hint.declared,
      });
      return { blob, contentType: await sniffContentType(blob.head, hint) };
    },
  };
}
type AssetIntakeContext = ReturnType<typeof assetIntakeContext>;

/**
 * How assets come in (docs/knowledge.md): a row with metadata (and a body when `content` is sent),
 * a text or a URL fetched through the outbound guard, or a multipart upload streamed into the blob
 * store. The body is stored first; the row is written once it is complete.
 */
export function createAssetIntake(d: AssetIntakeDeps) {
  const ctx = assetIntakeContext(d);
  return {
    ...createAssetSources(ctx), // createAsset, ingestSource
    ...createAssetUploads(ctx), // ingestUpload, finishUpload, discardUpload
  };
}

/** Assets made from what a request carries: metadata with an optional text body, a text, or a URL to fetch. */
function createAssetSources(ctx: AssetIntakeContext) {
  const { d, newAsset, storeBody } = ctx;
  const { brainFor, insert } = d;
  return {
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
        const res = await d.guard
          .fetch(url, { headers: { accept: 'text/html, text/plain, text/markdown, application/pdf, */*;q=0.5' } })
          .catch(refusedAs('source.value'));
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
  };
}

/** Multipart uploads: the body streams into the blob store, then the row is written (or the blob discarded). */
function createAssetUploads(ctx: AssetIntakeContext) {
  const { d, newAsset, storeBody, blobKey } = ctx;
  const { brainFor, insert } = d;
  return {
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
  };
}
