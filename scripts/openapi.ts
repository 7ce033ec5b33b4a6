import { mkdirSync, writeFileSync } from 'node:fs';
import { buildOpenApi } from '../api/openapi.js';
import { allRoutes } from '../api/routes/index.js';
import { loadConfig } from '../src/kernel/config.js';

/**
 * `npm run openapi`: writes docs/openapi.json from the mounted route objects. Its `servers` is
 * PUBLIC_BASE_URL when set, else `/` (relative: the address the file is served from); the API
 * serves the same document at /v1/openapi.json naming the address the client reached.
 */
const base = loadConfig().PUBLIC_BASE_URL?.replace(/\/+$/, '');
const doc = buildOpenApi(allRoutes(), base ? { servers: [{ url: base, description: 'this API' }] } : {});
mkdirSync('docs', { recursive: true });
writeFileSync('docs/openapi.json', `${JSON.stringify(doc, null, 2)}\n`);
console.log(`docs/openapi.json: ${Object.keys(doc.paths ?? {}).length} paths`);
