import { randomUUID } from 'node:crypto';
import type { ResourceEvents } from './resource-events.js';
import type { Filter } from 'mongodb';
import { escapeRegex } from '../db/client.js';
import { decodeBlob, encodeBlob, type Blob } from '../db/codec.js';
import {
  PATHWAY_LOCK_LEASE_MS,
  PATHWAY_VERSION_CAP,
  type PathwayDoc,
  type PathwayHead,
  type PathwayParticipantDoc,
  type PathwayRepo,
  type PathwayRole,
  type PathwayVersionEntry,
} from '../db/pathways.js';
import { conflict, forbidden, notFound, validationError } from '../errors.js';
import { compileGraph, type CompileResult } from '../pathways/compile.js';
import { isIndexGraph } from '../pathways/graph.js';
import { validateGraph, type ValidationResult } from '../pathways/validate.js';
import type {
  ParticipantCreateBody,
  PathwayCompileBody,
  PathwayCreateBody,
  PathwayListQuery,
  PathwayPromoteBody,
  PathwayUpdateBody,
  PathwayValidateBody,
} from '../schemas/pathways.js';
import { hasRole, type Scope } from '../scope.js';
import { holding, isDuplicateKey } from '../db/claims.js';
import type { Page } from '../db/paging.js';

/** Largest pathway_graph accepted (UTF-8 bytes of its JSON): the head keeps PATHWAY_VERSION_CAP copies of it. */
export const PATHWAY_GRAPH_MAX_BYTES = 200_000;
/** Largest pathway_data accepted (UTF-8 bytes of its JSON); it is not versioned, so it has its own larger budget. */
export const PATHWAY_DATA_MAX_BYTES = 1_000_000;

/** A page of pathway heads. */
export type PathwayPage = Page<PathwayHead>;
/** What getForRun hands the run engine: the head, the version chosen and that version's id-based graph. */
export interface PathwayForRun {
  pathway: PathwayDoc;
  version: number;
  graph: unknown;
}
/** Result of a role check for one user on one pathway. */
export interface RoleCheck {
  userId: string;
  role: PathwayRole | null;
  requiredRole: PathwayRole;
  allowed: boolean;
}

const SORT_FIELD = { created_at: 'createdAt', updated_at: 'updatedAt', name: 'name' } as const;
const RANK: Record<PathwayRole, number> = { viewer: 1, editor: 2, owner: 3 };
const EMPTY_GRAPH = { nodes: [], edges: [] };
/** How many validation errors a 400 message quotes. */
const ERRORS_IN_MESSAGE = 3;
/** How long a save waits for another save of the same pathway before answering 409. */
const LOCK_WAIT_MS = 5_000;

const actor = (scope: Scope): string | null => scope.userId ?? scope.apiKeyId ?? null;
const pathwayNotFound = () => notFound('Pathway');
const nodeCount = (graph: unknown): number => {
  const nodes = (graph as { nodes?: unknown } | null)?.nodes;
  return Array.isArray(nodes) ? nodes.length : 0;
};

/** The head fields of a full doc (what single reads and lists return). */
function toHead(doc: PathwayDoc): PathwayHead {
  const { versions, ...head } = doc;
  void versions;
  return head;
}

/** Encodes a client blob after checking its size; `field` names it in the 400 message. */
function encodeBounded(value: unknown, field: string, max: number): Blob {
  const blob = encodeBlob(value);
  if (Buffer.byteLength(blob, 'utf8') > max) throw validationError(`${field}: larger than ${max} bytes of JSON`);
  return blob;
}

/**
 * Pathways (`/v1/pathways` in the API reference): CRUD with a capped version history on the head record, graph validation against
 * the caller's neurons, compile previews, participants with owner ⊇ editor ⊇ viewer, and the lookup the run engine
 * uses. Every call takes the scope first; another workspace's or brain's pathway is indistinguishable from a missing one.
 */
/** What a pathway keeps in step with itself: its receptor (a pathway gets its receptor as a neuron does). */
export interface PathwayReceptorHooks {
  ensureForPathway(
    scope: Scope,
    p: { _id: string; brainId: string; name: string; isActive: boolean },
  ): Promise<unknown>;
  syncWithTarget(scope: Scope, kind: 'pathway', id: string, state: { isActive: boolean }): Promise<void>;
  deleteForTarget(scope: Scope, kind: 'pathway', id: string): Promise<void>;
}

