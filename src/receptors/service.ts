import { randomUUID } from 'node:crypto';
import { type NeuronRecord as Neuron, assertScopeRole, toNeuronSlug, type NeuronService } from '../neurons/index.js';
import type { ExecutableTarget, Receptor, ReceptorChange, ReceptorTargetKind } from './model.js';
import type { ReceptorStore } from './store.js';
import type { ReflexRepo } from '../reflexes/index.js';
import type { WorkspaceRepo, ResourceEvents } from '../platform/index.js';
import { forbidden, notFound, validationError } from '../kernel/errors.js';
import {
  SourceConfig,
  type ExecutableTargetBody,
  type ReceptorListQuery,
  type ReceptorPatchBody,
  type SubscribeBody,
} from './schemas.js';
import { hasRole, type Scope } from '../kernel/scope.js';
import type { ScheduleService } from './schedules.js';
import type { Bus } from '../kernel/events.js';
import type { PathwayService } from '../pathways/index.js';
import { isKnownKey, isSchedulable } from './stimuli.js';
import { fromTiming, toTiming } from './timing.js';

export { fromTiming, toTiming } from './timing.js';

/** Slug attempts before giving up on a free `-N` suffix (a workspace never holds that many same-named targets). */
const MAX_SLUG_ATTEMPTS = 100;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SORT_FIELD = { created_at: 'createdAt', updated_at: 'updatedAt', slug: 'slug' } as const;

/**
 * What a receptor needs from the kind of resource it dispatches, made from the neuron and pathway
 * services it is given. Those do not import receptors: their receptor follows them through the bus
 * (neuron.created, neuron.changed, neuron.removing, pathway.created, pathway.activity, pathway.removed).
 */
interface ReceptorTarget {
  /** The target in the caller's scope (404 when it is not there); `scope` is a neuron's scope role. */
  resolve(scope: Scope, id: string): Promise<{ scope?: 'brain' | 'workspace' | 'core' }>;
  /** Throws unless the caller may change the target's receptor. */
  assertCanChange?(scope: Scope, id: string): Promise<void>;
  /** Turns the target on or off; the target's own update keeps its receptor in step. */
  setActive(scope: Scope, id: string, active: boolean): Promise<void>;
}
type TargetKind = 'neuron' | 'pathway';

/** A receptor as a read shows it: the record and, when scheduled, its schedule's live view. */
export interface ReceptorView {
  doc: Receptor;
  schedule: Awaited<ReturnType<ScheduleService['view']>> | null;
}

/** Stimulus receptors take source_config, executable_target and sensory_reflex_id (docs/receptors.md, "Stimuli"). */
const isStimulusReceptor = (channels: string[]) => channels.includes('stimulus') || channels.includes('cron');
const isTargetOrigin = (r: Receptor) => (r.origin ?? 'target') === 'target';

/** What the receptor service is given: its store, the schedules, and the areas its checks and targets read. */
interface ReceptorDeps {
  repo: ReceptorStore;
  schedules: ScheduleService;
  workspaces: WorkspaceRepo;
  reflexes: ReflexRepo;
  events: ResourceEvents;
  neurons: Pick<NeuronService, 'resolve' | 'update'>;
  pathways: Pick<PathwayService, 'get' | 'assertRole' | 'update'>;
  bus: Bus;
}

/** What the receptor groups share: the deps and the targets made from the neuron and pathway services. */
interface ReceptorContext extends ReceptorDeps {
  targets: Record<TargetKind, ReceptorTarget>;
}

/**
 * Receptors (docs/receptors.md): the trigger created with every neuron and
 * pathway and kept in step with it, receptors made from templates (subscribe), reads, changes,
 * and their schedules (src/receptors/schedules.ts). Firing is src/receptors/fires.ts.
 */
