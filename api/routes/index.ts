import type { RouteDef } from '../route.js';
import platform from './platform.js';
import traces from './traces.js';

/** The flat list of every mounted route family (OpenAPI walks the same list). */
export const routeFamilies: Record<string, RouteDef[]> = { platform, traces };
export const allRoutes = (): RouteDef[] => Object.values(routeFamilies).flat();
