import { IdParams, SuccessBody } from '../../src/kernel/schemas.js';
import { Budget, BudgetCreateBody, BudgetList, BudgetListQuery, BudgetUpdateBody } from '../../src/usage/index.js';
import { presentBudget } from '../presenters/budgets.js';
import { areaRoutes } from '../route.js';
import { presentPage } from '../presenters/page.js';

const route = areaRoutes((s) => ({ budgets: s.budgets }));

const tags = ['budgets'];
const admin = ['workspace_admin' as const];

/** Budgets (docs/usage.md): spending caps on the workspace, a receptor, a neuron or a share link; admins only. */
export default [
  route({
    method: 'post',
    path: '/v1/budgets',
    summary: 'Set a budget',
    status: 201,
    roles: admin,
    body: BudgetCreateBody,
    response: Budget,
    tags,
    description: 'Sets a budget (tokens or USD per day, month or in all); one per target, measure and period',
    handler: async ({ body, scope, services }) =>
      presentBudget(await services.budgets.view(await services.budgets.create(scope, body))),
  }),
  route({
    method: 'get',
    path: '/v1/budgets',
    summary: 'List budgets with their spend',
    roles: admin,
    query: BudgetListQuery,
    response: BudgetList,
    tags,
    description: "The workspace's budgets with what each has spent in its current period",
    handler: async ({ query, scope, services }) => {
      const p = await services.budgets.list(scope, query);
      return {
        budgets: await Promise.all(p.items.map(async (b) => presentBudget(await services.budgets.view(b)))),
        ...presentPage(p),
      };
    },
  }),
  route({
    method: 'get',
    path: '/v1/budgets/:id',
    summary: 'Read a budget',
    roles: admin,
    params: IdParams,
    response: Budget,
    tags,
    handler: async ({ params, scope, services }) =>
      presentBudget(await services.budgets.view(await services.budgets.get(scope, params.id))),
  }),
  route({
    method: 'patch',
    path: '/v1/budgets/:id',
    summary: 'Change a budget',
    roles: admin,
    params: IdParams,
    body: BudgetUpdateBody,
    response: Budget,
    tags,
    description: 'Changes the limit, policy or name (takes effect at the next model turn of every run)',
    handler: async ({ params, body, scope, services }) =>
      presentBudget(await services.budgets.view(await services.budgets.update(scope, params.id, body))),
  }),
  route({
    method: 'delete',
    path: '/v1/budgets/:id',
    summary: 'Delete a budget',
    roles: admin,
    params: IdParams,
    response: SuccessBody,
    tags,
    handler: async ({ params, scope, services }) => {
      await services.budgets.remove(scope, params.id);
      return { success: true as const };
    },
  }),
];
