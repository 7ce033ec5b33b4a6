import type { Services } from '../src/compose/services.js';
import { ERASE_STEPS } from '../src/tenancy/index.js';

/** The tenancy area's activities: thin adapters over src/tenancy. */
export const createTenancyActivities = ({ services }: { services: Services }) => ({
  sweepRetention: () => services.tenancy.sweep(),
  /** Step `index` of ERASE_STEPS (the workflow holds no list of its own): one bounded part of it. */
  eraseWorkspaceStep: async (deletionId: string, workspaceId: string, index: number) => {
    const step = ERASE_STEPS[index];
    if (!step) return { done: true, last: true };
    const r = await services.tenancy.eraseStep(deletionId, workspaceId, step);
    return { done: r.done, last: index === ERASE_STEPS.length - 1 };
  },
  failWorkspaceErase: (deletionId: string, reason: string) => services.tenancy.failDeletion(deletionId, reason),
});
