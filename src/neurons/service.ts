import { randomUUID } from 'node:crypto';
import { snapshotOf, type Neuron, type NeuronChange, type NeuronVersion } from './model.js';
import type { NeuronStore, Page } from './store.js';
import type { WorkspaceRepo, ResourceEvents } from '../platform/index.js';
import { conflict, notFound, validationError } from '../kernel/errors.js';
import { resolveFallbacks, type ModelRegistry } from '../llm/registry.js';
import type { NeuronConfig, NeuronSnapshot } from './config-schemas.js';
import type {
  NeuronCatalogListQuery,
  NeuronCreateBody,
  NeuronListQuery,
  NeuronScope,
  NeuronUpdateBody,
} from './schemas.js';
import { hasRole, type Scope } from '../kernel/scope.js';
import { assertScopeRole, toNeuronSlug } from './rules.js';
import type { Bus } from '../kernel/events.js';

/** What a caller without core_admin sees instead of a core neuron's system_prompt. */
const REDACTED = '[redacted]';

/** A neuron as a read shows it: the head plus the body shown (head or a version), already redacted. */
export interface NeuronView {
  doc: Neuron;
  body: NeuronSnapshot;
  /** When `body` was written: the head's updatedAt, or the version's createdAt. */
  bodyAt: Date;
  redacted: boolean;
  /** true: the neuron belongs to the scope's brain; false: visible there through workspace/core scope; null: no brain. */
  attached: boolean | null;
}

/** One stored version as a read shows it (snapshot already redacted). */
export interface NeuronVersionView {
  doc: NeuronVersion;
  snapshot: NeuronSnapshot;
  redacted: boolean;
}

/** A page of neuron views. */
export type NeuronPage = Page<NeuronView>;

const SORT_FIELD = { created_at: 'createdAt', updated_at: 'updatedAt', name: 'name' } as const;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const actor = (scope: Scope): string | null => scope.userId ?? scope.apiKeyId ?? null;

/** Visible in a brain: its own neurons plus workspace- and core-scoped ones; without a brain, the whole workspace. */
const isVisible = (scope: Scope, doc: Neuron): boolean =>
  !scope.brainId || doc.brainId === scope.brainId || doc.scope !== 'brain';

/** The point-in-time body of a head (what a run executes when no version is pinned). */
const headSnapshot = (doc: Neuron): NeuronSnapshot => snapshotOf(doc);

/** What the neuron service's groups share: its store, the workspaces, the events it publishes, the model check. */
interface NeuronContext {
  repo: NeuronStore;
  workspaces: WorkspaceRepo;
  events: ResourceEvents;
  /** Publishes neuron.created, neuron.changed and neuron.removing: the neuron's receptor and reflex links follow it. */
  bus: Bus;
  /** Checks neuron_config.fallback_models when a config is written (400 naming the entry). */
  models?: Pick<ModelRegistry, 'resolve'>;
}

/** How resource events name a neuron. */
const ref = (d: Neuron, extra: { soft?: boolean } = {}) => ({
  kind: 'neuron' as const,
  id: d._id,
  brain_id: d.brainId,
  name: d.name,
  version: d.version,
  ...extra,
});

/** Core redaction: without core_admin, a core neuron's system_prompt reads as REDACTED. */
function redact(
  scope: Scope,
  snap: NeuronSnapshot,
  headScope: NeuronScope,
): { snapshot: NeuronSnapshot; redacted: boolean } {
  if ((snap.scope !== 'core' && headScope !== 'core') || hasRole(scope, 'core_admin'))
    return { snapshot: snap, redacted: false };
  const cfg =
    snap.neuron_config.system_prompt === undefined
      ? snap.neuron_config
      : { ...snap.neuron_config, system_prompt: REDACTED };
  return { snapshot: { ...snap, neuron_config: cfg }, redacted: true };
}

function view(
  scope: Scope,
  doc: Neuron,
  body: NeuronSnapshot = headSnapshot(doc),
  bodyAt: Date = doc.updatedAt,
): NeuronView {
  const r = redact(scope, body, doc.scope);
  return {
    doc,
    body: r.snapshot,
    bodyAt,
    redacted: r.redacted,
    attached: scope.brainId ? doc.brainId === scope.brainId : null,
  };
}

