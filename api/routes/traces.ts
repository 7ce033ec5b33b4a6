import { z } from 'zod';
import { validationError } from '../../src/kernel/errors.js';
import { ShareQuery } from '../../src/shares/index.js';
import type { Services } from '../../src/compose/services.js';
import type { ShareAccess } from '../../src/shares/index.js';
import {
  type TraceRecord,
  Engram,
  MessageCreateBody,
  MessagesQuery,
  Trace,
  TraceForkBody,
  TraceIdParams,
  TraceList,
  TraceListQuery,
  TracePatchBody,
} from '../../src/traces/index.js';
import { presentEngram, presentTrace } from '../presenters/traces.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';
import { resumeCursor, sseStream } from '../sse.js';

const route = areaRoutes((s) => ({ shares: s.shares, streams: s.streams, traces: s.traces }));

const EventsQuery = ShareQuery;
const ShareMessagesQuery = MessagesQuery.extend(ShareQuery.omit({ after: true }).shape);

/** A trace read with a share token in place of credentials: one of the link's own conversations only (404 otherwise). */
async function shareCheck(
  share: ShareAccess | undefined,
  services: Pick<Services, 'shares' | 'traces'>,
  trace: TraceRecord,
  q: { workspace?: string; receptor?: string; receptor_id?: string },
): Promise<void> {
  if (!share) return;
  services.shares.checkNames(share, q);
  await services.shares.assertConversation(share, trace.traceId, trace);
}

/** Traces (events: docs/streams.md, "Trace events"): implicit creation, API-order messages, title override, events. */
export default [
  route({
    method: 'get',
    path: '/v1/traces',
    summary: 'List traces',
    brain: 'optional',
    query: TraceListQuery,
    response: TraceList,
    tags: ['traces'],
    handler: async ({ query, scope, services }) => {
      const r = await services.traces.list(scope, query);
      return {
        traces: r.items.map(presentTrace),
        ...presentPage(r, { hasMore: true, byCursor: query.cursor !== undefined }),
      };
    },
  }),
  route({
    method: 'get',
    path: '/v1/traces/:id',
    summary: 'Read a trace',
    params: TraceIdParams,
    response: z.object({ trace: Trace }),
    tags: ['traces'],
    handler: async ({ params, scope, services }) => ({
      trace: presentTrace(await services.traces.resolve(scope, params.id)),
    }),
  }),
  route({
    method: 'patch',
    path: '/v1/traces/:id',
    summary: "Set a trace's title",
    params: TraceIdParams,
    body: TracePatchBody,
    response: z.object({ trace: Trace }),
    tags: ['traces'],
    description: 'Manual title update; overrides any generated title',
    handler: async ({ params, body, scope, services }) => {
      const t = await services.traces.resolve(scope, params.id);
      return { trace: presentTrace(await services.traces.setTitle(scope, t.traceId, body.title, 'manual', t)) };
    },
  }),
  route({
    method: 'get',
    path: '/v1/traces/:id/messages',
    summary: "Read a trace's messages",
    share: 'accept',
    params: TraceIdParams,
    query: ShareMessagesQuery,
    response: z.object({ engrams: z.array(Engram) }),
    tags: ['traces'],
    description:
      'Also with share-token parameters (t plus workspace and receptor, or receptor_id) in place of credentials',
    handler: async ({ params, query, scope, services, share }) => {
      const t = await services.traces.resolve(scope, params.id);
      await shareCheck(share, services, t, query);
      return { engrams: (await services.traces.messages(scope, t.traceId, query.limit)).map(presentEngram) };
    },
  }),
  route({
    method: 'post',
    path: '/v1/traces/:id/messages',
    summary: 'Add a human message to a trace',
    createsByPath: true,
    status: 201,
    params: TraceIdParams,
    body: MessageCreateBody,
    response: z.object({ engram: Engram }),
    tags: ['traces'],
    handler: async ({ params, body, scope, services }) => ({
      engram: presentEngram(await services.traces.addHumanMessage(scope, params.id, body)),
    }),
  }),
  route({
    method: 'post',
    path: '/v1/traces/:id/fork',
    summary: 'Fork a trace at one of its engrams',
    status: 201,
    params: TraceIdParams,
    body: TraceForkBody,
    response: z.object({ trace: Trace }),
    tags: ['traces'],
    examples: { request: { at_engram_id: '5f0c2a9e-8d1b-4c3a-9e7f-2b6d4a1c8e30' } },
    description:
      'A new trace holding copies of the engrams up to and including at_engram_id (the original is untouched), ' +
      'with forked_from naming both; invoking a neuron on the new trace continues from there. ' +
      '400 when at_engram_id is not an engram of this trace',
    handler: async ({ params, body, scope, services }) => ({
      trace: presentTrace(await services.traces.fork(scope, params.id, body.at_engram_id)),
    }),
  }),
  route({
    method: 'get',
    path: '/v1/traces/:id/events',
    summary: "Stream a trace's events",
    kind: 'stream',
    brain: 'optional',
    share: 'accept',
    params: TraceIdParams,
    query: EventsQuery,
    tags: ['traces'],
    description: 'SSE: trace-scoped events (new engrams, run state, title changes); also with share-token parameters',
    handler: async ({ params, query, scope, services, ctx, share }) => {
      // Auth rule 4: a session user (JWT) reads trace events within a brain.
      if (scope.credential === 'jwt' && !scope.brainId)
        throw validationError('X-Brain-Id header is required for trace events with a session token');
      const t = await services.traces.resolve(scope, params.id);
      await shareCheck(share, services, t, query);
      return sseStream(ctx, {
        streams: services.streams,
        key: services.traces.streamKey(scope, t.traceId),
        after: resumeCursor(ctx, query.after),
        endOnTerminal: false,
      });
    },
  }),
];
