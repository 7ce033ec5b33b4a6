import { z } from 'zod';
import { IdParams, SuccessBody } from '../../src/kernel/schemas.js';
import {
  BatchBody,
  CallbackQuery,
  CallbackResult,
  CheckBatchBody,
  ConnectAccepted,
  ConnectBody,
  ConnectionView,
  Integration,
  IntegrationBody,
  IntegrationParams,
  ReflexConnectionStatus,
} from '../../src/connections/index.js';
import type { IntegrationDoc } from '../../src/connections/index.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ config: s.config, connections: s.connections }));

const tags = ['reflexes'];
/**
 * An integration as admins see it. `has_client_secret`: a sealed secret, or an environment variable
 * the operator still allows (OAUTH_CLIENT_SECRET_ENVS); a name no longer allowed sends nothing.
 */
const presentIntegration = (i: IntegrationDoc, allowedEnvs: string[]): z.input<typeof Integration> => ({
  integration_id: i.integrationId,
  name: i.name,
  authorization_endpoint: i.authorizationEndpoint,
  token_endpoint: i.tokenEndpoint,
  scopes: i.scopes,
  client_id: i.clientId,
  has_client_secret: Boolean(i.clientSecretSealed || (i.clientSecretEnv && allowedEnvs.includes(i.clientSecretEnv))),
  per: i.per,
  mcp_server_url: i.mcpServerUrl ?? null,
  created_at: i.createdAt.toISOString(),
  updated_at: i.updatedAt.toISOString(),
});

/** Reflex connections over OAuth 2 (docs/tools.md, "Connections (OAuth 2)") and the integrations admins configure for them. */
export default [
  route({
    method: 'get',
    path: '/v1/integrations',
    summary: 'List OAuth integrations',
    roles: ['workspace_admin'],
    response: z.object({ integrations: z.array(Integration) }),
    tags,
    handler: async ({ scope, services }) => ({
      integrations: (await services.connections.listIntegrations(scope)).map((i) =>
        presentIntegration(i, services.config.OAUTH_CLIENT_SECRET_ENVS),
      ),
    }),
  }),
  route({
    // The id names an integration of the caller's own workspace (another workspace's of the same name is never touched).
    method: 'put',
    path: '/v1/integrations/:integration_id',
    summary: 'Create or replace an OAuth integration',
    roles: ['workspace_admin'],
    createsByPath: true,
    params: IntegrationParams,
    body: IntegrationBody.omit({ integration_id: true }),
    response: Integration,
    tags,
    description: 'Creates or replaces an OAuth 2 integration; the client secret is stored sealed and never returned',
    handler: async ({ params, body, scope, services }) =>
      presentIntegration(
        await services.connections.putIntegration(scope, { ...body, integration_id: params.integration_id }),
        services.config.OAUTH_CLIENT_SECRET_ENVS,
      ),
  }),
  route({
    method: 'delete',
    path: '/v1/integrations/:integration_id',
    summary: 'Delete an OAuth integration',
    roles: ['workspace_admin'],
    params: IntegrationParams,
    response: SuccessBody,
    tags,
    handler: async ({ params, scope, services }) => {
      await services.connections.removeIntegration(scope, params.integration_id);
      return { success: true as const };
    },
  }),
  ...(
    [
      ['/v1/reflexes/:id/connect', "Connect a reflex's account (OAuth)"],
      ['/v1/reflexes/:id/connections/initiate', "Start a reflex's OAuth connection"],
    ] as const
  ).map(([path, summary]) =>
    route({
      method: 'post',
      path,
      summary,
      params: IdParams,
      body: ConnectBody,
      response: ConnectAccepted,
      tags,
      description: 'Starts an OAuth 2 authorization-code flow with PKCE: open redirectUrl in the browser',
      handler: async ({ params, body, scope, services, ctx }) =>
        services.connections.initiate(scope, params.id, body, `${ctx.protocol}://${ctx.host}`),
    }),
  ),
  route({
    method: 'get',
    path: '/v1/reflexes/:id/callback',
    summary: 'OAuth callback of a reflex connection',
    auth: 'none',
    params: IdParams,
    query: CallbackQuery,
    response: CallbackResult,
    tags,
    description:
      'Where the provider sends the browser (code and state); with a callbackUrl the browser is sent on there',
    handler: async ({ params, query, services, ctx }) => {
      const { callbackUrl, ...result } = await services.connections.callback(params.id, query);
      if (callbackUrl) {
        const to = new URL(callbackUrl);
        to.searchParams.set('connectedAccountId', result.connectedAccountId);
        to.searchParams.set('success', 'true');
        ctx.redirect(to.toString());
        return undefined;
      }
      return result;
    },
  }),
  route({
    method: 'get',
    path: '/v1/reflexes/:id/connection',
    summary: "Read a reflex's connection",
    params: IdParams,
    response: ConnectionView,
    tags,
    handler: async ({ params, scope, services }) => services.connections.connection(scope, params.id),
  }),
  route({
    method: 'get',
    path: '/v1/reflexes/:id/connections/check',
    summary: 'Check whether a reflex is connected',
    params: IdParams,
    response: ReflexConnectionStatus,
    tags,
    handler: async ({ params, scope, services }) => services.connections.check(scope, params.id),
  }),
  route({
    method: 'post',
    path: '/v1/reflexes/connections/batch',
    summary: 'Read the connections of several reflexes',
    body: BatchBody,
    response: z.object({ connections: z.array(ConnectionView.extend({ reflexId: z.string() })) }),
    tags,
    handler: async ({ body, scope, services }) => ({
      connections: await services.connections.batch(scope, body.reflexIds),
    }),
  }),
  route({
    method: 'post',
    path: '/v1/reflexes/connections/check-batch',
    summary: 'Check whether several reflexes are connected',
    body: CheckBatchBody,
    response: z.object({ statuses: z.array(z.object({ reflexId: z.string(), status: ReflexConnectionStatus })) }),
    tags,
    handler: async ({ body, scope, services }) => ({
      statuses: await services.connections.checkBatch(scope, body.reflexIds),
    }),
  }),
  route({
    method: 'delete',
    path: '/v1/reflexes/:id/connection',
    summary: 'Disconnect a reflex',
    params: IdParams,
    response: SuccessBody,
    tags,
    handler: async ({ params, scope, services }) => {
      await services.connections.disconnect(scope, params.id);
      return { success: true as const };
    },
  }),
];