export function createPathwayService({
  repo,
  receptors,
  events,
}: {
  repo: PathwayRepo;
  receptors: () => PathwayReceptorHooks;
  events: ResourceEvents;
}) {
  const ref = (d: { _id: string; brainId: string; name: string; latestVersion: number }) => ({
    kind: 'pathway' as const,
    id: d._id,
    brain_id: d.brainId,
    name: d.name,
    version: d.latestVersion,
  });
  /** Neuron ids a graph may reference in this scope (brain-visible ones, or the whole workspace without a brain). */
  async function neuronIdsFor(scope: Scope): Promise<Set<string>> {
    const ids = await repo.neuronIds(scope.workspaceId, scope.brainId);
    return new Set(ids.flatMap((id) => [id, id.toLowerCase()]));
  }

  /** The head, or 404 when it is missing, in another workspace or (when X-Brain-Id was sent) in another brain. */
  async function head(scope: Scope, id: string): Promise<PathwayHead> {
    const doc = await repo.findHead(scope.workspaceId, id);
    if (!doc || (scope.brainId && doc.brainId !== scope.brainId)) throw pathwayNotFound();
    return doc;
  }

  async function full(scope: Scope, id: string): Promise<PathwayDoc> {
    const doc = await repo.findFull(scope.workspaceId, id);
    if (!doc || (scope.brainId && doc.brainId !== scope.brainId)) throw pathwayNotFound();
    return doc;
  }

  /** A participant whose pathway is visible in the scope (else 404). */
  async function participant(scope: Scope, participantId: string): Promise<PathwayParticipantDoc> {
    const p = await repo.findParticipant(scope.workspaceId, participantId);
    const pathway = p && (await repo.findHead(scope.workspaceId, p.pathwayId));
    if (!p || !pathway || (scope.brainId && pathway.brainId !== scope.brainId)) throw notFound('Participant');
    return p;
  }

  /**
   * The caller's effective role (docs/roles.md): the platform itself and workspace admins act as owners; anyone else,
   * through a JWT or an API key they created alike, has their participant role, or none (read-only) when not a participant.
   */
  async function callerRole(scope: Scope, pathwayId: string): Promise<PathwayRole | null> {
    if (scope.credential === 'system' || hasRole(scope, 'workspace_admin')) return 'owner';
    if (!scope.userId) return null;
    return (await repo.findParticipantByUser(scope.workspaceId, pathwayId, scope.userId))?.role ?? null;
  }

  async function requireRole(scope: Scope, pathwayId: string, need: PathwayRole, action: string): Promise<void> {
    const role = await callerRole(scope, pathwayId);
    if (!role || RANK[role] < RANK[need])
      throw forbidden(`${action} requires pathway role ${need}${role ? ` (you are ${role})` : ''}`);
  }

  /** 400 unless `graph` is a valid id-based graph whose neurons exist in the pathway's workspace and brain. */
  async function checkGraph(scope: Scope, brainId: string, graph: unknown): Promise<void> {
    if (isIndexGraph(graph) && graph.nodes.length > 0) {
      throw validationError(
        'pathway_graph: expected an id-based graph (nodes { id, type, data }, edges { id, source, target }); compile produces the index form',
      );
    }
    const result = validateGraph(graph, { neuronIds: await neuronIdsFor({ ...scope, brainId }) });
    if (result.valid) return;
    const more =
      result.errors.length > ERRORS_IN_MESSAGE ? ` (and ${result.errors.length - ERRORS_IN_MESSAGE} more)` : '';
    throw validationError(`pathway_graph is invalid: ${result.errors.slice(0, ERRORS_IN_MESSAGE).join('; ')}${more}`);
  }

  /** Runs `fn` holding the pathway's write hold (`holding`, src/db/claims.ts); 409 after LOCK_WAIT_MS. */
  const locked = <T>(id: string, fn: () => Promise<T>): Promise<T> =>
    holding(repo.locks, id, fn, {
      leaseMs: PATHWAY_LOCK_LEASE_MS,
      waitMs: LOCK_WAIT_MS,
      busy: () => conflict('Pathway is being changed by another request; retry'),
    });

  /**
   * Applies a change and, when `version` is given, appends a history entry and moves the tip, dropping the oldest
   * entries past PATHWAY_VERSION_CAP. Serialized per pathway by the write lock, so concurrent saves never lose a version.
   */
  function commit(
    scope: Scope,
    id: string,
    plan: (doc: PathwayDoc) => { set: Partial<PathwayDoc>; version?: { graph: Blob; nodeCount: number; note: string } },
  ): Promise<PathwayHead> {
    return locked(id, async () => {
      const doc = await full(scope, id);
      const { set, version } = plan(doc);
      const now = new Date();
      const next: Partial<PathwayDoc> = { ...set, updatedAt: now };
      if (version) {
        const merged = { ...doc, ...set };
        const entry: PathwayVersionEntry = {
          version: doc.latestVersion + 1,
          createdAt: now,
          createdBy: actor(scope),
          note: version.note,
          graph: version.graph,
          name: merged.name,
          description: merged.description,
          nodeCount: version.nodeCount,
        };
        next.latestVersion = entry.version;
        next.versions = [...(doc.versions ?? []), entry].slice(-PATHWAY_VERSION_CAP);
      }
      if (!(await repo.writeIfVersion(scope.workspaceId, id, doc.latestVersion, next))) {
        // Only reachable when a stalled writer's lease was broken, or the pathway was deleted meanwhile.
        await full(scope, id);
        throw conflict('Pathway was changed concurrently; retry');
      }
      const head = toHead({ ...doc, ...next });
      await events.emit(scope.workspaceId, 'updated', ref(head));
      return head;
    });
  }

  return {
    neuronIdsFor,
    /** 403 unless the caller's role on the pathway covers `need` (for services that change what a pathway owns, like its receptor). */
    assertRole: requireRole,

    async list(scope: Scope, q: PathwayListQuery): Promise<PathwayPage> {
      if (!scope.brainId) throw validationError('X-Brain-Id header is required');
      const filter: Filter<PathwayDoc> & { workspaceId: string } = {
        workspaceId: scope.workspaceId,
        brainId: scope.brainId,
      };
      if (q.createdBy) filter.createdBy = q.createdBy;
      if (q.search) filter.name = { $regex: escapeRegex(q.search), $options: 'i' };
      const dir = q.sortDirection === 'asc' ? 1 : -1;
      return repo.list(filter, { field: SORT_FIELD[q.sortBy], dir }, q);
    },

    get: head,

    /** Version 1 is recorded at creation; a JWT creator becomes the pathway's owner participant. */
    async create(scope: Scope, body: PathwayCreateBody): Promise<PathwayHead> {
      if (!scope.brainId) throw validationError('X-Brain-Id header is required');
      const graphValue = body.pathway_graph ?? EMPTY_GRAPH;
      const graph = encodeBounded(graphValue, 'pathway_graph', PATHWAY_GRAPH_MAX_BYTES);
      const design = encodeBounded(body.pathway_data ?? null, 'pathway_data', PATHWAY_DATA_MAX_BYTES);
      await checkGraph(scope, scope.brainId, graphValue);
      const now = new Date();
      const description = body.description ?? '';
      const doc: PathwayDoc = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId: scope.brainId,
        name: body.name,
        description,
        graph,
        design,
        isActive: body.is_active,
        latestVersion: 1,
        versions: [
          {
            version: 1,
            createdAt: now,
            createdBy: actor(scope),
            note: 'created',
            graph,
            name: body.name,
            description,
            nodeCount: nodeCount(graphValue),
          },
        ],
        createdBy: actor(scope),
        createdAt: now,
        updatedAt: now,
      };
      await repo.pathways.insertOne(doc);
      await events.emit(scope.workspaceId, 'created', ref(doc));
      await receptors().ensureForPathway(scope, doc);
      if (scope.userId) {
        // the creator (through a JWT or their own API key) owns it
        await repo.participants.insertOne({
          _id: randomUUID(),
          workspaceId: scope.workspaceId,
          pathwayId: doc._id,
          userId: scope.userId,
          role: 'owner',
          addedBy: scope.userId,
          createdAt: now,
        });
      }
      return toHead(doc);
    },

    /**
     * Needs role editor. A new version is recorded when the graph, name or description changes (the versioned content);
     * pathway_data (editor layout) and is_active change the head only. Sending identical values records nothing.
     */
    async update(scope: Scope, id: string, body: PathwayUpdateBody): Promise<PathwayHead> {
      const current = await head(scope, id);
      await requireRole(scope, id, 'editor', 'Updating a pathway');
      const graph =
        body.pathway_graph === undefined
          ? undefined
          : encodeBounded(body.pathway_graph, 'pathway_graph', PATHWAY_GRAPH_MAX_BYTES);
      const design =
        body.pathway_data === undefined
          ? undefined
          : encodeBounded(body.pathway_data, 'pathway_data', PATHWAY_DATA_MAX_BYTES);
      if (graph !== undefined && graph !== current.graph) await checkGraph(scope, current.brainId, body.pathway_graph);
      const updated = await commit(scope, id, (doc) => {
        const set: Partial<PathwayDoc> = {};
        const changed: string[] = [];
        if (graph !== undefined && graph !== doc.graph) {
          set.graph = graph;
          changed.push('graph');
        }
        if (body.name !== undefined && body.name !== doc.name) {
          set.name = body.name;
          changed.push('name');
        }
        const description = body.description === undefined ? undefined : (body.description ?? '');
        if (description !== undefined && description !== doc.description) {
          set.description = description;
          changed.push('description');
        }
        if (design !== undefined) set.design = design;
        if (body.is_active !== undefined) set.isActive = body.is_active;
        if (!changed.length) return { set };
        const tipGraph = set.graph ?? doc.graph;
        return {
          set,
          version: {
            graph: tipGraph,
            nodeCount: nodeCount(decodeBlob(tipGraph, EMPTY_GRAPH)),
            note: `updated: ${changed.join(', ')}`,
          },
        };
      });
      if (body.is_active !== undefined)
        await receptors().syncWithTarget(scope, 'pathway', id, { isActive: updated.isActive });
      return updated;
    },

    /** Needs role owner; removes the head (with its history) and then its participants. */
    async remove(scope: Scope, id: string): Promise<void> {
      const doc = await head(scope, id);
      await requireRole(scope, id, 'owner', 'Deleting a pathway');
      if (!(await repo.remove(scope.workspaceId, id))) throw pathwayNotFound();
      await events.emit(scope.workspaceId, 'deleted', ref(doc));
      await receptors().deleteForTarget(scope, 'pathway', id);
    },

    /** The kept history, newest first. */
    async versions(scope: Scope, id: string): Promise<{ doc: PathwayDoc; versions: PathwayVersionEntry[] }> {
      const doc = await full(scope, id);
      return { doc, versions: [...(doc.versions ?? [])].sort((a, b) => b.version - a.version) };
    },

    /** One kept version; 404 when it was never recorded or has been dropped by the cap. */
    async version(scope: Scope, id: string, version: number): Promise<{ doc: PathwayDoc; entry: PathwayVersionEntry }> {
      const doc = await full(scope, id);
      const entry = (doc.versions ?? []).find((v) => v.version === version);
      if (!entry) throw notFound('Pathway version');
      return { doc, entry };
    },

    /**
     * Makes a kept version's graph the tip as a new version entry (`promoted from vN`); name, description, pathway_data
     * and is_active stay as they are. Needs role editor. The graph is not re-validated: rolling back must always work,
     * and a run compiles (and checks neurons) anyway.
     */
    async promote(scope: Scope, id: string, version: number, body: PathwayPromoteBody = {}): Promise<PathwayHead> {
      if (body.workspace_id !== undefined && body.workspace_id !== scope.workspaceId)
        throw forbidden('workspace_id does not match the credential');
      await head(scope, id);
      await requireRole(scope, id, 'editor', 'Promoting a pathway version');
      return commit(scope, id, (doc) => {
        const entry = (doc.versions ?? []).find((v) => v.version === version);
        if (!entry) throw notFound('Pathway version');
        return {
          set: { graph: entry.graph },
          version: { graph: entry.graph, nodeCount: entry.nodeCount, note: `promoted from v${version}` },
        };
      });
    },

    /** POST /v1/pathways/validate: the graph rules plus the neuron check against the caller's workspace (and brain). */
    async validate(scope: Scope, body: PathwayValidateBody): Promise<ValidationResult> {
      return validateGraph(
        { nodes: body.nodes ?? [], edges: body.edges ?? [] },
        { neuronIds: await neuronIdsFor(scope) },
      );
    },

    /** POST /v1/pathways/compile: the index-based graph a run would walk, with the preview input echoed. */
    async compile(
      scope: Scope,
      body: PathwayCompileBody,
    ): Promise<CompileResult & { preview?: { input: Record<string, unknown> } }> {
      const result = compileGraph(body.pathway, { neuronIds: await neuronIdsFor(scope), overrides: body.overrides });
      return { ...result, ...(body.payload !== undefined && { preview: { input: body.payload } }) };
    },

    /**
     * For the run engine: 404 'Pathway not found' when the scope has no brain, the pathway
     * is in another workspace or brain, or it is inactive and no version was requested. `version` picks a kept
     * version (404 'Pathway version not found' when it is not kept); omitted, the tip.
     */
    async getForRun(scope: Scope, id: string, version?: number): Promise<PathwayForRun> {
      if (!scope.brainId) throw pathwayNotFound();
      const pathway = await repo.findFull(scope.workspaceId, id);
      if (!pathway || pathway.brainId !== scope.brainId) throw pathwayNotFound();
      if (version === undefined) {
        if (!pathway.isActive) throw pathwayNotFound();
        return { pathway, version: pathway.latestVersion, graph: decodeBlob(pathway.graph, EMPTY_GRAPH) };
      }
      const entry = (pathway.versions ?? []).find((v) => v.version === version);
      if (entry) return { pathway, version, graph: decodeBlob(entry.graph, EMPTY_GRAPH) };
      if (version === pathway.latestVersion) return { pathway, version, graph: decodeBlob(pathway.graph, EMPTY_GRAPH) };
      throw notFound('Pathway version');
    },

    // ---------------------------------------------------------------- participants

    async participants(scope: Scope, id: string): Promise<PathwayParticipantDoc[]> {
      await head(scope, id);
      return repo.listParticipants(scope.workspaceId, id);
    },

    /** Needs role owner; 409 when the user already is a participant (change the role with updateParticipant). */
    async addParticipant(scope: Scope, id: string, body: ParticipantCreateBody): Promise<PathwayParticipantDoc> {
      await head(scope, id);
      await requireRole(scope, id, 'owner', 'Managing participants');
      if (await repo.findParticipantByUser(scope.workspaceId, id, body.user_id))
        throw conflict('User is already a participant of this pathway');
      const doc: PathwayParticipantDoc = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        pathwayId: id,
        userId: body.user_id,
        role: body.role,
        addedBy: actor(scope),
        createdAt: new Date(),
      };
      try {
        await repo.participants.insertOne(doc);
      } catch (e) {
        if (isDuplicateKey(e)) throw conflict('User is already a participant of this pathway');
        throw e;
      }
      return doc;
    },

    /** Needs role owner on the participant's pathway. */
    async updateParticipant(scope: Scope, participantId: string, role: PathwayRole): Promise<PathwayParticipantDoc> {
      const p = await participant(scope, participantId);
      await requireRole(scope, p.pathwayId, 'owner', 'Managing participants');
      await repo.participants.updateOne({ _id: p._id, workspaceId: scope.workspaceId }, { $set: { role } });
      return { ...p, role };
    },

    /** Needs role owner; 404 when the user is not a participant. */
    async removeParticipantByUser(scope: Scope, id: string, userId: string): Promise<void> {
      await head(scope, id);
      await requireRole(scope, id, 'owner', 'Managing participants');
      const r = await repo.participants.deleteOne({ workspaceId: scope.workspaceId, pathwayId: id, userId });
      if (r.deletedCount !== 1) throw notFound('Participant');
    },

    /** Needs role owner on the participant's pathway. */
    async removeParticipant(scope: Scope, participantId: string): Promise<void> {
      const p = await participant(scope, participantId);
      await requireRole(scope, p.pathwayId, 'owner', 'Managing participants');
      const r = await repo.participants.deleteOne({ _id: p._id, workspaceId: scope.workspaceId });
      if (r.deletedCount !== 1) throw notFound('Participant');
    },

    /** Whether `userId`'s participant role covers `required` (owner ⊇ editor ⊇ viewer); a non-participant has role null. */
    async checkRole(scope: Scope, id: string, userId: string, required: PathwayRole): Promise<RoleCheck> {
      await head(scope, id);
      const role = (await repo.findParticipantByUser(scope.workspaceId, id, userId))?.role ?? null;
      return { userId, role, requiredRole: required, allowed: role !== null && RANK[role] >= RANK[required] };
    },
  };
}
export type PathwayService = ReturnType<typeof createPathwayService>;
