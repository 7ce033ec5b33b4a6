import { SuccessBody } from '../../src/kernel/schemas.js';
import {
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
} from '../../src/neurons/index.js';
import { presentNeuron, presentNeuronHistory, presentNeuronPage, presentNeuronVersion } from '../presenters/neurons.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ neurons: s.neurons }));

const tags = ['neurons'];
const catalog = ['neurons', 'resources'];

/**
 * Neurons: the vertical family (`:id` is a UUID or a name/slug) and the
 * catalog family (resource UUID only, soft delete and restore). Invoke lives with jobs; the
 * neuron–reflex association routes live in reflexes.ts.
 */
export default [
  route({
    method: 'get',
    path: '/v1/neurons',
    summary: 'List neurons',
    brain: 'required',
    query: NeuronListQuery,
    response: NeuronList,
    tags,
    handler: async ({ query, scope, services }) => presentNeuronPage(await services.neurons.list(scope, query)),
  }),
  route({
    method: 'get',
    path: '/v1/neurons/:id',
    summary: 'Read a neuron',
    brain: 'optional',
    params: NeuronRefParams,
    query: NeuronGetQuery,
    response: Neuron,
    tags,
    description: 'Head by default; ?version=N hydrates the body of that stored version',
    handler: async ({ params, query, scope, services }) =>
      presentNeuron(await services.neurons.get(scope, params.id, query.version)),
  }),
  route({
    method: 'post',
    path: '/v1/neurons',
    summary: 'Create a neuron',
    status: 201,
    brain: 'optional',
    body: NeuronCreateBody,
    response: Neuron,
    tags,
    description: "Creates version 1 and the neuron's receptor trigger",
    handler: async ({ body, scope, services }) => presentNeuron(await services.neurons.create(scope, body)),
  }),
  route({
    method: 'put',
    path: '/v1/neurons/:id',
    summary: 'Change a neuron',
    brain: 'optional',
    params: NeuronRefParams,
    body: NeuronUpdateBody,
    response: Neuron,
    tags,
    description: 'Every change records a new head version',
    handler: async ({ params, body, scope, services }) =>
      presentNeuron(await services.neurons.update(scope, params.id, body)),
  }),
  route({
    method: 'delete',
    path: '/v1/neurons/:id',
    summary: 'Delete a neuron',
    brain: 'optional',
    params: NeuronRefParams,
    response: SuccessBody,
    tags,
    description: 'Hard remove, with its versions, reflex links and receptor',
    handler: async ({ params, scope, services }) => {
      await services.neurons.remove(scope, params.id);
      return { success: true };
    },
  }),
  route({
    method: 'get',
    path: '/v1/neurons/:id/versions',
    summary: "List a neuron's versions",
    brain: 'optional',
    params: NeuronRefParams,
    response: NeuronVersionList,
    tags,
    handler: async ({ params, scope, services }) =>
      presentNeuronHistory(await services.neurons.versions(scope, params.id)),
  }),
  route({
    method: 'get',
    path: '/v1/neurons/:id/versions/:version',
    summary: 'Read one version of a neuron',
    brain: 'optional',
    params: NeuronVersionParams,
    response: NeuronVersion,
    tags,
    handler: async ({ params, scope, services }) =>
      presentNeuronVersion(await services.neurons.version(scope, params.id, params.version)),
  }),
  route({
    method: 'post',
    path: '/v1/neurons/:id/versions/:version/promote',
    summary: 'Make a neuron version the head',
    brain: 'optional',
    params: NeuronVersionParams,
    response: Neuron,
    tags,
    description: "Makes a new head version whose body is that version's snapshot",
    handler: async ({ params, scope, services }) =>
      presentNeuron(await services.neurons.promote(scope, params.id, params.version)),
  }),

  route({
    method: 'get',
    path: '/v1/resources/neurons',
    summary: 'List neurons in the catalog',
    brain: 'optional',
    query: NeuronCatalogListQuery,
    response: NeuronList,
    tags: catalog,
    handler: async ({ query, scope, services }) => presentNeuronPage(await services.neurons.catalogList(scope, query)),
  }),
  route({
    method: 'get',
    path: '/v1/resources/neurons/:resource_id',
    summary: 'Read a neuron from the catalog',
    brain: 'optional',
    params: NeuronResourceParams,
    response: Neuron,
    tags: catalog,
    description: 'Head; soft-deleted neurons stay readable here (deleted_at is set)',
    handler: async ({ params, scope, services }) =>
      presentNeuron(await services.neurons.catalogGet(scope, params.resource_id)),
  }),
  route({
    method: 'get',
    path: '/v1/resources/neurons/:resource_id/history',
    summary: "List a catalog neuron's versions",
    brain: 'optional',
    params: NeuronResourceParams,
    response: NeuronVersionList,
    tags: catalog,
    handler: async ({ params, scope, services }) =>
      presentNeuronHistory(await services.neurons.catalogHistory(scope, params.resource_id)),
  }),
  route({
    method: 'get',
    path: '/v1/resources/neurons/:resource_id/versions/:version',
    summary: 'Read one version of a catalog neuron',
    brain: 'optional',
    params: NeuronResourceVersionParams,
    response: NeuronVersion,
    tags: catalog,
    handler: async ({ params, scope, services }) =>
      presentNeuronVersion(await services.neurons.catalogVersion(scope, params.resource_id, params.version)),
  }),
  route({
    method: 'post',
    path: '/v1/resources/:resource_id/versions/:version/promote',
    summary: 'Make a catalog resource version the head',
    brain: 'optional',
    params: NeuronResourceVersionParams,
    response: Neuron,
    tags: catalog,
    handler: async ({ params, scope, services }) =>
      presentNeuron(await services.neurons.catalogPromote(scope, params.resource_id, params.version)),
  }),
  route({
    method: 'delete',
    path: '/v1/resources/neurons/:resource_id',
    summary: 'Soft-delete a neuron',
    brain: 'optional',
    params: NeuronResourceParams,
    response: SuccessBody,
    tags: catalog,
    description: 'Soft delete: the neuron leaves lists, GET /v1/neurons/:id and invoke until restored',
    handler: async ({ params, scope, services }) => {
      await services.neurons.softDelete(scope, params.resource_id);
      return { success: true };
    },
  }),
  route({
    method: 'post',
    path: '/v1/resources/neurons/:resource_id/restore',
    summary: 'Restore a soft-deleted neuron',
    brain: 'optional',
    params: NeuronResourceParams,
    response: Neuron,
    tags: catalog,
    handler: async ({ params, scope, services }) =>
      presentNeuron(await services.neurons.restore(scope, params.resource_id)),
  }),
];
