import {
  ReceptorUsageRanking,
  UsageQuery,
  UsageReceptorsQuery,
  UsageStats,
  UsageWorkspaceParams,
} from '../../src/usage/index.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ usage: s.usage }));

/** Usage (docs/usage.md): figures from the usage ledger; the workspace-wide reads are for admins. */
export default [
  route({
    method: 'get',
    path: '/v1/usage',
    summary: "Read the caller's usage",
    query: UsageQuery,
    response: UsageStats,
    tags: ['usage'],
    description: 'Usage of the calling user (or API key) in the window',
    handler: async ({ query, scope, services }) => services.usage.stats(scope, query, true),
  }),
  route({
    method: 'get',
    path: '/v1/usage/:workspace_id',
    summary: "Read the workspace's usage",
    operationId: 'usage.workspace',

    roles: ['workspace_admin'],
    params: UsageWorkspaceParams,
    query: UsageQuery,
    response: UsageStats,
    tags: ['usage'],
    description: 'Usage of the whole workspace in the window (admin only)',
    handler: async ({ params, query, scope, services }) => {
      services.usage.checkWorkspace(scope, params.workspace_id);
      return services.usage.stats(scope, query, false);
    },
  }),
  route({
    method: 'get',
    path: '/v1/usage/:workspace_id/receptors',
    summary: 'Rank receptors by usage',
    roles: ['workspace_admin'],
    params: UsageWorkspaceParams,
    query: UsageReceptorsQuery,
    response: ReceptorUsageRanking,
    tags: ['usage'],
    description: 'Receptors ranked by tokens, cost or invocations (admin only)',
    handler: async ({ params, query, scope, services }) => {
      services.usage.checkWorkspace(scope, params.workspace_id);
      return {
        workspaceId: scope.workspaceId,
        sortBy: query.sortBy,
        receptors: await services.usage.receptorRanking(scope, query, query.sortBy),
      };
    },
  }),
];
