import type { Services } from '../../../src/compose/services.js';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { validationError } from '../../../src/kernel/errors.js';
import { IdParams } from '../../../src/kernel/schemas.js';
import {
  Asset,
  AssetCreateBody,
  AssetIngestBody,
  AssetList,
  AssetUpdateBody,
  AssetWithJob,
  Chunk,
  ChunkDeleteQuery,
  ChunkList,
  ChunkListQuery,
  ChunkParams,
  DocumentListQuery,
  StructureBatchBody,
  StructureQuery,
  Structure,
  UploadFields,
  VersionList,
} from '../../../src/knowledge/index.js';
import { streamUpload } from '../../multipart.js';
import { presentAsset, presentChunk, presentVersion } from '../../presenters/knowledge.js';
import { presentPage } from '../../presenters/page.js';
import { areaRoutes, type HandlerInput } from '../../route.js';
import type { Page } from '../../../src/kernel/store/paging.js';

/** What the asset routes use: the documents service and the upload limits. */
type AssetsApi = Pick<Services, 'config' | 'documents'>;
const route = areaRoutes((s): AssetsApi => ({ config: s.config, documents: s.documents }));

const tags = ['assets'];
const Deleted = z.object({ deleted_count: z.number() });

/** Shared by the asset and artifact lanes: chunk pages. */
export const chunkPage = (p: Page<Parameters<typeof presentChunk>[0]>) => ({
  chunks: p.items.map(presentChunk),
  ...presentPage(p),
});

/** The multipart form of POST /v1/assets/ingest: the file streams into the blob store, then the row is written. */
async function ingestUpload({ ctx, scope, services }: HandlerInput<unknown, unknown, unknown, AssetsApi>) {
  const id = randomUUID();
  const { fields, file } = await streamUpload(ctx, {
    maxBytes: services.config.ASSET_MAX_BYTES,
    onFile: (stream, info) =>
      services.documents
        .ingestUpload(scope, id, { stream, fileName: info.filename, declaredType: info.mimeType })
        .then((stored) => ({ stored, fileName: info.filename })),
  });
  const parsed = UploadFields.safeParse(fields);
  if (!parsed.success) {
    await services.documents.discardUpload(scope, id);
    throw parsed.error;
  }
  return services.documents.finishUpload(scope, id, file.stored, { ...parsed.data, fileName: file.fileName });
}

