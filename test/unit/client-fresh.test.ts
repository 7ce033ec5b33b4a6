import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLIENT_SCHEMA_PATH, renderClientSchema } from '../../scripts/client-schema.js';

describe('the TypeScript client', () => {
  it('is generated from the current routes (run `npm run client:gen` when this fails)', async () => {
    const fresh = await renderClientSchema();
    const committed = readFileSync(CLIENT_SCHEMA_PATH, 'utf8');
    // A readable hint first: the operations that differ, then the whole text.
    const ops = (s: string) => [...s.matchAll(/^ {4}"([^"]+)": \{$/gm)].map((m) => m[1]);
    expect(ops(committed), 'operations in clients/typescript/src/schema.ts').toEqual(ops(fresh));
    expect(committed === fresh, `${CLIENT_SCHEMA_PATH} is stale: run npm run client:gen`).toBe(true);
  }, 30_000);
});
