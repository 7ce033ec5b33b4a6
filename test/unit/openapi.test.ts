import { describe, expect, it } from 'vitest';
import { buildOpenApi, toOpenApiPath } from '../../api/openapi.js';
import type { ZodType } from 'zod';
import { operationIdOf, operationTitle, type RouteDef } from '../../api/route.js';
import { allRoutes } from '../../api/routes/index.js';
import { ERROR_CODES } from '../../src/errors.js';

describe('OpenAPI document', () => {
  it('documents every mounted route with its method', () => {
    const routes = allRoutes();
    const doc = buildOpenApi(routes);
    for (const r of routes) {
      const item = doc.paths?.[toOpenApiPath(r.path)] as Record<string, unknown> | undefined;
      expect(item?.[r.method], `${r.method.toUpperCase()} ${r.path}`).toBeDefined();
    }
    expect(routes.length).toBeGreaterThan(60);
  });

  it('no two routes claim the same method and path', () => {
    const keys = allRoutes().map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('operation ids and titles', () => {
  const routes = allRoutes();
  const doc = buildOpenApi(routes);
  const ops = Object.values(doc.paths ?? {}).flatMap((item) =>
    Object.values(item as Record<string, { operationId: string; summary: string }>),
  );

  it('every operation has a unique, dotted camelCase id and a short title', () => {
    const ids = ops.map((o) => o.operationId);
    expect(new Set(ids).size).toBe(routes.length);
    for (const o of ops) {
      expect(o.operationId).toMatch(/^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)+$/);
      expect(o.summary.length, o.operationId).toBeLessThan(60);
    }
  });

  it('derives ids from method and path: items, collections, actions and views', () => {
    const id = (method: RouteDef['method'], path: string) => operationIdOf({ method, path });
    expect(id('post', '/v1/neurons/:id/invoke')).toBe('neurons.invoke');
    expect(id('get', '/v1/jobs/:jobId/stream')).toBe('jobs.stream');
    expect(id('get', '/v1/jobs/:jobId/status')).toBe('jobs.status');
    expect(id('get', '/v1/neurons')).toBe('neurons.list');
    expect(id('post', '/v1/neurons')).toBe('neurons.create');
    expect(id('get', '/v1/neurons/:id/versions/:version')).toBe('neurons.versions.get');
    expect(id('delete', '/v1/reflexes/:id/connection')).toBe('reflexes.connection.delete');
    expect(id('post', '/v1/memories/bulk-delete')).toBe('memories.bulkDelete');
    // A route added later (another family) gets a readable id with no per-route work.
    expect(id('get', '/v1/meetings/:id/transcripts')).toBe('meetings.transcripts.list');
    expect(operationTitle({ method: 'get', path: '/v1/traces/:id/messages' })).toBe('List trace messages');
    expect(operationTitle({ method: 'post', path: '/v1/interventions/:id/respond' })).toBe('Respond to intervention');
    expect(operationIdOf({ method: 'get', path: '/v1/x', operationId: 'custom.id' })).toBe('custom.id');
  });

  it('refuses two routes that derive the same id', () => {
    const twin = (path: string): RouteDef => ({ method: 'get', path, handler: async () => undefined });
    expect(() => buildOpenApi([twin('/v1/usage'), twin('/v1/usage/:workspace_id')])).toThrow(
      /usage\.get .*explicit operationId/,
    );
  });

  it('the examples of the main flows are valid against their own schemas', () => {
    const withExamples = routes.filter((r) => r.examples);
    expect(withExamples.map(operationIdOf)).toEqual(
      expect.arrayContaining(['neurons.invoke', 'jobs.status', 'pathways.execute', 'interventions.respond']),
    );
    for (const r of withExamples) {
      if (r.examples?.request !== undefined)
        expect(() => (r.body as ZodType).parse(r.examples?.request), operationIdOf(r)).not.toThrow();
      if (r.examples?.response !== undefined)
        expect(() => r.response!.parse(r.examples?.response), operationIdOf(r)).not.toThrow();
    }
  });

  it('documents every error code with its status', () => {
    const text = String(doc.info.description);
    for (const [code, e] of Object.entries(ERROR_CODES)) expect(text).toContain(`| ${e.status} | \`${code}\` |`);
  });
});