export function createReceptorService(deps: ReceptorDeps) {
  const { neurons, pathways, bus } = deps;
  const targets: Record<TargetKind, ReceptorTarget> = {
    neuron: {
      resolve: async (scope, id) => ({ scope: (await neurons.resolve(scope, id)).scope }),
      setActive: async (scope, id, active) => void (await neurons.update(scope, id, { is_active: active })),
    },
    pathway: {
      resolve: async (scope, id) => (await pathways.get(scope, id), {}),
      assertCanChange: (scope, id) => pathways.assertRole(scope, id, 'editor', "Changing a pathway's receptor"),
      setActive: async (scope, id, active) => void (await pathways.update(scope, id, { is_active: active })),
    },
  };
  const ctx: ReceptorContext = { ...deps, targets };
  const steps = createReceptorSteps(ctx);
  const service = {
    lookup: steps.lookup,
    view: steps.view,
    checkWorkspace: steps.checkWorkspace,
    assertCanChange: steps.assertCanChange,
    ...createReceptorFollowers(ctx, steps), // forTarget, ensureForNeuron/Pathway(s), syncWithTarget/Neuron, deleteForTarget, reconcileSchedules
    ...createReceptorReads(ctx, steps), // list, get, catalogGet, subscribers
    ...createReceptorChanges(ctx, steps), // patch, subscribe, remove
    ...createReceptorSchedulePauses(steps), // setPaused, scheduled
  };
  // Receptors follow their targets (awaited by the target's change: a failure fails it).
  bus.on('neuron.created', ({ scope, neuron }) => service.ensureForNeuron(scope, neuron));
  bus.on('neuron.changed', ({ scope, neuron }) => service.syncWithNeuron(scope, neuron));
  bus.on('neuron.removing', ({ scope, neuronId }) => service.deleteForTarget(scope, 'neuron', neuronId));
  bus.on('pathway.created', ({ scope, pathway }) => service.ensureForPathway(scope, pathway));
  bus.on('pathway.activity', ({ scope, pathwayId, isActive }) =>
    service.syncWithTarget(scope, 'pathway', pathwayId, { isActive }),
  );
  bus.on('pathway.removed', ({ scope, pathwayId }) => service.deleteForTarget(scope, 'pathway', pathwayId));
  return service;
}

/** How resource events name a receptor. */
const ref = (r: Receptor) => ({ kind: 'receptor' as const, id: r._id, brain_id: r.brainId, name: r.slug });

/** A new receptor before its slug: http only, no stimuli, dispatching `target`. */
const blank = (
  scope: Scope,
  brainId: string,
  target: ExecutableTarget,
  isActive: boolean,
  rScope: Receptor['scope'],
): Omit<Receptor, 'slug'> => {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId: scope.workspaceId,
    brainId,
    activeChannels: ['http'],
    config: {},
    isActive,
    scope: rScope,
    sourceConfig: {},
    executableTarget: target,
    sensoryReflexId: null,
    createdAt: now,
    updatedAt: now,
    origin: 'target',
    stimulusKeys: [],
    activation: null,
    timing: null,
    schedulePause: null,
    createdBy: scope.userId ?? scope.apiKeyId,
  };
};

/** source_config checked (known keys; a schedule's keys schedulable; a system job has a job to run) and split into stored fields. */
function checkSource(s: SourceConfig, target: ExecutableTarget) {
  const unknown = s.stimulus_keys.find((k) => !isKnownKey(k));
  if (unknown) throw validationError(`source_config.stimulus_keys: ${unknown} is not in GET /v1/stimuli/catalog`);
  if (s.activation === 'schedule') {
    const notSchedulable = s.stimulus_keys.find((k) => !isSchedulable(k));
    if (notSchedulable)
      throw validationError(
        `source_config.stimulus_keys: ${notSchedulable} is not schedulable (see GET /v1/stimuli/catalog?schedulable=true)`,
      );
  }
  if (target.kind === 'system_job' && !target.job && !s.stimulus_keys.some(isSchedulable)) {
    throw validationError(
      'a system_job target needs executable_target.job or a maintenance key in source_config.stimulus_keys',
    );
  }
  const { timing, stimulus_keys: keys, activation, ...rest } = s;
  return {
    stimulusKeys: keys,
    activation,
    timing: activation === 'schedule' && timing ? toTiming(timing) : null,
    sourceConfig: { ...rest, stimulus_keys: keys, activation },
  };
}

