/** The traces area's door: what other areas, routes, activities and the worker may use. */
export { traceKey } from './model.js';
export {
  Engram,
  MessageCreateBody,
  MessagesQuery,
  Trace,
  TraceForkBody,
  TraceIdParams,
  TraceList,
  TraceListQuery,
  TracePatchBody,
} from './schemas.js';
export { createTraceService } from './service.js';
export type { EngramInput, TraceService } from './service.js';
export { createTraceRepo, traceIndexes } from './store.mongo.js';
export type { Engram as EngramRecord, Trace as TraceRecord } from './model.js';
export type { TraceStore as TraceRepo, WriteGuard } from './store.js';
