import { SuccessBody } from '../../src/kernel/schemas.js';
import { z } from 'zod';
import {
  NeuronReflexAssignment,
  NeuronReflexBody,
  NeuronReflexParams,
  NeuronReflexSummary,
  Reflex,
  ReflexCreateBody,
  ReflexIdParams,
  ReflexList,
  ReflexToolList,
  ReflexListQuery,
  ReflexUpdateBody,
} from '../../src/reflexes/index.js';
import { NeuronRefParams } from '../../src/neurons/index.js';
import { presentAssignment, presentNeuronReflex, presentReflex } from '../presenters/reflexes.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ reflexes: s.reflexes, runs: s.runs }));

const tags = ['reflexes'];

/** Reflexes (docs/tools.md) and their assignment to neurons; the connection routes come later. */
export default [
  route({
    method: 'get',
    path: '/v1/reflexes',
    summary: 'List reflexes',
    brain: 'optional',
    query: ReflexListQuery,
    response: ReflexList,
    tags,
    handler: async ({ query, scope, services }) => {
      const r = await services.reflexes.list(scope, query);
      return { reflexes: r.items.map(presentReflex), ...presentPage(r) };
    },
  }),
  route({
    method: 'get',
    path: '/v1/reflexes/:id',
    summary: 'Read a reflex',
    brain: 'optional',
    params: ReflexIdParams,
    response: Reflex,
    tags,
    handler: async ({ params, scope, services }) => presentReflex(await services.reflexes.get(scope, params.id)),
  }),
  route({
    method: 'get',
    path: '/v1/reflexes/:id/tools',
    summary: 'List the tools a reflex offers',
    brain: 'optional',
    params: ReflexIdParams,
    response: ReflexToolList,
    tags,
    description:
      "Its built-in tool, HTTP tools and the tools its MCP servers list, read as a run reads them (the caller's connection, the five-minute cache); what could not be listed is in errors",
    handler: async ({ params, scope, services }) => ({
      reflex_id: params.id,
      ...(await services.runs.reflexTools(scope, params.id)),
    }),
  }),
  route({
    method: 'post',
    path: '/v1/reflexes',
    summary: 'Create a reflex',
    status: 201,
    brain: 'optional',
    body: ReflexCreateBody,
    response: Reflex,
    tags,
    handler: async ({ body, scope, services }) => presentReflex(await services.reflexes.create(scope, body)),
  }),
  route({
    method: 'put',
    path: '/v1/reflexes/:id',
    summary: 'Change a reflex',
    brain: 'optional',
    params: ReflexIdParams,
    body: ReflexUpdateBody,
    response: Reflex,
    tags,
    handler: async ({ params, body, scope, services }) =>
      presentReflex(await services.reflexes.update(scope, params.id, body)),
  }),
  route({
    method: 'delete',
    path: '/v1/reflexes/:id',
    summary: 'Delete a reflex',
    brain: 'optional',
    params: ReflexIdParams,
    response: SuccessBody,
    tags,
    description: 'Also drops its neuron assignments',
    handler: async ({ params, scope, services }) => {
      await services.reflexes.remove(scope, params.id);
      return { success: true };
    },
  }),

  route({
    method: 'get',
    path: '/v1/neurons/:id/reflexes',
    summary: "List a neuron's reflexes",
    brain: 'optional',
    params: NeuronRefParams,
    response: z.array(NeuronReflexSummary),
    tags: ['neurons', ...tags],
    handler: async ({ params, scope, services }) =>
      (await services.reflexes.forNeuron(scope, params.id)).map(presentNeuronReflex),
  }),
  route({
    method: 'post',
    path: '/v1/neurons/:id/reflexes',
    summary: 'Assign a reflex to a neuron',
    status: 201,
    brain: 'optional',
    params: NeuronRefParams,
    body: NeuronReflexBody,
    response: NeuronReflexAssignment,
    tags: ['neurons', ...tags],
    description: '409 when already assigned; 404 for an unknown neuron or reflex',
    handler: async ({ params, body, scope, services }) =>
      presentAssignment(await services.reflexes.assign(scope, params.id, body.reflex_id)),
  }),
  route({
    method: 'delete',
    path: '/v1/neurons/:id/reflexes/:reflexId',
    summary: 'Remove a reflex from a neuron',
    brain: 'optional',
    params: NeuronReflexParams,
    response: SuccessBody,
    tags: ['neurons', ...tags],
    handler: async ({ params, scope, services }) => {
      await services.reflexes.unassign(scope, params.id, params.reflexId);
      return { success: true };
    },
  }),
];