/** The steps the groups share: finding a receptor and checking a change, storing and removing one. */
function createReceptorSteps(ctx: ReceptorContext) {
  const { repo, schedules, workspaces, reflexes, events } = ctx;
  const targetOf = (kind: TargetKind): ReceptorTarget => ctx.targets[kind];
  /** First free slug in the workspace: `base`, then `base-2`, `base-3`, … */
  async function insertWithFreeSlug(doc: Omit<Receptor, 'slug'>, base: string): Promise<Receptor> {
    const root = toNeuronSlug(base) || 'receptor';
    for (let n = 1; n <= MAX_SLUG_ATTEMPTS; n++) {
      const slug = n === 1 ? root : `${root}-${n}`;
      if (await repo.findBySlug(doc.workspaceId, slug)) continue;
      const full: Receptor = { ...doc, slug };
      // false: another insert took the slug between the check and the write; try the next one.
      if (await repo.create(full)) {
        await events.emit(full.workspaceId, 'created', ref(full));
        return full;
      }
    }
    throw new Error(`no free receptor slug for ${base}`);
  }

  /** The caller's workspace when the path segment names it (slug or id); another workspace's is a 404. */
  async function checkWorkspace(scope: Scope, segment: string): Promise<void> {
    if (segment === scope.workspaceId) return;
    const ws = await workspaces.findWorkspace(segment);
    if (!ws || ws._id !== scope.workspaceId) throw notFound('Receptor');
  }

  /** By slug or UUID in the caller's workspace. */
  async function lookup(scope: Scope, slugOrId: string): Promise<Receptor> {
    const doc = UUID_RE.test(slugOrId) ? await repo.findById(scope.workspaceId, slugOrId.toLowerCase()) : null;
    const found = doc ?? (await repo.findBySlug(scope.workspaceId, slugOrId.toLowerCase()));
    if (!found) throw notFound('Receptor');
    return found;
  }

  async function view(doc: Receptor, preview = 0): Promise<ReceptorView> {
    const schedule = doc.activation === 'schedule' && doc.timing ? await schedules.view(doc, preview) : null;
    return { doc, schedule };
  }

  /**
   * Who may change a receptor (docs/roles.md): what changing its target needs. A neuron's
   * receptor: the neuron's scope role; a pathway's: editor of the pathway; system jobs and
   * action plans (platform work): workspace_admin.
   */
  async function assertCanChange(scope: Scope, r: Pick<Receptor, 'executableTarget' | 'scope'>): Promise<void> {
    assertScopeRole(scope, r.scope);
    const t = r.executableTarget;
    if (t.kind === 'pathway' && t.id) await targetOf('pathway').assertCanChange?.(scope, t.id);
    if (
      (t.kind === 'system_job' || t.kind === 'action_plan' || t.kind === 'plasticity_pass') &&
      !hasRole(scope, 'workspace_admin')
    ) {
      throw forbidden(`A ${t.kind} receptor requires role workspace_admin`);
    }
  }

  /** A target body checked against the workspace (404 for another brain's or workspace's target, 400 for a bad job key). */
  async function checkTarget(scope: Scope, brainId: string, t: ExecutableTargetBody): Promise<ExecutableTarget> {
    const kind: ReceptorTargetKind = t.kind === 'plasticity_pass' ? 'action_plan' : t.kind;
    const inBrain = { ...scope, brainId };
    if (kind === 'neuron') await targetOf('neuron').resolve(inBrain, t.id!);
    if (kind === 'pathway' || kind === 'action_plan') await targetOf('pathway').resolve(inBrain, t.id!);
    if (kind === 'system_job' && t.job !== undefined && !isSchedulable(t.job))
      throw validationError(`executable_target.job: ${t.job} is not a maintenance key of GET /v1/stimuli/catalog`);
    return {
      kind,
      id: t.id ?? null,
      ...(kind === 'action_plan' ? { autoExecute: t.auto_execute ?? false } : {}),
      ...(kind === 'system_job' ? { job: t.job ?? null } : {}),
    };
  }

  async function checkReflex(scope: Scope, id: string | null | undefined): Promise<void> {
    if (!id) return;
    const r = await reflexes.findById(scope.workspaceId, id);
    if (!r) throw validationError(`sensory_reflex_id: ${id} is not a reflex of this workspace`);
    if (r.type !== 'sensory') throw validationError('sensory_reflex_id must name a sensory reflex');
  }

  /** Writes a change and makes the schedule follow; a schedule the engine refuses (a bad cron) undoes nothing that was stored. */
  async function save(before: Receptor, set: ReceptorChange): Promise<Receptor> {
    const next: Receptor = { ...before, ...set, updatedAt: new Date() };
    // The schedule first: a spec Temporal refuses is a 400 and the record stays as it was. A receptor
    // that neither had nor has a schedule never calls Temporal (a neuron update must not depend on it).
    if (before.activation === 'schedule' || next.activation === 'schedule') await schedules.sync(next);
    await repo.update(before.workspaceId, before._id, { ...set, updatedAt: next.updatedAt });
    await events.emit(next.workspaceId, 'updated', ref(next));
    return next;
  }

  async function removeDocs(docs: Receptor[]): Promise<void> {
    for (const r of docs) {
      if (r.activation === 'schedule') await schedules.remove(r._id);
      await repo.remove(r.workspaceId, r._id);
      await events.emit(r.workspaceId, 'deleted', ref(r));
    }
  }

  return {
    targetOf,
    insertWithFreeSlug,
    checkWorkspace,
    lookup,
    view,
    assertCanChange,
    checkTarget,
    checkReflex,
    save,
    removeDocs,
  };
}
type ReceptorSteps = ReturnType<typeof createReceptorSteps>;

