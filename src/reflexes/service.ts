import { randomUUID } from 'node:crypto';
import type { NeuronReflexDoc, Reflex, ReflexChange, ReflexToolSet } from './model.js';
import type { ReflexStore } from './store.js';
import type { WorkspaceRepo, ResourceEvents } from '../platform/index.js';
import { conflict, forbidden, notFound, validationError } from '../kernel/errors.js';
import { connectionRefusal, type ConnectionUse, type GraphSaver } from '../expressions/index.js';
import type { ReflexCreateBody, ReflexListQuery, ReflexUpdateBody } from './schemas.js';
import { hasRole, type Scope } from '../kernel/scope.js';
import type { Guard } from '../net/guard.js';
import { HttpToolDefs } from '../tools/remote.js';
import type { Bus } from '../kernel/events.js';
import { BUILTIN_TOOLS } from '../tools/builtin.js';
import { assertScopeRole, type NeuronService } from '../neurons/index.js';

const SORT_FIELD = { created_at: 'createdAt', updated_at: 'updatedAt', name: 'name' } as const;
const actor = (scope: Scope): string | null => scope.userId ?? scope.apiKeyId ?? null;

/** Visible in a brain: its own reflexes plus workspace- and core-scoped ones; without a brain, the whole workspace. */
const isVisible = (scope: Scope, doc: Reflex): boolean =>
  !scope.brainId || doc.scope !== 'brain' || doc.brainId === scope.brainId;

function isHttpUrl(s: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(s).protocol);
  } catch {
    return false;
  }
}

/**
 * "A reflex must define integration-backed tools, internal behavior or a server-backed
 * implementation": at least one tool set, or metadata.handler naming a built-in tool, or
 * metadata.server_url as an http(s) URL. A handler or server_url that is present must be valid.
 */
function assertImplementation(tools: ReflexToolSet[], metadata: Record<string, unknown>): void {
  const { handler, server_url: serverUrl, http_tools: httpTools } = metadata;
  if (httpTools !== undefined) {
    const parsed = HttpToolDefs.safeParse(httpTools);
    if (!parsed.success)
      throw validationError(
        `metadata.http_tools: ${parsed.error.issues
          .slice(0, 3)
          .map((i) => `${i.path.join('.')}: ${i.message}`)
          .join('; ')}`,
      );
  }
  if (handler !== undefined && (typeof handler !== 'string' || !Object.hasOwn(BUILTIN_TOOLS, handler))) {
    throw validationError(
      `metadata.handler: must name a built-in internal tool (${Object.keys(BUILTIN_TOOLS).join(', ')})`,
    );
  }
  if (serverUrl !== undefined && (typeof serverUrl !== 'string' || !isHttpUrl(serverUrl))) {
    throw validationError('metadata.server_url: must be an http(s) URL');
  }
  if (tools.length === 0 && handler === undefined && serverUrl === undefined && httpTools === undefined) {
    throw validationError(
      'a reflex must define integration-backed tools, internal behavior (metadata.handler) or a server-backed implementation (metadata.server_url)',
    );
  }
}

/**
 * The URLs a reflex makes the platform call (metadata.server_url, metadata.http_tools[].url), checked by
 * the outbound guard when they are saved (and again at each call). An http tool's `{name}` placeholders
 * sit in its path or query (a URL's host cannot hold them), so the template's host is checked as written.
 */
async function checkReflexUrls(guard: Pick<Guard, 'checkSavedAll'>, metadata: Record<string, unknown>): Promise<void> {
  const { server_url: serverUrl, http_tools: httpTools } = metadata;
  const defs = httpTools === undefined ? [] : HttpToolDefs.parse(httpTools);
  await guard.checkSavedAll([
    ...(typeof serverUrl === 'string' ? [[serverUrl, 'metadata.server_url'] as const] : []),
    ...defs.map((def, i) => [def.url, `metadata.http_tools.${i}.url`] as const),
  ]);
}

const toToolSets = (tools: { integration_id: string; tools: string[] }[]): ReflexToolSet[] =>
  tools.map((t) => ({ integrationId: t.integration_id, tools: t.tools }));

