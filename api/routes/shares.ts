import { z } from 'zod';
import { TERMINAL_STATES } from '../../src/jobs/index.js';
import { forbidden, notFound } from '../../src/kernel/errors.js';
import { SuccessBody } from '../../src/kernel/schemas.js';
import { ReceptorRefParams } from '../../src/receptors/index.js';
import {
  PublicExecuteBody,
  PublicIdParams,
  PublicJobRef,
  PublicReceptor,
  PublicSlugParams,
  PublicUpload,
  ShareCreateBody,
  ShareQuery,
  ShareRotateBody,
  ShareView,
} from '../../src/shares/index.js';
import { TraceIdParams, Trace } from '../../src/traces/index.js';
import type { ShareAccess } from '../../src/shares/index.js';
import { readOneFile } from '../multipart.js';
import { presentPublicReceptor, presentShare } from '../presenters/shares.js';
import { presentTrace } from '../presenters/traces.js';
import type { Services } from '../../src/compose/services.js';
import { areaRoutes, type HandlerInput } from '../route.js';
import { endedAfter, resumeCursor, sseStream } from '../sse.js';

const route = areaRoutes((s) => ({ jobs: s.jobs, shares: s.shares, streams: s.streams, traces: s.traces }));

const tags = ['shares'];
const pub = ['public'];
/** Files a share link accepts: text, JSON, CSV, PDF, Office documents and common images, 10 MB each. */
const SHARE_UPLOAD_MAX_BYTES = 10 * 1024 * 1024;
const ALLOWED =
  /^(text\/(plain|markdown|csv|html)|application\/(json|pdf|vnd\.openxmlformats-officedocument\.[a-z.]+)|image\/(png|jpeg|gif|webp))$/;
const JobQuery = ShareQuery.pick({ t: true, workspace: true, receptor: true, receptor_id: true, after: true });

async function jobRef(i: HandlerInput<unknown, unknown, z.infer<typeof PublicExecuteBody>, Pick<Services, 'shares'>>) {
  const a = i.share!;
  const { job, traceId } = await i.services.shares.execute(a, i.body);
  return {
    job_id: job._id,
    status: 'pending' as const,
    trace_id: traceId,
    receptor_id: a.receptor._id,
    stream_url: `/v1/public/jobs/${job._id}/stream?receptor_id=${a.receptor._id}`,
  };
}

/** A trace read through a link: the names must be the link's (403 otherwise), the trace one of its conversations (404 otherwise). */
async function linkTrace(
  i: { share?: ShareAccess; services: Pick<Services, 'shares' | 'traces'> },
  traceId: string,
  q: z.infer<typeof ShareQuery>,
) {
  const a = i.share!;
  i.services.shares.checkNames(a, q);
  const t = await i.services.traces.get(a.scope, traceId);
  await i.services.shares.assertConversation(a, t.traceId, t);
  return t;
}

/**
 * Share links (the .../share routes and the public routes; docs/shares.md):
 * management (create, get, revoke, rotate) and every route a person without an account uses.
 */
