import { mkdirSync, writeFileSync } from 'node:fs';
import { buildOpenApi } from '../api/openapi.js';
import { allRoutes } from '../api/routes/index.js';

/** `npm run openapi`: writes docs/openapi.json from the mounted route objects. */
const doc = buildOpenApi(allRoutes());
mkdirSync('docs', { recursive: true });
writeFileSync('docs/openapi.json', `${JSON.stringify(doc, null, 2)}\n`);
console.log(`docs/openapi.json: ${Object.keys(doc.paths ?? {}).length} paths`);
