import { z } from 'zod';
import { IdParams } from '../../src/kernel/schemas.js';
import { Intervention, InterventionListQuery, RespondBody, TokenParams } from '../../src/interventions/index.js';
import { presentIntervention, presentPublicDelivery } from '../presenters/interventions.js';
import { presentPage } from '../presenters/page.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ interventions: s.interventions }));

/** Interventions: a paused run's question to a person, answered by API or public token. */
export default [
  route({
    method: 'get',
    path: '/v1/interventions',
    summary: 'List interventions',
    brain: 'optional',
    query: InterventionListQuery,
    tags: ['interventions'],
    description: 'List (default scope: the X-Brain-Id brain; brain_scope=all for the workspace); summary=1 for counts',
    handler: async ({ query, scope, services }) => {
      if (query.summary) return services.interventions.summary(scope, query);
      const r = await services.interventions.list(scope, query);
      return { interventions: r.items.map((i) => presentIntervention(i)), ...presentPage(r) };
    },
  }),
  route({
    method: 'get',
    path: '/v1/interventions/:id',
    summary: 'Read an intervention',
    params: IdParams,
    response: Intervention,
    tags: ['interventions'],
    handler: async ({ params, scope, services }) =>
      presentIntervention(await services.interventions.get(scope, params.id)),
  }),
  route({
    method: 'post',
    path: '/v1/interventions/:id/respond',
    summary: 'Answer an intervention',
    params: IdParams,
    body: RespondBody,
    response: Intervention,
    tags: ['interventions'],
    examples: { request: { action: 'approve', comment: 'Looks good' } },
    description: 'Answers the intervention and resumes the paused job',
    handler: async ({ params, body, scope, services }) =>
      presentIntervention(await services.interventions.respond(scope, params.id, body)),
  }),
  route({
    method: 'get',
    path: '/v1/public/interventions/:token',
    summary: 'Read an intervention by its public token',
    auth: 'none',
    params: TokenParams,
    tags: ['interventions'],
    handler: async ({ params, services }) => {
      const { doc, deliveryId } = await services.interventions.byToken(params.token);
      return presentPublicDelivery(doc, deliveryId);
    },
  }),
  route({
    method: 'post',
    path: '/v1/public/interventions/:token/respond',
    summary: 'Answer an intervention by its public token',
    auth: 'none',
    params: TokenParams,
    body: RespondBody,
    response: z.object({ intervention: z.object({ id: z.string(), status: z.string() }) }),
    tags: ['interventions'],
    handler: async ({ params, body, services }) => {
      const doc = await services.interventions.respondByToken(params.token, body);
      return { intervention: { id: doc._id, status: doc.status } };
    },
  }),
];
