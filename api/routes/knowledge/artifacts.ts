import { z } from 'zod';
import { IdParams } from '../../../src/kernel/schemas.js';
import {
  Artifact,
  ArtifactBodyQuery,
  ArtifactCreateBody,
  ArtifactList,
  ArtifactPatchEnvelope,
  ArtifactUpdateBody,
  ArtifactWithJob,
  Chunk,
  ChunkList,
  ChunkListQuery,
  ChunkParams,
  DocumentListQuery,
  Structure,
  StructureQuery,
  VersionList,
} from '../../../src/knowledge/index.js';
import { presentArtifact, presentArtifactRow, presentChunk, presentVersion } from '../../presenters/knowledge.js';
import { presentPage } from '../../presenters/page.js';
import { areaRoutes } from '../../route.js';
import { sendStoredBody } from '../../stored-body.js';
import { chunkPage } from './assets.js';

const route = areaRoutes((s) => ({ documents: s.documents }));

const tags = ['artifacts'];
const MIME = { markdown: 'text/markdown', text: 'text/plain' } as const;

/** Artifacts (docs/knowledge.md): mutable UTF-8 text with a content version on every change. */
export default [
  route({
    method: 'get',
    path: '/v1/artifacts',
    summary: 'List artifacts',
    brain: 'optional',
    query: DocumentListQuery,
    response: ArtifactList,
    tags,
    handler: async ({ query, scope, services }) => {
      const p = await services.documents.list(scope, 'artifact', query);
      return { artifacts: p.items.map(presentArtifactRow), ...presentPage(p) };
    },
  }),
  route({
    method: 'post',
    path: '/v1/artifacts',
    summary: 'Create an artifact',
    status: 201,
    brain: 'optional',
    body: ArtifactCreateBody,
    response: ArtifactWithJob,
    tags,
    handler: async ({ body, scope, services }) => {
      const { doc, jobId } = await services.documents.createArtifact(scope, body);
      return { artifact: presentArtifact(doc), job_id: jobId };
    },
  }),
  route({
    method: 'post',
    path: '/v1/artifacts/patch',
    summary: "Edit an artifact's content",
    brain: 'optional',
    body: ArtifactPatchEnvelope,
    response: ArtifactWithJob,
    tags,
    description:
      'Patch envelope: { artifact_id, base_version, edits: [replace | append | prepend | search_replace], title?, content_type? }; 409 when base_version is not the current version',
    handler: async ({ body, scope, services }) => {
      const { artifact_id, ...rest } = body;
      const { doc, jobId } = await services.documents.updateArtifact(scope, artifact_id, rest);
      return { artifact: presentArtifact(doc), job_id: jobId };
    },
  }),
  route({
    method: 'get',
    path: '/v1/artifacts/structure',
    summary: 'Read the artifact folder structure',
    brain: 'optional',
    query: StructureQuery,
    response: Structure,
    tags,
    handler: async ({ query, scope, services }) => services.documents.structure(scope, 'artifact', query),
  }),
  route({
    method: 'get',
    path: '/v1/artifacts/chunks/:chunk_id',
    summary: 'Read an artifact chunk',
    brain: 'optional',
    params: ChunkParams,
    response: Chunk,
    tags,
    handler: async ({ params, scope, services }) =>
      presentChunk(await services.documents.chunk(scope, params.chunk_id, 'artifact')),
  }),
  route({
    method: 'get',
    path: '/v1/artifacts/:id',
    summary: 'Read an artifact',
    brain: 'optional',
    params: IdParams,
    response: Artifact,
    tags,
    handler: async ({ params, scope, services }) =>
      presentArtifact(await services.documents.get(scope, params.id, 'artifact')),
  }),
  route({
    method: 'put',
    path: '/v1/artifacts/:id',
    summary: 'Change an artifact',
    brain: 'optional',
    params: IdParams,
    body: ArtifactUpdateBody,
    response: ArtifactWithJob,
    tags,
    description: 'Each change is a content version; base_version (optional) makes it conditional (409 when stale)',
    handler: async ({ params, body, scope, services }) => {
      const { doc, jobId } = await services.documents.updateArtifact(scope, params.id, body);
      return { artifact: presentArtifact(doc), job_id: jobId };
    },
  }),
  route({
    method: 'delete',
    path: '/v1/artifacts/:id',
    summary: 'Delete an artifact',
    brain: 'optional',
    params: IdParams,
    response: z.object({ success: z.literal(true) }),
    tags,
    handler: async ({ params, scope, services }) => {
      await services.documents.remove(scope, params.id, 'artifact');
      return { success: true as const };
    },
  }),
  route({
    method: 'get',
    path: '/v1/artifacts/:id/body',
    summary: "Download an artifact's body",
    brain: 'optional',
    params: IdParams,
    query: ArtifactBodyQuery,
    tags,
    description:
      "The raw body of a content version (version=N; default the current); format raw (its content type), markdown, text, or json ({ content, version, content_type }). Bodies carry `X-Content-Type-Options: nosniff` and `Content-Security-Policy: default-src 'none'; sandbox`; a type a browser would render (HTML, SVG, XML, anything but plain text, Markdown, CSV, JSON and YAML) is sent with `Content-Disposition: attachment`",
    handler: async ({ params, query, scope, services, ctx }) => {
      const b = await services.documents.artifactBody(scope, params.id, query.version);
      if (query.format === 'json') return { content: b.content, version: b.version, content_type: b.contentType };
      ctx.set('X-Artifact-Version', String(b.version));
      // nosniff and a sandboxing CSP always; HTML, SVG, XML and unknown types as attachments (api/stored-body.ts).
      sendStoredBody(ctx, b.content, {
        contentType: query.format === 'raw' ? b.contentType : MIME[query.format],
        charset: 'utf-8',
      });
      return undefined;
    },
  }),
  route({
    method: 'get',
    path: '/v1/artifacts/:id/chunks',
    summary: "List an artifact's chunks",
    brain: 'optional',
    params: IdParams,
    query: ChunkListQuery,
    response: ChunkList,
    tags,
    handler: async ({ params, query, scope, services }) =>
      chunkPage(await services.documents.chunks(scope, params.id, 'artifact', query)),
  }),
  route({
    method: 'get',
    path: '/v1/artifacts/:id/versions',
    summary: "List an artifact's versions",
    brain: 'optional',
    params: IdParams,
    response: VersionList,
    tags,
    handler: async ({ params, scope, services }) => {
      const v = await services.documents.versions(scope, params.id, 'artifact');
      return { versions: v.map(presentVersion), total: v.length };
    },
  }),
];
