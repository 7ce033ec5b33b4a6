import { describe, expect, it } from 'vitest';
import { buildOpenApi, toOpenApiPath } from '../../api/openapi.js';
import type { ZodType } from 'zod';
import { operationIdOf, type RouteDef } from '../../api/route.js';
import { allRoutes } from '../../api/routes/index.js';
import { ERROR_CODES } from '../../src/kernel/errors.js';

/** The words of a path's literal segments, singular and plural (`/v1/config/models` → config, model, models). */
function pathWords(path: string): Set<string> {
  const words = path
    .split('/')
    .filter((s) => s && !s.startsWith(':') && s !== 'v1')
    .flatMap((s) => s.toLowerCase().split(/[-_]/));
  return new Set(words.flatMap((w) => [w, w.replace(/ies$/, 'y').replace(/s$/, '')]));
}

/**
 * Why a summary is not a written one, or undefined: empty or over 60 characters, not a sentence
 * head (capital first, no final period), an id or a path, or an HTTP method and the path's words
 * ("Post transcribe", "Get config models": what a generator makes; "Delete a skill" is written).
 */
function summaryProblem(r: Pick<RouteDef, 'method' | 'path' | 'summary'>): string | undefined {
  const s = r.summary ?? '';
  if (s.length < 6 || s.length > 60) return 'must be 6 to 60 characters';
  if (!/^[A-Z]/.test(s) || s.endsWith('.')) return 'must start with a capital and not end with a period';
  if (/[/{}]|\b[a-z]+\.[a-z]+/i.test(s.replace(/\(.*\)/, ''))) return 'reads as a path or an operation id';
  const words = s.toLowerCase().split(/\s+/);
  const known = pathWords(r.path);
  const methods = ['get', 'post', 'put', 'patch', 'delete'];
  if (methods.includes(words[0]) && words.slice(1).every((w) => known.has(w)))
    return 'is the method and the path words: write what the operation does';
  return undefined;
}

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

  it('every operation has a unique, dotted camelCase id', () => {
    const ids = ops.map((o) => o.operationId);
    expect(new Set(ids).size).toBe(routes.length);
    for (const o of ops) expect(o.operationId).toMatch(/^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)+$/);
  });

  it('every operation has a written summary: short, a sentence head, not made from its path', () => {
    const problems = routes.flatMap((r) => {
      const why = summaryProblem(r);
      return why ? [`${r.method.toUpperCase()} ${r.path}: "${r.summary}" ${why}`] : [];
    });
    expect(problems).toEqual([]);
    // Different routes say different things.
    const summaries = routes.map((r) => r.summary);
    expect(new Set(summaries).size).toBe(summaries.length);
  });

  it('refuses summaries a generator would write', () => {
    const def = (method: RouteDef['method'], path: string, summary: string) => ({ method, path, summary });
    expect(summaryProblem(def('post', '/v1/transcribe', 'Post transcribe'))).toBeTruthy();
    expect(summaryProblem(def('get', '/v1/config/models', 'Get config models'))).toBeTruthy();
    expect(summaryProblem(def('get', '/v1/jobs/:jobId/status', 'Get job status'))).toBeTruthy();
    expect(summaryProblem(def('get', '/v1/neurons', 'neurons.list'))).toBeTruthy();
    expect(summaryProblem(def('get', '/v1/neurons', 'GET /v1/neurons'))).toBeTruthy();
    expect(summaryProblem(def('get', '/v1/neurons', ''))).toBeTruthy();
    expect(summaryProblem(def('post', '/v1/neurons/:id/invoke', 'Invoke a neuron'))).toBeUndefined();
    expect(summaryProblem(def('get', '/v1/jobs/:jobId/status', "Read a job's status and result"))).toBeUndefined();
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
    expect(operationIdOf({ method: 'get', path: '/v1/x', operationId: 'custom.id' })).toBe('custom.id');
  });

  it('refuses two routes that derive the same id', () => {
    const twin = (path: string): RouteDef => ({ method: 'get', path, summary: path, handler: async () => undefined });
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
