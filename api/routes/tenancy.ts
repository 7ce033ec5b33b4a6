import type { Readable } from 'node:stream';
import { z } from 'zod';
import {
  RetentionPatchBody,
  RetentionRun,
  RetentionSettings,
  WorkspaceDeletion,
  WorkspaceIdParams,
  WorkspaceImported,
  WorkspaceStorage,
  type DeletionDoc,
} from '../../src/tenancy/index.js';
import { areaRoutes } from '../route.js';

const route = areaRoutes((s) => ({ tenancy: s.tenancy }));

const presentDeletion = (d: DeletionDoc) => ({
  id: d._id,
  status: d.status,
  progress: d.progress,
  current_step: d.currentStep,
  deleted: d.deleted,
  error: d.error,
  started_at: d.startedAt.toISOString(),
  finished_at: d.finishedAt?.toISOString() ?? null,
});

/** Retention, storage, export (workspace admins) and workspace deletion and import (the platform operator); docs/operations.md. */
export default [
  route({
    method: 'get',
    path: '/v1/workspace/retention',
    summary: "Read the workspace's retention windows",
    roles: ['workspace_admin'],
    response: RetentionSettings,
    tags: ['workspace'],
    handler: ({ scope, services }) => services.tenancy.windows(scope.workspaceId),
  }),
  route({
    method: 'patch',
    path: '/v1/workspace/retention',
    summary: "Set the workspace's retention windows",
    description: 'Seconds each kind is kept after it ended (0: forever; null: the platform default).',
    roles: ['workspace_admin'],
    body: RetentionPatchBody,
    response: RetentionSettings,
    tags: ['workspace'],
    handler: ({ scope, body, services }) => services.tenancy.saveWindows(scope.workspaceId, body),
  }),
  route({
    method: 'post',
    path: '/v1/workspace/retention/run',
    summary: "Apply the workspace's retention windows now",
    description: 'One bounded batch per kind; `more` says a kind had a full batch (call again).',
    roles: ['workspace_admin'],
    response: RetentionRun,
    tags: ['workspace'],
    handler: ({ scope, services }) => services.tenancy.applyRetention(scope.workspaceId),
  }),
  route({
    method: 'get',
    path: '/v1/workspace/storage',
    summary: 'Report the storage the workspace uses',
    roles: ['workspace_admin'],
    response: WorkspaceStorage,
    tags: ['workspace'],
    deadlineMs: 120_000,
    handler: ({ scope, services }) => services.tenancy.storage(scope.workspaceId),
  }),
  route({
    method: 'get',
    path: '/v1/workspace/export',
    summary: 'Export the workspace as an archive',
    description: 'Every row and blob of the workspace as gzip-compressed JSON lines (docs/operations.md).',
    roles: ['workspace_admin'],
    tags: ['workspace'],
    deadlineMs: 600_000,
    handler: ({ scope, services, ctx }): Promise<Readable> => {
      ctx.type = 'application/gzip';
      ctx.set('Content-Disposition', `attachment; filename="workspace-${scope.workspaceId}.cortex.jsonl.gz"`);
      return Promise.resolve(services.tenancy.exportArchive(scope.workspaceId));
    },
  }),
  route({
    method: 'delete',
    path: '/v1/operator/workspaces/:workspaceId',
    summary: 'Delete a workspace and everything it owns',
    description: 'Starts the durable deletion workflow; follow it at /v1/operator/workspace-deletions/:id.',
    auth: 'operator',
    params: WorkspaceIdParams,
    status: 202,
    response: WorkspaceDeletion,
    tags: ['operator'],
    handler: async ({ params, services }) => presentDeletion(await services.tenancy.startDeletion(params.workspaceId)),
  }),
  route({
    method: 'get',
    path: '/v1/operator/workspace-deletions/:id',
    summary: "Read a workspace deletion's progress",
    auth: 'operator',
    params: z.object({ id: z.uuid() }),
    response: WorkspaceDeletion,
    tags: ['operator'],
    handler: async ({ params, services }) => presentDeletion(await services.tenancy.deletion(params.id)),
  }),
  route({
    method: 'post',
    path: '/v1/operator/workspaces/import',
    summary: 'Import a workspace archive',
    description:
      'The body is an archive from GET /v1/workspace/export (application/gzip); the workspace must not exist here. ' +
      'A body over IMPORT_MAX_BYTES, or an archive line longer than the largest blob allows, is refused with 413.',
    auth: 'operator',
    status: 201,
    response: WorkspaceImported,
    tags: ['operator'],
    deadlineMs: 600_000,
    handler: ({ services, ctx }) => services.tenancy.importArchive(ctx.req, ctx.request.length ?? null),
  }),
];
