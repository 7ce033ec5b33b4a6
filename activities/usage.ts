import type { Services } from '../src/compose/services.js';

/** The usage reconciler's activity (docs/usage.md): a thin adapter over the reconciler service. */
export const createUsageActivities = ({ services }: { services: Services }) => ({
  reconcileUsage: () => services.usageReconciler.all(),
});