/** Assets (docs/knowledge.md): immutable bodies, versioned metadata, chunks. */
export default [
  route({
    method: 'get',
    path: '/v1/assets',
    summary: 'List assets',
    brain: 'optional',
    query: DocumentListQuery,
    response: AssetList,
    tags,
    handler: async ({ query, scope, services }) => {
      const p = await services.documents.list(scope, 'asset', query);
      return { assets: p.items.map(presentAsset), ...presentPage(p) };
    },
  }),
  route({
    method: 'post',
    path: '/v1/assets',
    summary: 'Create an asset',
    status: 201,
    brain: 'optional',
    body: AssetCreateBody,
    response: AssetWithJob,
    tags,
    description:
      'A row with metadata; with content, also a body that is chunked and embedded by an ingest job (job_id)',
    handler: async ({ body, scope, services }) => {
      const { doc, jobId } = await services.documents.createAsset(scope, body);
      return { asset: presentAsset(doc), job_id: jobId };
    },
  }),
  route({
    method: 'post',
    path: '/v1/assets/ingest',
    summary: 'Ingest a file, text or URL as an asset',
    status: 201,
    brain: 'optional',
    response: AssetWithJob,
    tags,
    description:
      'JSON { source: { type: text | url, value }, name, path, metadata, skip_embedding } or multipart/form-data (field "file", and name, path, metadata as JSON, skip_embedding); content type sniffed; 413 beyond ASSET_MAX_BYTES',
    handler: async (i) => {
      const { doc, jobId } = i.ctx.is('multipart/form-data')
        ? await ingestUpload(i)
        : await i.services.documents.ingestSource(
            i.scope,
            AssetIngestBody.parse((i.ctx.request as { body?: unknown }).body ?? {}),
          );
      return { asset: presentAsset(doc), job_id: jobId };
    },
  }),
  route({
    method: 'get',
    path: '/v1/assets/structure',
    summary: 'Read the asset folder structure',
    brain: 'optional',
    query: StructureQuery,
    response: Structure,
    tags,
    description: 'Folder structure under path_prefix: sub-folders with item counts, and the assets right there',
    handler: async ({ query, scope, services }) => services.documents.structure(scope, 'asset', query),
  }),
  route({
    method: 'post',
    path: '/v1/assets/structure-batch',
    summary: 'Read several asset folders at once',
    brain: 'optional',
    body: StructureBatchBody,
    response: z.object({ structures: z.array(Structure) }),
    tags,
    handler: async ({ body, scope, services }) => ({
      structures: await Promise.all(
        body.paths.map((p) =>
          services.documents.structure(scope, 'asset', { path_prefix: p, brain_id: body.brain_id }),
        ),
      ),
    }),
  }),
  route({
    method: 'get',
    path: '/v1/assets/chunks/:chunk_id',
    summary: 'Read an asset chunk',
    brain: 'optional',
    params: ChunkParams,
    response: Chunk,
    tags,
    handler: async ({ params, scope, services }) =>
      presentChunk(await services.documents.chunk(scope, params.chunk_id, 'asset')),
  }),
  route({
    method: 'get',
    path: '/v1/assets/:id',
    summary: 'Read an asset',
    brain: 'optional',
    params: IdParams,
    response: Asset,
    tags,
    handler: async ({ params, scope, services }) =>
      presentAsset(await services.documents.get(scope, params.id, 'asset')),
  }),
  route({
    method: 'put',
    path: '/v1/assets/:id',
    summary: "Change an asset's metadata",
    brain: 'optional',
    params: IdParams,
    body: AssetUpdateBody,
    response: AssetWithJob,
    tags,
    description:
      'Changes name, path, metadata or skip_embedding (each change a metadata version); the stored body cannot be replaced (400)',
    handler: async ({ params, body, scope, services }) => {
      const { doc, jobId } = await services.documents.updateAsset(
        scope,
        params.id,
        body as { name?: string; path?: string; metadata?: Record<string, unknown>; skip_embedding?: boolean },
      );
      return { asset: presentAsset(doc), job_id: jobId };
    },
  }),
  route({
    method: 'delete',
    path: '/v1/assets/:id',
    summary: 'Delete an asset',
    brain: 'optional',
    params: IdParams,
    response: z.object({ success: z.literal(true) }),
    tags,
    handler: async ({ params, scope, services }) => {
      await services.documents.remove(scope, params.id, 'asset');
      return { success: true as const };
    },
  }),
  route({
    method: 'get',
    path: '/v1/assets/:id/chunks',
    summary: "List an asset's chunks",
    brain: 'optional',
    params: IdParams,
    query: ChunkListQuery,
    response: ChunkList,
    tags,
    handler: async ({ params, query, scope, services }) =>
      chunkPage(await services.documents.chunks(scope, params.id, 'asset', query)),
  }),
  route({
    method: 'delete',
    path: '/v1/assets/:id/chunks',
    summary: 'Remove every chunk of an asset',
    brain: 'optional',
    params: IdParams,
    response: Deleted,
    tags,
    description: 'Removes every chunk of the asset (the body stays; a new ingest is not started)',
    handler: async ({ params, scope, services }) => ({
      deleted_count: await services.documents.deleteChunks(scope, params.id, 'asset'),
    }),
  }),
  route({
    method: 'delete',
    path: '/v1/assets/:id/chunks/by-source',
    summary: "Remove an asset's chunks from one source",
    brain: 'optional',
    params: IdParams,
    query: ChunkDeleteQuery,
    response: Deleted,
    tags,
    description: 'Removes the chunks that came from one source (query source, for example body)',
    handler: async ({ params, query, scope, services, ctx }) => {
      const source = query.source ?? (ctx.request as { body?: { source?: unknown } }).body?.source;
      if (typeof source !== 'string' || !source)
        throw validationError('source: required (query ?source= or JSON body { source })');
      return { deleted_count: await services.documents.deleteChunks(scope, params.id, 'asset', source) };
    },
  }),
  route({
    method: 'get',
    path: '/v1/assets/:id/versions',
    summary: "List an asset's versions",
    brain: 'optional',
    params: IdParams,
    response: VersionList,
    tags,
    handler: async ({ params, scope, services }) => {
      const v = await services.documents.versions(scope, params.id, 'asset');
      return { versions: v.map(presentVersion), total: v.length };
    },
  }),
];
