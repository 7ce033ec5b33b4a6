import type { z } from 'zod';
import { SuccessBody } from '../../src/kernel/schemas.js';
import { Secret, SecretList, SecretParams, SecretPutBody, type SecretMeta } from '../../src/secrets/index.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ secrets: s.secrets }));

const tags = ['secrets'];
const admin = ['workspace_admin' as const];
const present = (s: SecretMeta): z.input<typeof Secret> => ({
  name: s.name,
  created_by: s.createdBy,
  allowed_hosts: s.allowedHosts ?? null,
  usable_by: s.usableBy ?? 'admins',
  created_at: s.createdAt.toISOString(),
  updated_at: s.updatedAt.toISOString(),
});

/**
 * Workspace secrets (docs/pathways.md, "Secrets"): values a pathway's HTTP node sends as
 * `{{ secrets.NAME }}`. Admins only; the value is sealed at rest and no route returns it.
 */
export default [
  route({
    method: 'get',
    path: '/v1/secrets',
    summary: "List the workspace's secrets",
    roles: admin,
    response: SecretList,
    tags,
    description: "The workspace's secrets: names and times, never values",
    handler: async ({ scope, services }) => ({ secrets: (await services.secrets.list(scope)).map(present) }),
  }),
  route({
    // The name is the caller's own workspace's: another workspace's secret of that name is never touched.
    method: 'put',
    path: '/v1/secrets/:name',
    summary: 'Create or replace a secret',
    roles: admin,
    createsByPath: true,
    params: SecretParams,
    body: SecretPutBody,
    response: Secret,
    tags,
    description:
      'Creates or replaces a secret and its use policy (allowed_hosts, usable_by); the value is stored sealed and never returned',
    handler: async ({ params, body, scope, services }) =>
      present(
        (
          await services.secrets.put(scope, params.name, body.value, {
            allowedHosts: body.allowed_hosts ?? null,
            usableBy: body.usable_by,
          })
        ).secret,
      ),
  }),
  route({
    method: 'delete',
    path: '/v1/secrets/:name',
    summary: 'Delete a secret',
    roles: admin,
    params: SecretParams,
    response: SuccessBody,
    tags,
    handler: async ({ params, scope, services }) => {
      await services.secrets.remove(scope, params.name);
      return { success: true as const };
    },
  }),
];
