import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { gone, notFound } from '../../src/kernel/errors.js';
import { IdParams, PageTotal, SuccessBody, pageFields, paging } from '../../src/kernel/schemas.js';
import {
  ApiKey,
  ApiKeyCreateBody,
  ApiKeyCreated,
  ApiKeyPatchBody,
  Brain,
  BrainCreateBody,
  Health,
  SessionContext,
  Workspace,
  WorkspacePatchBody,
} from '../../src/platform/index.js';
import type { Services } from '../../src/compose/services.js';
import type { Scope } from '../../src/kernel/scope.js';
import type { Context } from 'koa';
import { presentApiKey, presentBrain, presentWorkspace } from '../presenters/platform.js';
import { areaRoutes, type RouteDef } from '../route.js';
import { presentPage } from '../presenters/page.js';

const route = areaRoutes((s) => ({
  auth: s.auth,
  config: s.config,
  health: s.health,
  models: s.models,
  search: s.search,
  workspaces: s.workspaces,
}));

/** Unauthenticated health says healthy/unhealthy and version; a credential adds its workspace, the components and the search index. */
async function health({
  scope,
  services,
  ctx,
}: {
  scope: Scope;
  services: Pick<Services, 'health' | 'workspaces' | 'search'>;
  ctx: Context;
}) {
  const h = await services.health.check();
  ctx.status = h.healthy ? 200 : 503;
  // A load balancer or client polling health backs off as it would on any other 503.
  if (!h.healthy) ctx.set('Retry-After', '2');
  const ws =
    scope.workspaceId && h.components.mongodb === 'up'
      ? await services.workspaces.findWorkspace(scope.workspaceId)
      : null;
  ctx.body = {
    status: h.healthy ? 'healthy' : 'unhealthy',
    version: services.health.version,
    ...(ws
      ? { workspace: presentWorkspace(ws), components: h.components, search_index: services.search.status() }
      : {}),
  };
}

const healthRoute = (path: string, summary: string, operationId?: string): RouteDef =>
  route({
    method: 'get',
    path,
    summary,
    operationId,
    kind: 'health',
    auth: 'optional',
    response: Health,
    tags: ['health'],
    handler: async (i) => {
      await health(i);
    },
  });

