import { randomUUID } from 'node:crypto';
import type { StakeholderMap } from './model.js';
import { conflict, notFound } from '../kernel/errors.js';
import type { DiffQuery, GraphLimits, MapCreateBody, PatchBody } from './schemas.js';
import type { Scope } from '../kernel/scope.js';
import { briefingOf, diffGraphs } from './analysis.js';
import { compileDsl } from './dsl.js';
import { countsOf, emptyGraph, viewOf, type Graph } from './graph.js';
import { createMapReads, type StakeholderMapDeps } from './service-common.js';
import { createMapEditing } from './editing.js';
import { createStakeholderExtraction } from './extraction-service.js';

export type { StakeholderMapDeps } from './service-common.js';
/**
 * Stakeholder maps (docs/stakeholder-maps.md): map heads are resources of kind
 * stakeholder_map in a brain; each has a live graph (claimed revisions, src/stakeholders/store.mongo.ts)
 * changed only through patch ops (JSON, the DSL, or a meeting extraction's answer), numbered saved
 * versions, diffs between any two states, and per-stakeholder briefings computed from the graph.
 * The parts live in ./stakeholder-maps/: shared reads, editing (revisions and versions), extraction.
 */
export function createStakeholderMapService(d: StakeholderMapDeps) {
  const { repo } = d;
  const reads = createMapReads(d);
  const editing = createMapEditing(d, reads);
  const { get, ensureDefault, resolve, live, versionOf } = reads;

  const service = {
    get,
    ensureDefault,
    resolve,
    defaultIdOf: reads.defaultIdOf,
    async live(scope: Scope, resourceId: string | undefined) {
      const m = await resolve(scope, resourceId);
      return { map: m, ...(await live(m)) };
    },
    async list(scope: Scope, q: { brain_id?: string; limit: number; offset: number; cursor?: string }) {
      const brain = q.brain_id ?? scope.brainId;
      return repo.page({ workspaceId: scope.workspaceId, ...(brain ? { brainId: brain } : {}) }, q);
    },
    async create(scope: Scope, body: MapCreateBody): Promise<StakeholderMap> {
      const brainId = await reads.brainOf(scope, body.brain_id);
      const now = new Date();
      const doc: StakeholderMap = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId,
        name: body.name,
        description: body.description ?? null,
        isDefault: false,
        revision: 0,
        latestVersion: 0,
        counts: countsOf(emptyGraph()),
        summary: '',
        createdBy: reads.by(scope),
        createdAt: now,
        updatedAt: now,
      };
      await repo.create(doc);
      await d.events.emit(scope.workspaceId, 'created', reads.ref(doc));
      return doc;
    },

    /** The patch route: ops or DSL applied to the live graph; patch_mode stakeholder_map_record_version then records a version. */
    async patch(scope: Scope, id: string, body: PatchBody) {
      const ops = body.dsl !== undefined ? compileDsl(body.dsl) : body.ops;
      const m = await get(scope, id);
      const applied = ops
        ? await editing.commit(m, ops, {
            by: reads.by(scope),
            source: { type: 'manual', id: null },
            baseRevision: body.base_revision,
          })
        : null;
      if (!applied && body.base_revision !== undefined && (await live(m)).revision !== body.base_revision)
        throw conflict(`the live graph is not at revision ${body.base_revision}`);
      const version =
        body.patch_mode === 'stakeholder_map_record_version' ? await editing.saveVersion(scope, m, body.label) : null;
      const head = await reads.reread(m);
      return { map: head, revision: applied?.revision ?? head.revision, changes: applied?.changes ?? null, version };
    },

    async saveVersion(scope: Scope, resourceId: string | undefined, label: string | undefined) {
      return editing.saveVersion(scope, await resolve(scope, resourceId), label);
    },
    async versions(
      scope: Scope,
      resourceId: string | undefined,
      q: { limit: number; offset: number; cursor?: string },
    ) {
      const m = await resolve(scope, resourceId);
      return { map: m, ...(await repo.pageVersions(m, q)) };
    },
    async version(scope: Scope, resourceId: string, n: number) {
      const m = await get(scope, resourceId);
      const v = await versionOf(m, n);
      return { version: v, graph: await repo.graph(m, v.graphId) };
    },
    /** A saved version by its id, or by its number on the brain's default map. */
    async versionByKey(scope: Scope, key: string) {
      if (/^\d+$/.test(key)) {
        const m = await ensureDefault(scope);
        const v = await versionOf(m, Number(key));
        return { version: v, graph: await repo.graph(m, v.graphId) };
      }
      const v = await repo.versionById(scope.workspaceId, key.toLowerCase());
      if (!v || (scope.brainId && v.brainId !== scope.brainId)) throw notFound('Stakeholder map version');
      return { version: v, graph: await repo.graph({ _id: v.mapId, workspaceId: v.workspaceId }, v.graphId) };
    },

    async diff(scope: Scope, q: DiffQuery) {
      const m = await resolve(scope, q.resource_id);
      const [a, b] = await Promise.all([reads.graphAt(m, q.from), reads.graphAt(m, q.to)]);
      return {
        resource_id: m._id,
        from: q.from,
        to: q.to,
        from_revision: a.revision,
        to_revision: b.revision,
        ...diffGraphs(a.graph, b.graph, q),
      };
    },

    /** One stakeholder's briefing from the live graph of the map it is on. */
    async briefing(scope: Scope, stakeholderId: string, interactionLimit: number) {
      const at = await repo.stakeholderPlace(scope.workspaceId, stakeholderId.toLowerCase());
      if (!at || (scope.brainId && at.brainId !== scope.brainId)) throw notFound('Stakeholder');
      const m = await get({ ...scope, brainId: undefined }, at.mapId).catch(() => null);
      if (!m) throw notFound('Stakeholder');
      const cur = await live(m);
      const b = briefingOf(cur.graph, at._id, new Date(), interactionLimit);
      if (!b) throw notFound('Stakeholder');
      return { resource_id: m._id, brain_id: m.brainId, revision: cur.revision, ...b };
    },

    ...createStakeholderExtraction(d, reads, editing),

    /** Reads for followers of the resource event stream (search, browse): a head and its live graph. */
    async readForIndex(workspaceId: string, id: string) {
      const m = await repo.mapHead(workspaceId, id);
      return m ? { map: m, ...(await live(m)) } : null;
    },
    viewOf: (g: Graph, limits: GraphLimits) => viewOf(g, limits),
  };
  // A finalized meeting transcript starts the stakeholder extraction (docs/stakeholder-maps.md).
  d.bus.on('transcript.finalized', ({ workspaceId, meeting }) => service.extractFromMeeting(workspaceId, meeting));
  return service;
}