/** A target's own receptor kept in step with it (created, synced, removed; the start-up repairs). */
function createReceptorFollowers(ctx: ReceptorContext, { insertWithFreeSlug, save, removeDocs }: ReceptorSteps) {
  const { repo, schedules } = ctx;
  return {
    /** The receptor that dispatches this target, or null. */
    forTarget: (scope: Scope, kind: ReceptorTargetKind, id: string): Promise<Receptor | null> =>
      repo.ownReceptorOf(scope.workspaceId, kind, id),

    /**
     * Creates the receptor trigger of a new neuron (idempotent: an existing one is returned).
     * Its slug is the neuron name, suffixed `-2`, `-3`… when another receptor of the workspace has it.
     */
    async ensureForNeuron(scope: Scope, neuron: Neuron): Promise<Receptor> {
      const existing = await this.forTarget(scope, 'neuron', neuron._id);
      if (existing) return existing;
      return insertWithFreeSlug(
        blank(
          scope,
          neuron.brainId,
          { kind: 'neuron', id: neuron._id },
          neuron.isActive && !neuron.deletedAt,
          neuron.scope,
        ),
        neuron.name,
      );
    },

    /** A pathway gets its receptor as a neuron does (brain scope; is_active follows the pathway). */
    async ensureForPathway(
      scope: Scope,
      pathway: { _id: string; brainId: string; name: string; isActive: boolean },
    ): Promise<Receptor> {
      const existing = await this.forTarget(scope, 'pathway', pathway._id);
      if (existing) return existing;
      return insertWithFreeSlug(
        blank(scope, pathway.brainId, { kind: 'pathway', id: pathway._id }, pathway.isActive, 'brain'),
        pathway.name,
      );
    },

    /** Mirrors the target's scope and activity onto its receptor (a soft-deleted target reads as inactive); its schedule pauses with it. */
    async syncWithTarget(
      scope: Scope,
      kind: 'neuron' | 'pathway',
      id: string,
      state: { isActive: boolean; scope?: Receptor['scope'] },
    ): Promise<void> {
      const r = await this.forTarget(scope, kind, id);
      if (!r) return;
      if (r.isActive === state.isActive && (state.scope === undefined || r.scope === state.scope)) return;
      await save(r, { isActive: state.isActive, ...(state.scope ? { scope: state.scope } : {}) });
    },

    syncWithNeuron(scope: Scope, neuron: Neuron): Promise<void> {
      return this.syncWithTarget(scope, 'neuron', neuron._id, {
        isActive: neuron.isActive && !neuron.deletedAt,
        scope: neuron.scope,
      });
    },

    /** Removes the receptors of a target that is being removed (its own and subscriptions to it), with their schedules and bindings. */
    async deleteForTarget(scope: Scope, kind: ReceptorTargetKind, id: string): Promise<void> {
      await removeDocs(await repo.allForTarget(scope.workspaceId, kind, id));
    },

    /** Start-up migration: every pathway has its receptor (pathways created before receptors followed them get one). */
    async ensureForPathways(
      pathways: { _id: string; workspaceId: string; brainId: string; name: string; isActive: boolean }[],
    ): Promise<number> {
      let created = 0;
      for (const p of pathways) {
        const scope: Scope = {
          workspaceId: p.workspaceId,
          userId: null,
          apiKeyId: null,
          roles: ['workspace_admin'],
          credential: 'system',
        };
        if (await this.forTarget(scope, 'pathway', p._id)) continue;
        await this.ensureForPathway(scope, p);
        created++;
      }
      return created;
    },

    /** Start-up and maintenance: repairs drift between scheduled receptors and Temporal Schedules (all, or one workspace's). */
    async reconcileSchedules(workspaceId?: string) {
      const all = await repo.scheduled();
      if (!workspaceId) return schedules.reconcile(all);
      const mine = all.filter((r) => r.workspaceId === workspaceId);
      for (const r of mine) await schedules.sync(r);
      return { created: [], removed: [], checked: mine.length };
    },
  };
}