export default [
  healthRoute('/health', "Check the API's health (unversioned path)", 'health.probe'),
  healthRoute('/v1/health', "Check the API's health"),
  route({
    method: 'get',
    path: '/v1/session/context',
    summary: "Read the caller's workspace, brains and roles",
    brain: 'optional',
    response: SessionContext,
    tags: ['session'],
    description: "Client bootstrap: workspace, brains and the credential's roles",
    handler: async ({ scope, services }) => {
      const ws = await services.workspaces.findWorkspace(scope.workspaceId);
      if (!ws) throw notFound('Workspace');
      const brains = await services.workspaces.brainsOf(scope.workspaceId, 200);
      const brain = scope.brainId ? (brains.find((b) => b._id === scope.brainId) ?? null) : null;
      return {
        workspace: presentWorkspace(ws),
        brain: brain ? presentBrain(brain) : null,
        brains: brains.map(presentBrain),
        user_id: scope.userId,
        api_key_id: scope.apiKeyId,
        roles: scope.roles,
        credential: scope.credential,
        temporal: {
          namespace: services.config.TEMPORAL_NAMESPACE,
          ui_url: services.config.TEMPORAL_UI_URL?.replace(/\/+$/, '') || null,
        },
      };
    },
  }),
  route({
    method: 'post',
    path: '/v1/api-keys',
    summary: 'Create an API key',
    auth: 'jwt',
    status: 201,
    body: ApiKeyCreateBody,
    response: ApiKeyCreated,
    tags: ['api-keys'],
    handler: async ({ body, scope, services }) => {
      const { doc, secret } = await services.auth.createApiKey(scope, body);
      return { ...presentApiKey(doc), key: secret };
    },
  }),
  route({
    method: 'get',
    path: '/v1/api-keys',
    summary: "List the workspace's API keys",
    auth: 'jwt',
    query: z.object(paging(100, 1000)),
    tags: ['api-keys'],
    response: z.object({
      api_keys: z.array(ApiKey),
      total: PageTotal,
      limit: z.number(),
      offset: z.number(),
      ...pageFields,
    }),
    handler: async ({ query, scope, services }) => {
      const p = await services.auth.listApiKeys(scope, query);
      return { api_keys: p.items.map(presentApiKey), ...presentPage(p) };
    },
  }),
  route({
    method: 'patch',
    path: '/v1/api-keys/:id',
    summary: "Set an API key's request limit",
    auth: 'jwt',
    roles: ['workspace_admin'],
    params: IdParams,
    body: ApiKeyPatchBody,
    response: ApiKey,
    tags: ['api-keys'],
    description: "Admin: sets or clears (null) the key's own request limit",
    handler: async ({ params, body, scope, services }) =>
      presentApiKey(
        await services.auth.setKeyRateLimit(
          scope,
          params.id,
          body.rate_limit ? { points: body.rate_limit.points, durationS: body.rate_limit.duration_s } : null,
        ),
      ),
  }),
  route({
    method: 'patch',
    path: '/v1/workspace',
    summary: 'Rename the workspace or change its slug',
    roles: ['workspace_admin'],
    body: WorkspacePatchBody,
    response: Workspace,
    tags: ['workspace'],
    description: "Admin: renames the caller's workspace or changes its slug (409 when taken)",
    handler: async ({ body, scope, services }) => presentWorkspace(await services.auth.updateWorkspace(scope, body)),
  }),
  route({
    method: 'delete',
    path: '/v1/api-keys/:id',
    summary: 'Revoke an API key',
    auth: 'jwt',
    params: IdParams,
    response: SuccessBody,
    tags: ['api-keys'],
    description: 'Revokes a key: your own, or any key of the workspace for an admin',
    handler: async ({ params, scope, services }) => {
      await services.auth.revokeApiKey(scope, params.id);
      return { success: true };
    },
  }),
  route({
    method: 'get',
    path: '/v1/brains',
    summary: "List the workspace's brains",
    response: z.object({ brains: z.array(Brain) }),
    tags: ['brains'],
    handler: async ({ scope, services }) => ({
      brains: (await services.workspaces.brainsOf(scope.workspaceId)).map(presentBrain),
    }),
  }),
  route({
    method: 'post',
    path: '/v1/brains',
    summary: 'Create a brain',
    status: 201,
    roles: ['workspace_admin'],
    body: BrainCreateBody,
    response: Brain,
    tags: ['brains'],
    handler: async ({ body, scope, services }) =>
      presentBrain(await services.workspaces.ensureBrain(scope.workspaceId, randomUUID(), body.name)),
  }),
  route({
    method: 'get',
    path: '/v1/config/models',
    summary: 'List the models neurons can use',
    response: z.object({ models: z.array(z.object({ model: z.string(), provider: z.string() })) }),
    tags: ['config'],
    description: 'Models the platform can run: provider/model ids for neuron_config.model',
    handler: async ({ services }) => ({ models: services.models.list() }),
  }),
  route({
    method: 'post',
    path: '/v1/chat/:traceId',
    summary: 'Chat (retired: always 410)',
    auth: 'none',
    // Declared for the document (every path parameter is); any value gets the 410.
    params: z.object({ traceId: z.string() }),
    tags: ['chat'],
    description: 'Retired: use POST /v1/neurons/:id/invoke with trace_id, stream and optional client_nonce',
    handler: async () => {
      throw gone(
        'POST /v1/chat/:traceId is retired; use POST /v1/neurons/:id/invoke with trace_id, stream and an optional client_nonce',
      );
    },
  }),
];
