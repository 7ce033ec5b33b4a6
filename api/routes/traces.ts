import { z } from 'zod';
import { validationError } from '../../src/errors.js';
import { Uuid } from '../../src/schemas/common.js';
import { Engram, MessageCreateBody, MessagesQuery, Trace, TraceIdParams, TraceList, TraceListQuery, TracePatchBody } from '../../src/schemas/traces.js';
import { presentEngram, presentTrace } from '../presenters/trace.js';
import { route } from '../route.js';
import { resumeCursor, sseStream } from '../sse.js';

const EventsQuery = z.object({ after: z.string().optional() });

/** Traces (document 1, Traces): implicit creation, API-order messages, title override, events. */
export default [
  route({
    method: 'get', path: '/v1/traces', brain: 'optional', query: TraceListQuery, response: TraceList, tags: ['traces'],
    handler: async ({ query, scope, services }) => {
      const r = await services.traces.list(scope, query);
      return { traces: r.items.map(presentTrace), total: r.total, limit: r.limit, offset: r.offset, has_more: r.hasMore };
    },
  }),
  route({
    method: 'get', path: '/v1/traces/:id', params: TraceIdParams, response: z.object({ trace: Trace }), tags: ['traces'],
    handler: async ({ params, scope, services }) => ({ trace: presentTrace(await services.traces.get(scope, params.id)) }),
  }),
  route({
    method: 'patch', path: '/v1/traces/:id', params: TraceIdParams, body: TracePatchBody, response: z.object({ trace: Trace }), tags: ['traces'],
    summary: 'Manual title update; overrides any generated title',
    handler: async ({ params, body, scope, services }) => {
      await services.traces.get(scope, params.id);
      return { trace: presentTrace(await services.traces.setTitle(scope, params.id, body.title, 'manual')) };
    },
  }),
  route({
    method: 'get', path: '/v1/traces/:id/messages', params: TraceIdParams, query: MessagesQuery, response: z.object({ engrams: z.array(Engram) }), tags: ['traces'],
    handler: async ({ params, query, scope, services }) => ({ engrams: (await services.traces.messages(scope, params.id, query.limit)).map(presentEngram) }),
  }),
  route({
    method: 'post', path: '/v1/traces/:id/messages', createsByPath: true, status: 201, params: TraceIdParams, body: MessageCreateBody, response: z.object({ engram: Engram }), tags: ['traces'],
    handler: async ({ params, body, scope, services }) => ({ engram: presentEngram(await services.traces.addHumanMessage(scope, params.id, body)) }),
  }),
  route({
    method: 'get', path: '/v1/traces/:id/events', brain: 'optional', params: z.object({ id: Uuid }), query: EventsQuery, tags: ['traces'],
    summary: 'SSE: trace-scoped events (new engrams, run state, title changes)',
    handler: async ({ params, query, scope, services, ctx }) => {
      // Auth rule 4: a session user (JWT) reads trace events within a brain.
      if (scope.credential === 'jwt' && !scope.brainId) throw validationError('X-Brain-Id header is required for trace events with a session token');
      await services.traces.get(scope, params.id);
      return sseStream(ctx, { streams: services.streams, redis: services.redis, key: services.traces.streamKey(scope, params.id), after: resumeCursor(ctx, query.after), endOnTerminal: false });
    },
  }),
];