/** Reads: the brain's list, one receptor by workspace and slug or id, the catalog's, the subscribers of stimuli. */
function createReceptorReads(ctx: ReceptorContext, { checkWorkspace, lookup, view }: ReceptorSteps) {
  const { repo } = ctx;
  return {
    /** GET /v1/receptors (brain): the brain's receptors plus workspace- and core-scoped ones. */
    async list(scope: Scope, q: ReceptorListQuery) {
      const where = { brainId: scope.brainId, targetKind: q.target_type, ids: q.ids };
      const dir = q.sortDirection === 'asc' ? 1 : -1;
      return repo.page(scope.workspaceId, where, { field: SORT_FIELD[q.sortBy], dir }, q);
    },

    async get(scope: Scope, workspaceSegment: string, slugOrId: string, preview = 5): Promise<ReceptorView> {
      await checkWorkspace(scope, workspaceSegment);
      return view(await lookup(scope, slugOrId), preview);
    },

    /** GET /v1/resources/receptors/:id (UUID only). */
    async catalogGet(scope: Scope, id: string): Promise<ReceptorView> {
      const doc = await repo.findById(scope.workspaceId, id.toLowerCase());
      if (!doc) throw notFound('Receptor');
      return view(doc, 5);
    },

    /** The stimulus receptors of a workspace that subscribe to any of these patterns (event activation). */
    subscribers: (workspaceId: string, patterns: string[]) => repo.subscribers(workspaceId, patterns),
  };
}

