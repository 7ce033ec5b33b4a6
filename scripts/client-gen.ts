import { writeFileSync } from 'node:fs';
import { CLIENT_SCHEMA_PATH, renderClientSchema } from './client-schema.js';

/** `npm run client:gen`: regenerates the TypeScript client's types from the mounted routes. */
const text = await renderClientSchema();
writeFileSync(CLIENT_SCHEMA_PATH, text);
console.log(`${CLIENT_SCHEMA_PATH}: ${text.split('\n').length} lines`);
