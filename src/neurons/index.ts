/** The neurons area's door: what other areas, routes, activities and the worker may use. */
export type { NeuronConfig, NeuronSnapshot } from './config-schemas.js';
export { assertScopeRole, toNeuronSlug } from './rules.js';
export {
  Neuron,
  NeuronCatalogListQuery,
  NeuronCreateBody,
  NeuronGetQuery,
  NeuronList,
  NeuronListQuery,
  NeuronRefParams,
  NeuronResourceParams,
  NeuronResourceVersionParams,
  NeuronUpdateBody,
  NeuronVersion,
  NeuronVersionList,
  NeuronVersionParams,
} from './schemas.js';
export type { NeuronVersionSummary } from './schemas.js';
export { createNeuronService } from './service.js';
export type { NeuronPage, NeuronService, NeuronVersionView, NeuronView } from './service.js';
export { createNeuronRepo, neuronIndexes } from './store.mongo.js';
export type { Neuron as NeuronRecord, NeuronDoc, NeuronVersion as NeuronVersionRecord } from './model.js';
export type { NeuronStore as NeuronRepo } from './store.js';
