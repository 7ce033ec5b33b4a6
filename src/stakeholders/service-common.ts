import type { Config } from '../kernel/config.js';
import type { Bus } from '../kernel/events.js';
import type { StakeholderMap, StakeholderVersion } from './model.js';
import type { StakeholderMapStore } from './store.js';
import type { WorkspaceRepo, ResourceEvents } from '../platform/index.js';
import { notFound, validationError } from '../kernel/errors.js';
import { uuidFromName } from '../kernel/ids.js';
import type { ModelRegistry } from '../llm/registry.js';
import type { VersionRef } from './schemas.js';
import type { Scope } from '../kernel/scope.js';
import { countsOf, emptyGraph, type Graph } from './graph.js';
import type { JobService } from '../jobs/index.js';
import type { UsageService } from '../usage/index.js';

/**
 * What the meetings family provides to the extraction step (docs/stakeholder-maps.md, Meeting
 * hook): a finalized meeting's transcript, read by id in the caller's workspace.
 */
interface MeetingTranscriptSource {
  transcript(
    workspaceId: string,
    meetingId: string,
  ): Promise<{ brainId: string; title: string; text: string; finalizedAt: Date | null } | null>;
}

/** What the stakeholder map service is built from. */
export interface StakeholderMapDeps {
  repo: StakeholderMapStore;
  workspaces: WorkspaceRepo;
  jobs: JobService;
  usage: UsageService;
  models: ModelRegistry;
  events: ResourceEvents;
  config: Config;
  /** The meetings family's transcript reader (extraction from a meeting needs it). */
  meetings?: MeetingTranscriptSource;
  /** A finalized meeting transcript (`transcript.finalized`) starts an extraction. */
  bus: Bus;
}

/** Map heads and the graphs they hold: the reads every part of the service shares. */
export function createMapReads(d: StakeholderMapDeps) {
  const { repo } = d;
  const by = (scope: Scope) => scope.userId ?? scope.apiKeyId;
  const ref = (m: StakeholderMap) => ({
    kind: 'stakeholder_map' as const,
    id: m._id,
    brain_id: m.brainId,
    name: m.name,
    version: m.latestVersion,
  });
  /** The brain's default map has a name-derived id, so concurrent first uses create one map. */
  const defaultIdOf = (workspaceId: string, brainId: string) =>
    uuidFromName(`stakeholder-map:${workspaceId}:${brainId}`);

  async function brainOf(scope: Scope, brainId?: string): Promise<string> {
    const b = brainId ?? scope.brainId;
    if (!b) throw validationError('X-Brain-Id: required (or name the map with resource_id)');
    if (!(await d.workspaces.findBrain(scope.workspaceId, b))) throw notFound('Brain');
    return b;
  }

  /** A map of the caller's workspace (and of the X-Brain-Id brain when one is sent); 404 otherwise. */
  async function get(scope: Scope, id: string): Promise<StakeholderMap> {
    const m = await repo.mapHead(scope.workspaceId, id.toLowerCase());
    if (!m || (scope.brainId && m.brainId !== scope.brainId)) throw notFound('Stakeholder map');
    return m;
  }

  /** The brain's default map, created on first use (one creation event, by the claim's winner). */
  async function ensureDefault(scope: Scope, brainId?: string): Promise<StakeholderMap> {
    const brain = await brainOf(scope, brainId);
    const id = defaultIdOf(scope.workspaceId, brain);
    const found = await repo.mapHead(scope.workspaceId, id);
    if (found) return found;
    const now = new Date();
    const doc: StakeholderMap = {
      _id: id,
      workspaceId: scope.workspaceId,
      brainId: brain,
      name: 'Stakeholder map',
      description: null,
      isDefault: true,
      revision: 0,
      latestVersion: 0,
      counts: countsOf(emptyGraph()),
      summary: '',
      createdBy: by(scope),
      createdAt: now,
      updatedAt: now,
    };
    if (await repo.claimMap(doc)) await d.events.emit(scope.workspaceId, 'created', ref(doc));
    return (await repo.mapHead(scope.workspaceId, id))!;
  }

  async function live(m: StakeholderMap): Promise<{ graph: Graph; revision: number; at: Date }> {
    const r = await repo.newestRevision(m);
    return r
      ? { graph: await repo.graph(m, r.graphId), revision: r.revision, at: r.createdAt }
      : { graph: emptyGraph(), revision: 0, at: m.createdAt };
  }

  async function versionOf(m: StakeholderMap, n: number): Promise<StakeholderVersion> {
    const v = await repo.version(m, n);
    if (!v) throw notFound(`Version ${n} of stakeholder map`);
    return v;
  }

  async function graphAt(m: StakeholderMap, at: VersionRef): Promise<{ graph: Graph; revision: number }> {
    if (at === 'live') return live(m);
    const v = await versionOf(m, at);
    return { graph: await repo.graph(m, v.graphId), revision: v.revision };
  }

  return {
    by,
    ref,
    defaultIdOf,
    brainOf,
    get,
    ensureDefault,
    /** The map a request names (resource_id), else the brain's default map. */
    resolve: (scope: Scope, resourceId?: string) => (resourceId ? get(scope, resourceId) : ensureDefault(scope)),
    live,
    versionOf,
    graphAt,
    reread: async (m: StakeholderMap) => (await repo.mapHead(m.workspaceId, m._id))!,
  };
}
export type MapReads = ReturnType<typeof createMapReads>;