/** Reflexes (tool bundles) and their assignment to neurons. */
/**
 * The integration a reflex's own server or HTTP tools are called with (metadata.integration_id):
 * its token goes where the reflex's author chose, so it is their privilege (src/expressions/credentials.ts).
 */
export const metadataIntegration = (metadata: Record<string, unknown>): string | undefined =>
  typeof metadata.integration_id === 'string' ? metadata.integration_id : undefined;

/** Whose privilege a reflex's connection use is: its last saver's (null: saved before savers were recorded). */
export const reflexSaver = (r: Pick<Reflex, 'savedBy' | 'savedByAdmin'>): GraphSaver => ({
  userId: r.savedBy ?? null,
  admin: r.savedByAdmin ?? false,
  editor: false,
});

export function createReflexService({
  repo,
  workspaces,
  neurons,
  events,
  guard,
  integrations,
  bus,
}: {
  repo: ReflexStore;
  workspaces: WorkspaceRepo;
  neurons: NeuronService;
  events: ResourceEvents;
  guard: Pick<Guard, 'checkSavedAll'>;
  /** The workspace's integration of that id (null: not configured). */
  integrations: (workspaceId: string, integrationId: string) => Promise<ConnectionUse | null>;
  bus: Bus;
}) {
  /** The caller as a reflex's saver. */
  const saverFrom = (scope: Scope): GraphSaver => ({
    userId: actor(scope),
    admin: scope.credential === 'system' || hasRole(scope, 'workspace_admin'),
    editor: false,
  });
  /** 403 naming the integration when the caller may not send its token where the reflex's metadata says. */
  async function checkConnectionUse(scope: Scope, metadata: Record<string, unknown>): Promise<void> {
    const id = metadataIntegration(metadata);
    const i = id ? await integrations(scope.workspaceId, id) : null;
    const why = id && i && connectionRefusal(id, i, saverFrom(scope));
    if (why) throw forbidden(`metadata.integration_id: ${why.replace(/graph/g, 'reflex')}`);
  }
  const ref = (d: Reflex) => ({ kind: 'reflex' as const, id: d._id, brain_id: d.brainId, name: d.name });
  async function get(scope: Scope, id: string): Promise<Reflex> {
    const doc = await repo.findById(scope.workspaceId, id);
    if (!doc || !isVisible(scope, doc)) throw notFound('Reflex');
    return doc;
  }

  /** The neuron the association routes address; changing its reflexes needs the rights to change it. */
  async function neuronForChange(scope: Scope, neuronIdOrSlug: string) {
    const neuron = await neurons.resolve(scope, neuronIdOrSlug);
    assertScopeRole(scope, neuron.scope);
    return neuron;
  }

  const service = {
    get,

    async list(scope: Scope, q: ReflexListQuery) {
      const where = { brainId: scope.brainId, type: q.type, search: q.search };
      const dir = q.sortDirection === 'asc' ? 1 : -1;
      return repo.page(scope.workspaceId, where, { field: SORT_FIELD[q.sortBy], dir }, q);
    },

    async create(scope: Scope, body: ReflexCreateBody): Promise<Reflex> {
      assertScopeRole(scope, body.scope);
      const brainId = body.brain_id ?? scope.brainId ?? null;
      if (body.scope === 'brain' && !brainId)
        throw validationError('brain_id: required for scope brain (or send X-Brain-Id)');
      if (brainId && !(await workspaces.findBrain(scope.workspaceId, brainId))) throw notFound('Brain');
      const tools = toToolSets(body.tools);
      assertImplementation(tools, body.metadata);
      await checkReflexUrls(guard, body.metadata);
      await checkConnectionUse(scope, body.metadata);
      const saver = saverFrom(scope);
      const now = new Date();
      const doc: Reflex = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId,
        name: body.name,
        type: body.type,
        description: body.description,
        tools,
        metadata: body.metadata,
        isActive: body.is_active,
        scope: body.scope,
        savedBy: saver.userId,
        savedByAdmin: saver.admin,
        createdBy: actor(scope),
        createdAt: now,
        updatedAt: now,
      };
      await repo.create(doc);
      await events.emit(scope.workspaceId, 'created', ref(doc));
      return doc;
    },

    async update(scope: Scope, id: string, body: ReflexUpdateBody): Promise<Reflex> {
      const doc = await get(scope, id);
      assertScopeRole(scope, doc.scope);
      if (body.scope !== undefined && body.scope !== doc.scope) assertScopeRole(scope, body.scope);
      const tools = body.tools ? toToolSets(body.tools) : doc.tools;
      const metadata = body.metadata ?? doc.metadata;
      assertImplementation(tools, metadata);
      if (body.metadata !== undefined) await checkReflexUrls(guard, metadata);
      // New tools or metadata are the caller's: the connection their metadata names is checked against them.
      const resaved = body.tools !== undefined || body.metadata !== undefined;
      if (resaved) await checkConnectionUse(scope, metadata);
      const saver = saverFrom(scope);
      const set: ReflexChange = {
        ...(resaved ? { savedBy: saver.userId, savedByAdmin: saver.admin } : {}),
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.tools !== undefined ? { tools } : {}),
        ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
        ...(body.is_active !== undefined ? { isActive: body.is_active } : {}),
        ...(body.scope !== undefined ? { scope: body.scope } : {}),
        updatedAt: new Date(),
      };
      const next = await repo.update(scope.workspaceId, doc._id, set);
      if (!next) throw notFound('Reflex');
      await events.emit(scope.workspaceId, 'updated', ref(next));
      return next;
    },

    /** Links go first, the reflex last (a retry finishes the job). */
    async remove(scope: Scope, id: string): Promise<void> {
      const doc = await get(scope, id);
      assertScopeRole(scope, doc.scope);
      await repo.remove(scope.workspaceId, doc._id);
      await events.emit(scope.workspaceId, 'deleted', ref(doc));
    },

    /**
     * The reflexes assigned to a neuron (UUID or slug), in assignment order, active or not:
     * the run engine filters on isActive. 404 when the neuron is not visible.
     */
    async forNeuron(scope: Scope, neuronId: string, opts: { resolved?: boolean } = {}): Promise<Reflex[]> {
      // `resolved`: neuronId is the id of a neuron the caller has just resolved in this scope (a run's load).
      const id = opts.resolved ? neuronId : (await neurons.resolve(scope, neuronId))._id;
      const links = await repo.linksOfNeuron(scope.workspaceId, id);
      if (links.length === 0) return [];
      const docs = await repo.findMany(
        scope.workspaceId,
        links.map((l) => l.reflexId),
      );
      const byId = new Map(docs.map((d) => [d._id, d]));
      return links.flatMap((l) => byId.get(l.reflexId) ?? []);
    },

    /** Assigns a reflex visible in the neuron's brain; 409 when already assigned, 404 for an unknown neuron or reflex. */
    async assign(scope: Scope, neuronIdOrSlug: string, reflexId: string): Promise<NeuronReflexDoc> {
      const neuron = await neuronForChange(scope, neuronIdOrSlug);
      const reflex = await get({ ...scope, brainId: neuron.brainId }, reflexId);
      const link: NeuronReflexDoc = {
        _id: `${neuron._id}:${reflex._id}`,
        workspaceId: scope.workspaceId,
        neuronId: neuron._id,
        reflexId: reflex._id,
        createdBy: actor(scope),
        createdAt: new Date(),
      };
      if (!(await repo.link(link))) throw conflict('Reflex is already assigned to this neuron');
      return link;
    },

    async unassign(scope: Scope, neuronIdOrSlug: string, reflexId: string): Promise<void> {
      const neuron = await neuronForChange(scope, neuronIdOrSlug);
      if (!(await repo.unlink(scope.workspaceId, neuron._id, reflexId))) throw notFound('Reflex assignment');
    },
  };
  // A neuron being removed loses its reflex links first (awaited by the removal: a failure fails it).
  bus.on('neuron.removing', ({ scope, neuronId }) => repo.unlinkNeuron(scope.workspaceId, neuronId));
  return service;
}
export type ReflexService = ReturnType<typeof createReflexService>;
