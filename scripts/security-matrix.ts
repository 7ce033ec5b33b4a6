import { readFileSync, writeFileSync } from 'node:fs';
import { withRouteMatrix } from '../api/route-matrix.js';
import { allRoutes } from '../api/routes/index.js';

/** `npm run security:matrix`: rewrites the route table of docs/security.md from the mounted routes. */
const path = 'docs/security.md';
const routes = allRoutes();
writeFileSync(path, withRouteMatrix(readFileSync(path, 'utf8'), routes));
console.log(`${path}: ${routes.length} routes`);
