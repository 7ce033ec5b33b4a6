import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { IdParams, SuccessBody, paging } from '../../../src/kernel/schemas.js';
import {
  BulkDeleteBody,
  ChunkList,
  Memory,
  MemoryCreateBody,
  MemoryIngestBody,
  MemoryList,
  MemoryListQuery,
  MemoryWithJob,
  Recollection,
  RecollectionCreateBody,
  RecollectionList,
  RecollectionStats,
  RecollectionUpdateBody,
  UploadFields,
} from '../../../src/knowledge/index.js';
import { streamUpload } from '../../multipart.js';
import { presentMemory, presentRecollection } from '../../presenters/knowledge.js';
import { presentPage } from '../../presenters/page.js';
import { areaRoutes } from '../../route.js';
import { chunkPage } from './assets.js';

const route = areaRoutes((s) => ({ config: s.config, memories: s.memories }));

const tags = ['memories'];
const rtags = ['recollections'];

/** Memories and recollections (docs/knowledge.md). Recollection search is with the discovery routes. */
export default [
  route({
    method: 'get',
    path: '/v1/memories',
    summary: 'List memories',
    brain: 'optional',
    query: MemoryListQuery,
    response: MemoryList,
    tags,
    handler: async ({ query, scope, services }) => {
      const p = await services.memories.list(scope, query);
      return { memories: p.items.map(presentMemory), ...presentPage(p) };
    },
  }),
  route({
    method: 'post',
    path: '/v1/memories',
    summary: 'Create a memory',
    status: 201,
    brain: 'optional',
    body: MemoryCreateBody,
    response: MemoryWithJob,
    tags,
    handler: async ({ body, scope, services }) => {
      const { memory, jobId } = await services.memories.create(scope, body);
      return { memory: presentMemory(memory), job_id: jobId };
    },
  }),
  route({
    method: 'post',
    path: '/v1/memories/ingest',
    summary: 'Ingest a file, text or URL as a memory',
    status: 201,
    brain: 'optional',
    response: MemoryWithJob,
    tags,
    description:
      'Multipart (file, name, description, owner_type, owner_id, skip_title_description, skip_embedding) or JSON (content or an http(s) file_url; owner_type, owner_id, skip_title_description, skip_embedding, metadata)',
    handler: async ({ ctx, scope, services }) => {
      if (ctx.is('multipart/form-data')) {
        const id = randomUUID();
        const { fields, file } = await streamUpload(ctx, {
          maxBytes: services.config.ASSET_MAX_BYTES,
          onFile: (stream, info) =>
            services.memories
              .storeUpload(scope, id, { stream, fileName: info.filename, declaredType: info.mimeType })
              .then((stored) => ({ stored, fileName: info.filename })),
        });
        const parsed = UploadFields.safeParse(fields);
        if (!parsed.success) {
          await services.memories.discardUpload(scope, id);
          throw parsed.error;
        }
        const { memory, jobId } = await services.memories.finishUpload(scope, id, file.stored, {
          ...parsed.data,
          fileName: file.fileName,
        });
        return { memory: presentMemory(memory), job_id: jobId };
      }
      const { memory, jobId } = await services.memories.ingest(
        scope,
        MemoryIngestBody.parse((ctx.request as { body?: unknown }).body ?? {}),
      );
      return { memory: presentMemory(memory), job_id: jobId };
    },
  }),
  route({
    method: 'post',
    path: '/v1/memories/bulk-delete',
    summary: 'Delete several memories',
    brain: 'optional',
    body: BulkDeleteBody,
    response: z.object({ deletedCount: z.number(), notFoundCount: z.number() }),
    tags,
    handler: async ({ body, scope, services }) => services.memories.bulkDelete(scope, body.ids),
  }),
  route({
    method: 'get',
    path: '/v1/memories/:id',
    summary: 'Read a memory',
    brain: 'optional',
    params: IdParams,
    response: Memory,
    tags,
    handler: async ({ params, scope, services }) => presentMemory(await services.memories.get(scope, params.id)),
  }),
  route({
    method: 'get',
    path: '/v1/memories/:id/chunks',
    summary: "List a memory's chunks",
    brain: 'optional',
    params: IdParams,
    query: z.object(paging(20, 500)),
    response: ChunkList,
    tags,
    handler: async ({ params, query, scope, services }) =>
      chunkPage(await services.memories.chunks(scope, params.id, query)),
  }),

  route({
    method: 'get',
    path: '/v1/recollections',
    summary: 'List recollections',
    brain: 'optional',
    query: z.object({ ...paging(20), brain_id: z.uuid().optional() }),
    response: RecollectionList,
    tags: rtags,
    handler: async ({ query, scope, services }) => {
      const p = await services.memories.listRecollections(scope, query);
      return { recollections: p.items.map((r) => presentRecollection(r)), ...presentPage(p) };
    },
  }),
  route({
    method: 'post',
    path: '/v1/recollections',
    summary: 'Create a recollection',
    status: 201,
    brain: 'optional',
    body: RecollectionCreateBody,
    response: Recollection,
    tags: rtags,
    description: 'name, description, and resource_ids (memories, assets or artifacts of the same brain) that join it',
    handler: async ({ body, scope, services }) => {
      const r = await services.memories.createRecollection(scope, body);
      return presentRecollection(r, await services.memories.members(scope, r._id));
    },
  }),
  route({
    method: 'get',
    path: '/v1/recollections/:id',
    summary: 'Read a recollection',
    brain: 'optional',
    params: IdParams,
    response: Recollection,
    tags: rtags,
    handler: async ({ params, scope, services }) =>
      presentRecollection(
        await services.memories.getRecollection(scope, params.id),
        await services.memories.members(scope, params.id),
      ),
  }),
  route({
    method: 'get',
    path: '/v1/recollections/:id/stats',
    summary: "Count a recollection's resources and chunks",
    brain: 'optional',
    params: IdParams,
    response: RecollectionStats,
    tags: rtags,
    description:
      'Counted from the rows on every read: member resources in the brain, their chunks, and the chunks with a vector',
    handler: async ({ params, scope, services }) => services.memories.stats(scope, params.id),
  }),
  route({
    method: 'put',
    path: '/v1/recollections/:id',
    summary: 'Change a recollection',
    brain: 'optional',
    params: IdParams,
    body: RecollectionUpdateBody,
    response: Recollection,
    tags: rtags,
    description:
      'name, description; resource_ids replaces the members, add_resource_ids and remove_resource_ids change them',
    handler: async ({ params, body, scope, services }) => {
      const r = await services.memories.updateRecollection(scope, params.id, body);
      return presentRecollection(r, await services.memories.members(scope, r._id));
    },
  }),
  route({
    method: 'delete',
    path: '/v1/recollections/:id',
    summary: 'Delete a recollection',
    brain: 'optional',
    params: IdParams,
    response: SuccessBody,
    tags: rtags,
    handler: async ({ params, scope, services }) => {
      await services.memories.removeRecollection(scope, params.id);
      return { success: true as const };
    },
  }),
];
