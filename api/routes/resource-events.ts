import { z } from 'zod';
import { resumeCursor, sseStream } from '../sse.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ events: s.events, streams: s.streams }));

/** The workspace's resource event stream (docs/knowledge.md, "Events and stimuli"). */
export default [
  route({
    method: 'get',
    path: '/v1/resource-events/stream',
    summary: "Stream the workspace's resource changes",
    kind: 'stream',
    query: z.object({ after: z.string().optional() }),
    tags: ['resources'],
    description:
      'SSE: { action: created | updated | deleted | moved, resource: { kind, id, brain_id, name, version }, at } for every change in the workspace; resume with after=<cursor>',
    handler: async ({ query, scope, services, ctx }) =>
      sseStream(ctx, {
        streams: services.streams,
        key: services.events.streamKey(scope.workspaceId),
        after: resumeCursor(ctx, query.after),
        endOnTerminal: false,
      }),
  }),
];
