/** The platform area's door: what other areas, routes, activities and the worker may use. */
export { createAuthService } from './auth.js';
export { createRecentCredentials } from './recent-credentials.js';
export type { RecentCredentials } from './recent-credentials.js';
export { createResourceEvents } from './resource-events.js';
export type { ResourceEvents, ResourceRef } from './resource-events.js';
export {
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
} from './schemas.js';
export { withBrainCache } from './brain-cache.js';
export { createWorkspaceRepo, workspaceIndexes } from './workspaces.mongo.js';
export type { ApiKeyDoc, BrainDoc, WorkspaceDoc } from './model.js';
export type { WorkspaceStore as WorkspaceRepo } from './store.js';
