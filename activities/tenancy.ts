import type { Services } from '../src/services/index.js';
import type { EraseStep } from '../src/tenancy/index.js';

/** The tenancy area's activities: thin adapters over src/tenancy. */
export const createTenancyActivities = ({ services }: { services: Services }) => ({
  sweepRetention: () => services.tenancy.sweep(),
  eraseWorkspaceStep: (deletionId: string, workspaceId: string, step: EraseStep) =>
    services.tenancy.eraseStep(deletionId, workspaceId, step),
  failWorkspaceErase: (deletionId: string, reason: string) => services.tenancy.failDeletion(deletionId, reason),
});
