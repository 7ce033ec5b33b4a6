/**
 * Receptors (docs/receptors.md): the area's only door. Receptors, their firings, channel bindings
 * and action plans (the model in `model.ts`, the store contract in `store.ts`, its adapter
 * `store.mongo.ts` with its part `firings.mongo.ts`), the service that keeps a receptor in step
 * with its neuron or pathway (`service.ts`, through the kernel's bus), firing (`fires.ts`, with the
 * system jobs in `system-jobs.ts`), schedules (`schedules.ts`, `timing.ts`), stimuli (`stimuli.ts`),
 * channel bindings (`channel-bindings.ts`) and the request shapes (`schemas.ts`). Routes,
 * activities, the composition root and other areas import from here.
 */
// The stored shapes; `…Record` where the wire schema (schemas.ts) has the plain name.
export type {
  ActionPlanDoc,
  ChannelBinding as ChannelBindingRecord,
  Receptor as ReceptorRecord,
  ReceptorDoc,
} from './model.js';
export type { Page, ReceptorStore as ReceptorRepo } from './store.js';
export { createReceptorRepo, receptorIndexes } from './store.mongo.js';
export * from './schemas.js';
export { Receptor, ChannelBinding } from './schemas.js';
export * from './service.js';
export * from './fires.js';
export * from './channel-bindings.js';
export * from './schedules.js';
export * from './stimuli.js';
