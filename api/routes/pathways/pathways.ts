import { z } from 'zod';
import { SuccessBody } from '../../../src/kernel/schemas.js';
import {
  CheckRoleQuery,
  CheckRoleResult,
  Participant,
  ParticipantCreateBody,
  ParticipantIdParams,
  ParticipantUpdateBody,
  Pathway,
  PathwayCompilation,
  PathwayCompileBody,
  PathwayCreateBody,
  PathwayIdParams,
  PathwayList,
  PathwayListQuery,
  PathwayPromoteBody,
  PathwayUpdateBody,
  PathwayUserParams,
  PathwayValidateBody,
  PathwayValidation,
  PathwayVersion,
  PathwayVersionList,
  PathwayVersionParams,
} from '../../../src/pathways/index.js';
import {
  presentCompilation,
  presentParticipant,
  presentPathway,
  presentPathwayHistory,
  presentPathwayPage,
  presentPathwayVersion,
  presentRoleCheck,
  presentValidation,
} from '../../presenters/pathways.js';
import { areaRoutes } from '../../route.js';

const route = areaRoutes((s) => ({ pathways: s.pathways }));

const tags = ['pathways'];

/**
 * Pathways: CRUD with a capped version history, validate/compile, participants. Execute lives
 * with the run engine. Static paths come first: @koa/router runs the first registered route that matches, so
 * /v1/pathways/validate, /compile and /participants/:participantId are never taken for a pathway id.
 * Routes with :id use brain 'optional': when X-Brain-Id is sent, a pathway of another brain is 404.
 */
