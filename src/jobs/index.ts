/** The jobs area's door: what other areas, routes, activities and the worker may use. */
export {
  InvokeAccepted,
  InvokeBody,
  Job,
  JobAccepted,
  JobIdParams,
  JobList,
  JobListQuery,
  JobStreamQuery,
  MultitaskStrategy,
  NeuronTaskOptions,
} from './schemas.js';
export { NOT_STARTED_STEP, TRACE_WRITE_MARGIN_MS, createJobService, terminalEntry } from './service.js';
export type { Admission, JobPatch, JobService } from './service.js';
export { createProgressCoalescer } from './progress.js';
export { ShownReply } from './shown-reply.js';
export { TERMINAL_STATES } from './model.js';
export type { Job as JobRecord, JobDoc, UnannouncedEnd } from './model.js';
export type { JobStore as JobRepo } from './store.js';
export { createJobRepo, jobIndexes, placesOf } from './store.mongo.js';