/** The vertical lookup: UUID or name/slug, never soft-deleted, visible in the scope's brain. */
async function resolveNeuron({ repo }: NeuronContext, scope: Scope, idOrSlug: string): Promise<Neuron> {
  if (UUID_RE.test(idOrSlug)) {
    const doc = await repo.findById(scope.workspaceId, idOrSlug.toLowerCase(), { live: true });
    if (doc && isVisible(scope, doc)) return doc;
  }
  const name = toNeuronSlug(idOrSlug);
  if (!name) throw notFound('Neuron');
  const matches = await repo.findByName(scope.workspaceId, name, scope.brainId);
  // In a brain, the brain's own neuron wins over a workspace/core one of the same name.
  const own = scope.brainId ? matches.find((m) => m.brainId === scope.brainId) : undefined;
  if (own) return own;
  if (!scope.brainId && matches.length > 1)
    throw validationError(`Neuron name "${name}" exists in several brains: send X-Brain-Id or use the neuron id`);
  if (!matches[0]) throw notFound('Neuron');
  return matches[0];
}

/** The catalog lookup: UUID only, soft-deleted included (so it can be inspected and restored). */
async function catalogFind({ repo }: NeuronContext, scope: Scope, id: string): Promise<Neuron> {
  const doc = await repo.findById(scope.workspaceId, id);
  if (!doc || !isVisible(scope, doc)) throw notFound('Neuron');
  return doc;
}

const liveCatalogFind = async (ctx: NeuronContext, scope: Scope, id: string): Promise<Neuron> => {
  const doc = await catalogFind(ctx, scope, id);
  if (doc.deletedAt) throw notFound('Neuron');
  return doc;
};

/** Changing a workspace- or core-scoped neuron needs the role that setting that scope needs. */
const assertCanChange = (scope: Scope, doc: Neuron) => assertScopeRole(scope, doc.scope);

function slugOrThrow(name: string): string {
  const slug = toNeuronSlug(name);
  if (!slug) throw validationError('name: must contain at least one letter or digit');
  return slug;
}