export default [
  route({
    method: 'post',
    path: '/v1/pathways/validate',
    summary: 'Validate a pathway graph',
    brain: 'optional',
    body: PathwayValidateBody,
    response: PathwayValidation,
    tags,
    description:
      "Always 200 for a well-formed body; neuron ids are checked against the caller's workspace (and brain when sent)",
    handler: async ({ body, scope, services }) => presentValidation(await services.pathways.validate(scope, body)),
  }),
  route({
    method: 'post',
    path: '/v1/pathways/compile',
    summary: 'Compile a pathway graph to its index form',
    brain: 'optional',
    body: PathwayCompileBody,
    response: PathwayCompilation,
    tags,
    description: 'Index-based graph (edges [source, target, handle?], -1 terminal); errors are reported, not thrown',
    handler: async ({ body, scope, services }) => presentCompilation(await services.pathways.compile(scope, body)),
  }),
  route({
    method: 'put',
    path: '/v1/pathways/participants/:participantId',
    summary: "Change a pathway participant's role",
    operationId: 'pathways.participants.updateById',
    brain: 'optional',
    resourceRole: { kind: 'pathway', role: 'owner' },
    params: ParticipantIdParams,
    body: ParticipantUpdateBody,
    response: z.object({ participant: Participant }),
    tags,
    description: 'Needs pathway role owner',
    handler: async ({ params, body, scope, services }) => ({
      participant: presentParticipant(
        await services.pathways.updateParticipant(scope, params.participantId, body.role),
      ),
    }),
  }),
  route({
    method: 'delete',
    path: '/v1/pathways/participants/:participantId',
    summary: 'Remove a pathway participant by id',
    operationId: 'pathways.participants.deleteById',
    brain: 'optional',
    resourceRole: { kind: 'pathway', role: 'owner' },
    params: ParticipantIdParams,
    response: SuccessBody,
    tags,
    description: 'Needs pathway role owner',
    handler: async ({ params, scope, services }) => {
      await services.pathways.removeParticipant(scope, params.participantId);
      return { success: true };
    },
  }),

  route({
    method: 'get',
    path: '/v1/pathways',
    summary: 'List pathways',
    brain: 'required',
    query: PathwayListQuery,
    response: PathwayList,
    tags,
    handler: async ({ query, scope, services }) => presentPathwayPage(await services.pathways.list(scope, query)),
  }),
  route({
    method: 'post',
    path: '/v1/pathways',
    summary: 'Create a pathway',
    status: 201,
    brain: 'required',
    body: PathwayCreateBody,
    response: Pathway,
    tags,
    description: 'Records version 1; the graph is validated (400 with the first errors); a JWT creator becomes owner',
    handler: async ({ body, scope, services }) => presentPathway(await services.pathways.create(scope, body)),
  }),
  route({
    method: 'get',
    path: '/v1/pathways/:id',
    summary: 'Read a pathway',
    brain: 'optional',
    params: PathwayIdParams,
    response: Pathway,
    tags,
    handler: async ({ params, scope, services }) => presentPathway(await services.pathways.get(scope, params.id)),
  }),
  route({
    method: 'put',
    path: '/v1/pathways/:id',
    summary: 'Change a pathway',
    brain: 'optional',
    resourceRole: { kind: 'pathway', role: 'editor' },
    params: PathwayIdParams,
    body: PathwayUpdateBody,
    response: Pathway,
    tags,
    description: 'Needs role editor; a change of graph, name or description records a new version',
    handler: async ({ params, body, scope, services }) =>
      presentPathway(await services.pathways.update(scope, params.id, body)),
  }),
  route({
    method: 'delete',
    path: '/v1/pathways/:id',
    summary: 'Delete a pathway',
    brain: 'optional',
    resourceRole: { kind: 'pathway', role: 'owner' },
    params: PathwayIdParams,
    response: SuccessBody,
    tags,
    description: 'Needs role owner; removes the history and the participants too',
    handler: async ({ params, scope, services }) => {
      await services.pathways.remove(scope, params.id);
      return { success: true };
    },
  }),
  route({
    method: 'get',
    path: '/v1/pathways/:id/versions',
    summary: "List a pathway's versions",
    brain: 'optional',
    params: PathwayIdParams,
    response: PathwayVersionList,
    tags,
    handler: async ({ params, scope, services }) =>
      presentPathwayHistory(await services.pathways.versions(scope, params.id)),
  }),
  route({
    method: 'get',
    path: '/v1/pathways/:id/versions/:version',
    summary: 'Read one version of a pathway',
    brain: 'optional',
    params: PathwayVersionParams,
    response: PathwayVersion,
    tags,
    description: '404 when the version is not kept (never recorded or dropped by the cap)',
    handler: async ({ params, scope, services }) =>
      presentPathwayVersion(await services.pathways.version(scope, params.id, params.version)),
  }),
  route({
    method: 'post',
    path: '/v1/pathways/:id/versions/:version/promote',
    summary: 'Make a pathway version the tip',
    brain: 'optional',
    resourceRole: { kind: 'pathway', role: 'editor' },
    params: PathwayVersionParams,
    body: PathwayPromoteBody,
    response: Pathway,
    tags,
    description: 'That version\'s graph becomes the tip as a new version ("promoted from vN"); needs role editor',
    handler: async ({ params, body, scope, services }) =>
      presentPathway(await services.pathways.promote(scope, params.id, params.version, body)),
  }),

  route({
    method: 'get',
    path: '/v1/pathways/:id/participants/check-role',
    summary: "Check a user's role on a pathway",
    brain: 'optional',
    params: PathwayIdParams,
    query: CheckRoleQuery,
    response: CheckRoleResult,
    tags,
    description: 'owner ⊇ editor ⊇ viewer; a non-participant has role null',
    handler: async ({ params, query, scope, services }) =>
      presentRoleCheck(await services.pathways.checkRole(scope, params.id, query.user_id, query.role)),
  }),
  route({
    method: 'get',
    path: '/v1/pathways/:id/participants',
    summary: "List a pathway's participants",
    brain: 'optional',
    params: PathwayIdParams,
    response: z.object({ participants: z.array(Participant) }),
    tags,
    handler: async ({ params, scope, services }) => ({
      participants: (await services.pathways.participants(scope, params.id)).map(presentParticipant),
    }),
  }),
  route({
    method: 'post',
    path: '/v1/pathways/:id/participants',
    summary: 'Add a participant to a pathway',
    status: 201,
    brain: 'optional',
    resourceRole: { kind: 'pathway', role: 'owner' },
    params: PathwayIdParams,
    body: ParticipantCreateBody,
    response: z.object({ participant: Participant }),
    tags,
    description: 'Needs pathway role owner; 409 when already a participant',
    handler: async ({ params, body, scope, services }) => ({
      participant: presentParticipant(await services.pathways.addParticipant(scope, params.id, body)),
    }),
  }),
  route({
    method: 'delete',
    path: '/v1/pathways/:id/participants/:userId',
    summary: 'Remove a user from a pathway',
    brain: 'optional',
    resourceRole: { kind: 'pathway', role: 'owner' },
    params: PathwayUserParams,
    response: SuccessBody,
    tags,
    description: 'Needs pathway role owner',
    handler: async ({ params, scope, services }) => {
      await services.pathways.removeParticipantByUser(scope, params.id, params.userId);
      return { success: true };
    },
  }),
];