/** Changes the caller asks for: a patch, a subscription made or removed. */
function createReceptorChanges(ctx: ReceptorContext, steps: ReceptorSteps) {
  const { repo, schedules, workspaces } = ctx;
  const {
    targetOf,
    insertWithFreeSlug,
    checkWorkspace,
    lookup,
    view,
    assertCanChange,
    checkTarget,
    checkReflex,
    save,
    removeDocs,
  } = steps;
  return {
    /**
     * PATCH /v1/receptors/:workspace_slug/:slug_or_id (a slug or an id). is_active of a neuron's
     * or pathway's own receptor changes the target (and so the receptor, which mirrors it);
     * source_config, executable_target and sensory_reflex_id are for stimulus receptors (stimulus
     * or cron in active_channels); a schedule follows the change (created, updated, paused, removed).
     */
    async patch(
      scope: Scope,
      workspaceSegment: string,
      slugOrId: string,
      body: ReceptorPatchBody,
    ): Promise<ReceptorView> {
      await checkWorkspace(scope, workspaceSegment);
      let r = await lookup(scope, slugOrId);
      await assertCanChange(scope, r);
      const channels = body.active_channels ? [...new Set(body.active_channels)] : r.activeChannels;
      const stimulus = isStimulusReceptor(channels);
      if (!stimulus && (body.source_config || body.executable_target || body.sensory_reflex_id)) {
        throw validationError(
          'source_config, executable_target and sensory_reflex_id apply to stimulus receptors: include stimulus or cron in active_channels',
        );
      }
      if (body.executable_target && isTargetOrigin(r)) {
        const same =
          body.executable_target.id === r.executableTarget.id &&
          body.executable_target.kind === r.executableTarget.kind;
        if (!same)
          throw validationError(
            `executable_target: this receptor belongs to its ${r.executableTarget.kind}; subscribe a new receptor to target something else`,
          );
      }
      const set: ReceptorChange = {};
      if (body.active_channels) set.activeChannels = channels;
      if (body.config) set.config = body.config;
      if (body.sensory_reflex_id !== undefined) {
        await checkReflex(scope, body.sensory_reflex_id);
        set.sensoryReflexId = body.sensory_reflex_id;
      }
      const target = body.executable_target
        ? await checkTarget(scope, r.brainId, body.executable_target)
        : r.executableTarget;
      if (body.executable_target) {
        await assertCanChange(scope, { executableTarget: target, scope: r.scope });
        set.executableTarget = target;
      }
      // The stored source_config as a request would send it (its timing included).
      const stored = {
        ...r.sourceConfig,
        stimulus_keys: r.stimulusKeys ?? [],
        activation: r.activation ?? 'event',
        ...(r.timing ? { timing: fromTiming(r.timing) } : {}),
      };
      if (body.source_config) {
        // Merged: `{ timing }` alone keeps the schedule's keys, activation and payload.
        const merged = SourceConfig.safeParse({ ...stored, ...body.source_config });
        if (!merged.success) {
          const issue = merged.error.issues[0]!;
          throw validationError(`source_config.${issue.path.join('.')}: ${issue.message}`);
        }
        Object.assign(set, checkSource(merged.data, target));
      } else if (body.executable_target) checkSource(stored as SourceConfig, target);
      if (!stimulus && (r.activation || (r.stimulusKeys ?? []).length)) {
        // No longer a stimulus receptor: its subscriptions and schedule go.
        Object.assign(set, { stimulusKeys: [], activation: null, timing: null });
      }
      if (body.is_active !== undefined && body.is_active !== r.isActive) {
        const t = r.executableTarget;
        if (isTargetOrigin(r) && t.kind === 'neuron' && t.id) {
          // The neuron is the truth: its update syncs this receptor (and its schedule).
          await targetOf('neuron').setActive({ ...scope, brainId: r.brainId }, t.id, body.is_active);
          r = (await repo.findById(scope.workspaceId, r._id)) ?? r;
        } else if (isTargetOrigin(r) && t.kind === 'pathway' && t.id) {
          await targetOf('pathway').setActive({ ...scope, brainId: r.brainId }, t.id, body.is_active);
          r = (await repo.findById(scope.workspaceId, r._id)) ?? r;
        } else set.isActive = body.is_active;
      }
      return view(await save(r, set), 5);
    },

    /** POST /v1/receptors/subscribe: a new receptor from a template (schedule or stimulus). */
    async subscribe(scope: Scope, body: SubscribeBody): Promise<ReceptorView> {
      const brainId = body.brain_id ?? scope.brainId;
      if (!brainId) throw validationError('brain_id (or X-Brain-Id) is required');
      if (!(await workspaces.findBrain(scope.workspaceId, brainId))) throw notFound('Brain');
      const target = await checkTarget(scope, brainId, body.target);
      const scopeOf =
        target.kind === 'neuron' && target.id
          ? ((await targetOf('neuron').resolve({ ...scope, brainId }, target.id)).scope ?? 'brain')
          : 'brain';
      await assertCanChange(scope, { executableTarget: target, scope: scopeOf });
      const source: SourceConfig =
        body.template === 'schedule'
          ? {
              stimulus_keys: body.stimulus_keys ?? [],
              activation: 'schedule',
              timing: body.timing,
              ...(body.payload ? { payload: body.payload } : {}),
            }
          : { stimulus_keys: body.stimulus_keys, activation: 'event' };
      const checked = checkSource(source, target);
      const doc: Omit<Receptor, 'slug'> = {
        ...blank(scope, brainId, target, body.is_active, scopeOf),
        origin: 'subscription',
        activeChannels: body.template === 'schedule' ? ['cron'] : ['stimulus'],
        config: body.template === 'stimulus' ? (body.config ?? {}) : {},
        ...checked,
      };
      // The schedule before the record: a spec the engine refuses is a 400 and nothing is stored.
      const slugged = await insertWithFreeSlug(doc, body.name);
      try {
        if (slugged.activation === 'schedule') await schedules.sync(slugged);
      } catch (e) {
        await repo.remove(scope.workspaceId, slugged._id);
        throw e;
      }
      return view(slugged, 5);
    },

    /** DELETE: a subscription receptor (with its schedule and bindings); a target's own receptor goes with its target. */
    async remove(scope: Scope, workspaceSegment: string, slugOrId: string): Promise<void> {
      await checkWorkspace(scope, workspaceSegment);
      const r = await lookup(scope, slugOrId);
      await assertCanChange(scope, r);
      if (isTargetOrigin(r))
        throw validationError(`This receptor belongs to its ${r.executableTarget.kind}: it is removed with it`);
      await removeDocs([r]);
    },
  };
}