async function findManyVisible({ repo }: NeuronContext, scope: Scope, ids: string[]): Promise<Neuron[]> {
  const docs = await repo.findManyVisible(scope.workspaceId, ids, scope.brainId);
  const byId = new Map(docs.map((d) => [d._id, d]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** sub_neuron_ids must name live neurons visible in the neuron's own brain, and not the neuron itself (400 otherwise). */
async function checkSubNeurons(
  ctx: NeuronContext,
  scope: Scope,
  brainId: string,
  config: NeuronConfig,
  selfId: string | null,
): Promise<void> {
  const ids = config.sub_neuron_ids ?? [];
  if (selfId && ids.includes(selfId))
    throw validationError('neuron_config.sub_neuron_ids: a neuron cannot delegate to itself');
  const found = new Set((await findManyVisible(ctx, { ...scope, brainId }, ids)).map((d) => d._id));
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw validationError(`neuron_config.sub_neuron_ids: ${missing} is not a neuron of this brain`);
}

/**
 * Applies a change as a new version (the repository claims the next number and converges the
 * head), then syncs the receptor. Returns the version this change made (the head may already be newer).
 */
async function commit(
  { repo, bus, events }: NeuronContext,
  scope: Scope,
  doc: Neuron,
  set: NeuronChange,
  note: string,
  deleted = false,
): Promise<Neuron> {
  const nameTaken = () => conflict(`A neuron named "${set.name}" already exists in this brain`);
  // Checked first for a clear 409; the unique index still decides a race.
  if (
    set.name !== undefined &&
    set.name !== doc.name &&
    (await repo.nameTaken(scope.workspaceId, doc.brainId, set.name, doc._id))
  )
    throw nameTaken();
  const out = await repo.recordVersion(scope.workspaceId, doc._id, { set, note, createdBy: actor(scope), deleted });
  if (out === 'missing') throw notFound('Neuron');
  if (out === 'name_taken') throw nameTaken();
  await bus.emit('neuron.changed', { scope, neuron: out.head });
  await events.emit(scope.workspaceId, 'updated', ref(out.made));
  return out.made;
}

async function loadVersion(
  { repo }: NeuronContext,
  scope: Scope,
  doc: Neuron,
  version: number,
): Promise<{ doc: NeuronVersion; snapshot: NeuronSnapshot }> {
  const v = await repo.findVersion(scope.workspaceId, doc._id, version);
  if (v) return { doc: v, snapshot: v.snapshot ?? headSnapshot(doc) };
  // The head's own version record may be missing if its write was interrupted; the head is that version.
  if (version === doc.version) {
    const synthetic: NeuronVersion = {
      _id: `${doc._id}:${doc.version}`,
      neuronId: doc._id,
      workspaceId: doc.workspaceId,
      version,
      snapshot: headSnapshot(doc),
      createdAt: doc.updatedAt,
      createdBy: null,
    };
    return { doc: synthetic, snapshot: headSnapshot(doc) };
  }
  throw notFound('Neuron version');
}

async function getView(ctx: NeuronContext, scope: Scope, doc: Neuron, version?: number): Promise<NeuronView> {
  if (version === undefined) return view(scope, doc);
  const v = await loadVersion(ctx, scope, doc, version);
  return view(scope, doc, v.snapshot, v.doc.createdAt);
}

async function versionView(ctx: NeuronContext, scope: Scope, doc: Neuron, version: number): Promise<NeuronVersionView> {
  const v = await loadVersion(ctx, scope, doc, version);
  const r = redact(scope, v.snapshot, doc.scope);
  return { doc: v.doc, snapshot: r.snapshot, redacted: r.redacted };
}

/** Makes a new head whose body is that version's snapshot (the brain stays the neuron's own). */
async function promoteDoc(ctx: NeuronContext, scope: Scope, doc: Neuron, version: number): Promise<NeuronView> {
  assertCanChange(scope, doc);
  const { snapshot } = await loadVersion(ctx, scope, doc, version);
  if (snapshot.scope !== doc.scope) assertScopeRole(scope, snapshot.scope);
  const next = await commit(
    ctx,
    scope,
    doc,
    {
      name: snapshot.name,
      description: snapshot.description,
      config: snapshot.neuron_config,
      isActive: snapshot.is_active,
      scope: snapshot.scope,
    },
    `promoted from v${version}`,
  );
  return view(scope, next);
}

async function page(
  { repo }: NeuronContext,
  scope: Scope,
  q: NeuronListQuery,
  includeDeleted: boolean,
): Promise<NeuronPage> {
  const where = { brainId: scope.brainId, search: q.search, includeDeleted };
  const dir = q.sortDirection === 'asc' ? 1 : -1;
  const p = await repo.page(scope.workspaceId, where, { field: SORT_FIELD[q.sortBy], dir }, q);
  return { ...p, items: p.items.map((d) => view(scope, d)) };
}

/** The reads: lookups, pinned bodies, lists, heads and versions (vertical and catalog). */
function createNeuronReads(ctx: NeuronContext) {
  const { repo } = ctx;
  /** The vertical lookup: UUID or name/slug, never soft-deleted, visible in the scope's brain. */
  const resolve = (scope: Scope, idOrSlug: string): Promise<Neuron> => resolveNeuron(ctx, scope, idOrSlug);
  return {
    resolve,
    headSnapshot,
    findManyVisible: (scope: Scope, ids: string[]): Promise<Neuron[]> => findManyVisible(ctx, scope, ids),

    /**
     * A stored version's body (pinned runs); 404 when the version does not exist in the workspace.
     * Not redacted: this is what the run engine executes.
     */
    async snapshot(scope: Scope, neuronId: string, version: number): Promise<NeuronSnapshot> {
      const stored = (await repo.findVersion(scope.workspaceId, neuronId, version))?.snapshot;
      if (stored) return stored;
      const head = await repo.findById(scope.workspaceId, neuronId);
      if (head && head.version === version) return headSnapshot(head);
      throw notFound('Neuron version');
    },

    list: (scope: Scope, q: NeuronListQuery) => page(ctx, scope, q, false),

    /** Head, or the body of `version` (404 when that version does not exist). */
    get: async (scope: Scope, idOrSlug: string, version?: number) =>
      getView(ctx, scope, await resolve(scope, idOrSlug), version),

    /** Version summaries, newest first. */
    async versions(scope: Scope, idOrSlug: string): Promise<{ doc: Neuron; versions: NeuronVersion[] }> {
      const doc = await resolve(scope, idOrSlug);
      return { doc, versions: await repo.listVersions(scope.workspaceId, doc._id) };
    },
    version: async (scope: Scope, idOrSlug: string, version: number) =>
      versionView(ctx, scope, await resolve(scope, idOrSlug), version),

    // Catalog family (resource UUID only; soft-deleted neurons stay readable there).
    catalogList: (scope: Scope, q: NeuronCatalogListQuery) => page(ctx, scope, q, q.include_deleted ?? false),
    catalogGet: async (scope: Scope, id: string) => view(scope, await catalogFind(ctx, scope, id)),
    async catalogHistory(scope: Scope, id: string): Promise<{ doc: Neuron; versions: NeuronVersion[] }> {
      const doc = await catalogFind(ctx, scope, id);
      return { doc, versions: await repo.listVersions(scope.workspaceId, doc._id) };
    },
    catalogVersion: async (scope: Scope, id: string, version: number) =>
      versionView(ctx, scope, await catalogFind(ctx, scope, id), version),
  };
}

/** The changes: create, update, remove, promote a version, soft delete and restore. */
function createNeuronWrites(ctx: NeuronContext) {
  const { repo, workspaces, events, bus, models } = ctx;
  return {
    async create(scope: Scope, body: NeuronCreateBody): Promise<NeuronView> {
      const name = slugOrThrow(body.name);
      const brainId = body.brain_id ?? scope.brainId;
      if (!brainId) throw validationError('brain_id: required (or send X-Brain-Id)');
      if (!(await workspaces.findBrain(scope.workspaceId, brainId))) throw notFound('Brain');
      assertScopeRole(scope, body.scope);
      const config = body.neuron_config ?? {};
      if (models) resolveFallbacks(models, config.fallback_models);
      await checkSubNeurons(ctx, scope, brainId, config, null);
      const now = new Date();
      const doc: Neuron = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId,
        name,
        description: body.description,
        config,
        isActive: body.is_active,
        scope: body.scope,
        version: 1,
        deletedAt: null,
        createdBy: actor(scope),
        createdAt: now,
        updatedAt: now,
      };
      if (!(await repo.create(doc, 'created'))) throw conflict(`A neuron named "${name}" already exists in this brain`);
      await events.emit(scope.workspaceId, 'created', ref(doc));
      await bus.emit('neuron.created', { scope, neuron: doc });
      return view(scope, doc);
    },

    async update(scope: Scope, idOrSlug: string, body: NeuronUpdateBody): Promise<NeuronView> {
      const doc = await resolveNeuron(ctx, scope, idOrSlug);
      assertCanChange(scope, doc);
      if (body.scope !== undefined && body.scope !== doc.scope) assertScopeRole(scope, body.scope);
      if (body.neuron_config && models) resolveFallbacks(models, body.neuron_config.fallback_models);
      if (body.neuron_config) await checkSubNeurons(ctx, scope, doc.brainId, body.neuron_config, doc._id);
      const set: NeuronChange = {
        ...(body.name !== undefined ? { name: slugOrThrow(body.name) } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.neuron_config !== undefined ? { config: body.neuron_config } : {}),
        ...(body.is_active !== undefined ? { isActive: body.is_active } : {}),
        ...(body.scope !== undefined ? { scope: body.scope } : {}),
      };
      return view(scope, await commit(ctx, scope, doc, set, 'updated'));
    },

    /** Hard remove: reflex links and the receptor go first, then the versions and the head (a retry finishes the job). */
    async remove(scope: Scope, idOrSlug: string): Promise<void> {
      const doc = await resolveNeuron(ctx, scope, idOrSlug);
      assertCanChange(scope, doc);
      await bus.emit('neuron.removing', { scope, neuronId: doc._id });
      await repo.remove(scope.workspaceId, doc._id);
      await events.emit(scope.workspaceId, 'deleted', ref(doc));
    },

    promote: async (scope: Scope, idOrSlug: string, version: number) =>
      promoteDoc(ctx, scope, await resolveNeuron(ctx, scope, idOrSlug), version),

    catalogPromote: async (scope: Scope, id: string, version: number) =>
      promoteDoc(ctx, scope, await liveCatalogFind(ctx, scope, id), version),

    /** Soft delete (idempotent): the neuron leaves lists, vertical reads and invoke; its receptor reads inactive. */
    async softDelete(scope: Scope, id: string): Promise<void> {
      const doc = await catalogFind(ctx, scope, id);
      assertCanChange(scope, doc);
      if (doc.deletedAt) return;
      const next = await repo.softDelete(scope.workspaceId, doc._id);
      if (next) await bus.emit('neuron.changed', { scope, neuron: next });
      await events.emit(scope.workspaceId, 'deleted', ref(doc, { soft: true }));
    },

    /** Clears deletedAt and records the restored head as a new version; a live neuron is returned unchanged. */
    async restore(scope: Scope, id: string): Promise<NeuronView> {
      const doc = await catalogFind(ctx, scope, id);
      assertCanChange(scope, doc);
      if (!doc.deletedAt) return view(scope, doc);
      return view(scope, await commit(ctx, scope, doc, { deletedAt: null }, 'restored', true));
    },
  };
}

/** Neurons: CRUD, versions (one per change), slug resolution, scope roles, catalog soft delete, and their receptor. */
export function createNeuronService({ repo, workspaces, events, bus, models }: NeuronContext) {
  const ctx: NeuronContext = { repo, workspaces, events, bus, models };
  return { ...createNeuronReads(ctx), ...createNeuronWrites(ctx) };
}
export type NeuronService = ReturnType<typeof createNeuronService>;
