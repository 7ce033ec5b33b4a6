import { SuccessBody } from '../../src/schemas/common.js';
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
} from '../../src/schemas/neurons.js';
import { presentNeuron, presentNeuronHistory, presentNeuronPage, presentNeuronVersion } from '../presenters/neuron.js';
import { route } from '../route.js';

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
    brain: 'required',
    query: NeuronListQuery,
    response: NeuronList,
    tags,
    handler: async ({ query, scope, services }) => presentNeuronPage(await services.neurons.list(scope, query)),
  }),
  route({
    method: 'get',
    path: '/v1/neurons/:id',
    brain: 'optional',
    params: NeuronRefParams,
    query: NeuronGetQuery,
    response: Neuron,
    tags,
    summary: 'Head by default; ?version=N hydrates the body of that stored version',
    handler: async ({ params, query, scope, services }) =>
      presentNeuron(await services.neurons.get(scope, params.id, query.version)),
  }),
  route({
    method: 'post',
    path: '/v1/neurons',
    status: 201,
    brain: 'optional',
    body: NeuronCreateBody,
    response: Neuron,
    tags,
    summary: "Creates version 1 and the neuron's receptor trigger",
    handler: async ({ body, scope, services }) => presentNeuron(await services.neurons.create(scope, body)),
  }),
  route({
    method: 'put',
    path: '/v1/neurons/:id',
    brain: 'optional',
    params: NeuronRefParams,
    body: NeuronUpdateBody,
    response: Neuron,
    tags,
    summary: 'Every change records a new head version',
    handler: async ({ params, body, scope, services }) =>
      presentNeuron(await services.neurons.update(scope, params.id, body)),
  }),
  route({
    method: 'delete',
    path: '/v1/neurons/:id',
    brain: 'optional',
    params: NeuronRefParams,
    response: SuccessBody,
    tags,
    summary: 'Hard remove, with its versions, reflex links and receptor',
    handler: async ({ params, scope, services }) => {
      await services.neurons.remove(scope, params.id);
      return { success: true };
    },
  }),
  route({
    method: 'get',
    path: '/v1/neurons/:id/versions',
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
    brain: 'optional',
    params: NeuronVersionParams,
    response: Neuron,
    tags,
    summary: "Makes a new head version whose body is that version's snapshot",
    handler: async ({ params, scope, services }) =>
      presentNeuron(await services.neurons.promote(scope, params.id, params.version)),
  }),

  route({
    method: 'get',
    path: '/v1/resources/neurons',
    brain: 'optional',
    query: NeuronCatalogListQuery,
    response: NeuronList,
    tags: catalog,
    handler: async ({ query, scope, services }) => presentNeuronPage(await services.neurons.catalogList(scope, query)),
  }),
  route({
    method: 'get',
    path: '/v1/resources/neurons/:resource_id',
    brain: 'optional',
    params: NeuronResourceParams,
    response: Neuron,
    tags: catalog,
    summary: 'Head; soft-deleted neurons stay readable here (deleted_at is set)',
    handler: async ({ params, scope, services }) =>
      presentNeuron(await services.neurons.catalogGet(scope, params.resource_id)),
  }),
  route({
    method: 'get',
    path: '/v1/resources/neurons/:resource_id/history',
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
    brain: 'optional',
    params: NeuronResourceParams,
    response: SuccessBody,
    tags: catalog,
    summary: 'Soft delete: the neuron leaves lists, GET /v1/neurons/:id and invoke until restored',
    handler: async ({ params, scope, services }) => {
      await services.neurons.softDelete(scope, params.resource_id);
      return { success: true };
    },
  }),
  route({
    method: 'post',
    path: '/v1/resources/neurons/:resource_id/restore',
    brain: 'optional',
    params: NeuronResourceParams,
    response: Neuron,
    tags: catalog,
    handler: async ({ params, scope, services }) =>
      presentNeuron(await services.neurons.restore(scope, params.resource_id)),
  }),
];