/** A scheduled receptor the caller may change, and its schedule paused or unpaused. */
function createReceptorSchedulePauses({ checkWorkspace, lookup, view, assertCanChange, save }: ReceptorSteps) {
  return {
    /** Pause or unpause a receptor's schedule, with a note (kept on the receptor, so a reconcile keeps it). */
    async setPaused(
      scope: Scope,
      workspaceSegment: string,
      slugOrId: string,
      paused: boolean,
      note?: string,
    ): Promise<ReceptorView> {
      const r = await this.scheduled(scope, workspaceSegment, slugOrId);
      const next = await save(r, {
        schedulePause: { paused, note: note ?? (paused ? 'paused' : 'unpaused'), at: new Date() },
      });
      return view(next, 5);
    },

    /** A scheduled receptor the caller may change (400 when it has no schedule). */
    async scheduled(scope: Scope, workspaceSegment: string, slugOrId: string): Promise<Receptor> {
      await checkWorkspace(scope, workspaceSegment);
      const r = await lookup(scope, slugOrId);
      await assertCanChange(scope, r);
      if (r.activation !== 'schedule' || !r.timing)
        throw validationError('This receptor has no schedule (source_config.activation is not schedule)');
      return r;
    },
  };
}
export type ReceptorService = ReturnType<typeof createReceptorService>;
