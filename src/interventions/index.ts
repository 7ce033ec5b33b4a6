/** The interventions area's door: what other areas, routes, activities and the worker may use. */
export { Intervention, InterventionListQuery, RespondBody, TokenParams } from './schemas.js';
export type { Delivery } from './schemas.js';
export { createInterventionService } from './service.js';
export type { InterventionService } from './service.js';
export { createInterventionRepo, interventionIndexes } from './store.mongo.js';
export type { DeliveryDoc, Intervention as InterventionRecord } from './model.js';