export default [
  route({
    method: 'post',
    path: '/v1/receptors/:workspace_slug/:slug_or_id/share',
    summary: "Create a receptor's share link",
    operationId: 'receptors.share.create',

    status: 201,
    params: ReceptorRefParams,
    body: ShareCreateBody,
    response: ShareView,
    tags,
    description: "Creates the receptor's share token (shown once); 409 when it has one",
    handler: async ({ params, body, scope, services }) => {
      const s = await services.shares.create(scope, params.workspace_slug, params.slug_or_id, body);
      return presentShare(s.doc, s.receptor, await services.shares.usedOf(s.doc), {
        token: s.token,
        workspace: params.workspace_slug,
      });
    },
  }),
  route({
    method: 'get',
    path: '/v1/receptors/:workspace_slug/:slug_or_id/share',
    summary: "Read a receptor's share link",
    operationId: 'receptors.share.get',

    params: ReceptorRefParams,
    response: ShareView,
    tags,
    handler: async ({ params, scope, services }) => {
      const s = await services.shares.get(scope, params.workspace_slug, params.slug_or_id);
      return presentShare(s.doc, s.receptor, await services.shares.usedOf(s.doc));
    },
  }),
  route({
    method: 'delete',
    path: '/v1/receptors/:workspace_slug/:slug_or_id/share',
    summary: "Revoke a receptor's share link",
    params: ReceptorRefParams,
    response: SuccessBody,
    tags,
    description: 'Revokes the token: it stops working at once',
    handler: async ({ params, scope, services }) => {
      await services.shares.revoke(scope, params.workspace_slug, params.slug_or_id);
      return { success: true as const };
    },
  }),
  route({
    method: 'post',
    path: '/v1/receptors/:workspace_slug/:slug_or_id/share/rotate',
    summary: "Replace a receptor's share token",
    params: ReceptorRefParams,
    body: ShareRotateBody,
    response: ShareView,
    tags,
    description: 'A new token (shown once); the old one stops working at once; settings may change in the same call',
    handler: async ({ params, body, scope, services }) => {
      const s = await services.shares.rotate(scope, params.workspace_slug, params.slug_or_id, body);
      return presentShare(s.doc, s.receptor, await services.shares.usedOf(s.doc), {
        token: s.token,
        workspace: params.workspace_slug,
      });
    },
  }),

  route({
    method: 'get',
    path: '/v1/public/receptors/by-id/:receptor_id',
    summary: 'Read a shared receptor by id',
    auth: 'optional',
    share: 'only',
    params: PublicIdParams,
    query: ShareQuery,
    response: PublicReceptor,
    tags: pub,
    handler: async ({ params, share, services }) => {
      services.shares.checkReceptor(share!, { id: params.receptor_id });
      return presentPublicReceptor(share!);
    },
  }),
  route({
    method: 'post',
    path: '/v1/public/receptors/by-id/:receptor_id/execute',
    summary: 'Run a shared receptor by id',
    status: 202,
    auth: 'optional',
    share: 'only',
    params: PublicIdParams,
    query: ShareQuery,
    body: PublicExecuteBody,
    response: PublicJobRef,
    tags: pub,
    handler: async (i) => {
      i.services.shares.checkReceptor(i.share!, { id: i.params.receptor_id });
      return jobRef(i);
    },
  }),
  route({
    method: 'post',
    path: '/v1/public/receptors/by-id/:receptor_id/assets',
    summary: 'Upload a file to a shared receptor',
    status: 201,
    auth: 'optional',
    share: 'only',
    params: PublicIdParams,
    query: ShareQuery,
    response: PublicUpload,
    tags: pub,
    description:
      'multipart/form-data, field "file": text, JSON, CSV, PDF, Office documents, PNG/JPEG/GIF/WebP, 10 MB; 403 when the link does not allow files',
    handler: async ({ params, share, services, ctx }) => {
      services.shares.checkReceptor(share!, { id: params.receptor_id });
      if (!share!.share.allowFiles) throw forbidden('This share link does not accept files');
      const file = await readOneFile(ctx, { maxBytes: SHARE_UPLOAD_MAX_BYTES, allowed: (t) => ALLOWED.test(t) });
      const doc = await services.shares.upload(share!, file);
      return { asset: { id: doc._id, name: doc.name, content_type: doc.contentType, size: doc.size } };
    },
  }),
  route({
    method: 'get',
    path: '/v1/public/receptors/:workspace/:slug',
    summary: 'Read a shared receptor',
    auth: 'optional',
    share: 'only',
    params: PublicSlugParams,
    query: ShareQuery,
    response: PublicReceptor,
    tags: pub,
    handler: async ({ params, share, services }) => {
      services.shares.checkReceptor(share!, { workspace: params.workspace, slug: params.slug });
      return presentPublicReceptor(share!);
    },
  }),
  route({
    method: 'post',
    path: '/v1/public/receptors/:workspace/:slug/execute',
    summary: 'Run a shared receptor',
    status: 202,
    auth: 'optional',
    share: 'only',
    params: PublicSlugParams,
    query: ShareQuery,
    body: PublicExecuteBody,
    response: PublicJobRef,
    tags: pub,
    handler: async (i) => {
      i.services.shares.checkReceptor(i.share!, { workspace: i.params.workspace, slug: i.params.slug });
      return jobRef(i);
    },
  }),
  route({
    method: 'get',
    path: '/v1/public/traces/:id',
    summary: "Read a shared receptor's trace",
    auth: 'optional',
    share: 'only',
    params: TraceIdParams,
    query: ShareQuery,
    response: z.object({ trace: Trace }),
    tags: pub,
    handler: async (i) => ({ trace: presentTrace(await linkTrace(i, i.params.id, i.query)) }),
  }),
  route({
    method: 'get',
    path: '/v1/public/traces/:id/events',
    summary: "Stream a shared receptor's trace events",
    kind: 'stream',
    auth: 'optional',
    share: 'only',
    params: TraceIdParams,
    query: ShareQuery,
    tags: pub,
    description: "SSE: the trace's events, for a trace of the link's receptor",
    handler: async (i) => {
      await linkTrace(i, i.params.id, i.query);
      return sseStream(i.ctx, {
        streams: i.services.streams,
        key: i.services.traces.streamKey(i.share!.scope, i.params.id),
        after: resumeCursor(i.ctx, i.query.after),
        endOnTerminal: false,
      });
    },
  }),
  route({
    method: 'get',
    path: '/v1/public/jobs/:job_id/stream',
    summary: "Stream a shared receptor's job",
    kind: 'stream',
    auth: 'optional',
    share: 'only',
    params: z.object({ job_id: z.uuid() }),
    query: JobQuery,
    tags: pub,
    description: 'SSE: a job the link started; 404 for any other job',
    handler: async ({ params, query, share, services, ctx }) => {
      const a = share!;
      services.shares.checkNames(a, query);
      const job = await services.jobs.repoFind(params.job_id);
      // Only a job the link started: another link's, a member's fire of the same receptor, or another workspace's job read as missing.
      if (!job || job.workspaceId !== a.share.workspaceId || job.shareTokenId !== a.share._id) throw notFound('Job');
      const key = services.jobs.streamKey(job._id);
      const after = resumeCursor(ctx, query.after);
      const backlog = services.streams.range(key, after);
      backlog.catch(() => undefined); // awaited (and its error answered) by the check or the stream: only no unhandled rejection
      const isFinished = async () =>
        TERMINAL_STATES.includes((await services.jobs.repoFind(job._id))?.status ?? 'failed');
      // Resumed after the end of a finished job: 204, so an EventSource stops reconnecting.
      if (await endedAfter(services.streams, key, after, backlog, isFinished)) return undefined;
      return sseStream(ctx, {
        streams: services.streams,
        key,
        after,
        backlog,
        endOnTerminal: true,
        isFinished,
      });
    },
  }),
];
