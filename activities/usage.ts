import type { Services } from '../src/services/index.js';

/** The usage reconciler's activity (docs/usage.md): a thin adapter over the reconciler service. */
export const createUsageActivities = ({ services }: { services: Services }) => ({
  reconcileUsage: () => services.usageReconciler.all(),
});
