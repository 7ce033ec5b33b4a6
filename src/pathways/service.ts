import { randomUUID } from 'node:crypto';
import type { Bus } from '../kernel/events.js';
import type { ResourceEvents } from '../platform/index.js';
import type {
  Pathway,
  PathwayChange,
  PathwayParticipantDoc,
  PathwayRole,
  PathwayVersion,
  PathwayVersionSummary,
} from './model.js';
import type { Page, PathwayChangeOutcome, PathwayPlan, PathwayStore } from './store.js';
import { conflict, forbidden, notFound, validationError } from '../kernel/errors.js';
import { compileGraph, type CompileResult } from './compile.js';
import type { Guard } from '../net/guard.js';
import { isIndexGraph } from './graph.js';
import {
  connectionRefusal,
  credentialInOrigin,
  httpNodesOf,
  httpTemplates,
  referencedNames,
  secretRefusal,
  type ConnectionUse,
  type GraphSaver,
  type SecretUsePolicy,
} from '../expressions/index.js';
import { validateGraph, type ValidationResult } from './validate.js';
import type {
  ParticipantCreateBody,
  PathwayCompileBody,
  PathwayCreateBody,
  PathwayListQuery,
  PathwayPromoteBody,
  PathwayUpdateBody,
  PathwayValidateBody,
} from './schemas.js';
import { hasRole, type Scope } from '../kernel/scope.js';
import { toNeuronSlug } from '../neurons/index.js';

/** Largest pathway_graph accepted (UTF-8 bytes of its JSON): the head keeps PATHWAY_VERSION_CAP copies of it. */
const PATHWAY_GRAPH_MAX_BYTES = 200_000;
/** Largest pathway_data accepted (UTF-8 bytes of its JSON); it is not versioned, so it has its own larger budget. */
const PATHWAY_DATA_MAX_BYTES = 1_000_000;

/** A page of pathway heads. */
export type PathwayPage = Page<Pathway>;
/** What getForRun hands the run engine: the head, the version chosen and that version's id-based graph. @public (in the service's signature) */
export interface PathwayForRun {
  pathway: Pathway;
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

const actor = (scope: Scope): string | null => scope.userId ?? scope.apiKeyId ?? null;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const pathwayNotFound = () => notFound('Pathway');

/** What a graph's secrets and connections are checked against when it is saved (src/expressions/credentials.ts). */
export interface CredentialLookup {
  /** The use policies of the named secrets that exist. */
  policies(workspaceId: string, names: string[]): Promise<Map<string, SecretUsePolicy>>;
  /** The integration of that id (null: not configured). */
  integration(workspaceId: string, integrationId: string): Promise<ConnectionUse | null>;
}

/** What the pathway service's groups share: the deps it was created with. */
interface PathwayContext {
  repo: PathwayStore;
  events: ResourceEvents;
  /** Publishes pathway.created, pathway.activity and pathway.removed: the pathway's receptor follows it. */
  bus: Bus;
  /** The outbound guard: an http node's literal URL is checked when the graph is saved (and at each call). */
  guard: Pick<Guard, 'checkSavedAll'>;
  credentials: CredentialLookup;
}

const ref = (d: { _id: string; brainId: string; name: string; latestVersion: number }) => ({
  kind: 'pathway' as const,
  id: d._id,
  brain_id: d.brainId,
  name: d.name,
  version: d.latestVersion,
});

/** 404 unless the pathway is visible in the scope (the brain, when X-Brain-Id was sent). */
const visible = <T extends { head: Pathway }>(scope: Scope, found: T | null): T => {
  if (!found || (scope.brainId && found.head.brainId !== scope.brainId)) throw pathwayNotFound();
  return found;
};

/** The caller as the saver of a graph (a saver is an editor: saving needs that role). */
const saverFrom = (scope: Scope): GraphSaver => ({
  userId: actor(scope),
  admin: scope.credential === 'system' || hasRole(scope, 'workspace_admin'),
  editor: true,
});

/** The checks the groups share: sizes, visibility, roles, a graph's references, URLs and credentials, and the versioned commit. */
function createPathwayChecks({ repo, events, guard, credentials }: PathwayContext) {
  /** Checks the stored size of a client value (as the store keeps it); `field` names it in the 400 message. */
  function bounded<T>(value: T, field: string, max: number): T {
    if (repo.storedBytes(value) > max) throw validationError(`${field}: larger than ${max} bytes of JSON`);
    return value;
  }
  /** Neuron ids a graph may reference in this scope (brain-visible ones, or the whole workspace without a brain). */
  async function neuronIdsFor(scope: Scope): Promise<Set<string>> {
    const ids = await repo.neuronIds(scope.workspaceId, scope.brainId);
    return new Set(ids.flatMap((id) => [id, id.toLowerCase()]));
  }

  /** Pathway ids a pathway or map node may run in this scope (the brain's, or the whole workspace's without a brain). */
  async function pathwayIdsFor(scope: Scope): Promise<Set<string>> {
    const ids = await repo.pathwayIds(scope.workspaceId, scope.brainId);
    return new Set(ids.flatMap((id) => [id, id.toLowerCase()]));
  }

  /** What a graph's references are checked against in this scope: its neurons and pathways. */
  const refsFor = async (scope: Scope) => {
    const [neuronIds, pathwayIds] = await Promise.all([neuronIdsFor(scope), pathwayIdsFor(scope)]);
    return { neuronIds, pathwayIds };
  };

  /** The head, or 404 when it is missing, in another workspace or (when X-Brain-Id was sent) in another brain. */
  async function head(scope: Scope, id: string): Promise<Pathway> {
    const doc = await repo.findHead(scope.workspaceId, id);
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

  /**
   * An http node whose URL is literal (no `{{ }}` template) names the address now: the guard checks it at save,
   * as a 400 naming the node's field. A templated URL is known only at run time, where the guard checks every call.
   */
  async function checkHttpUrls(graph: unknown): Promise<void> {
    const nodes = (graph as { nodes?: unknown }).nodes;
    if (!Array.isArray(nodes)) return;
    const literal: [string, string][] = [];
    for (const [i, n] of nodes.entries()) {
      const node = n as { type?: unknown; data?: { url?: unknown } };
      const url = node.type === 'http' ? node.data?.url : undefined;
      if (typeof url === 'string' && !url.includes('{{')) literal.push([url, `pathway_graph.nodes.${i}.data.url`]);
    }
    await guard.checkSavedAll(literal);
  }

  /**
   * A graph's secrets and connections are the saver's privilege (docs/pathways.md, "Secrets"): 400
   * when one is used in a URL's scheme, host or port; 403 naming it when the caller may not use it.
   * A secret not set yet is not checked here (its run is, once it exists).
   */
  async function checkCredentials(scope: Scope, graph: unknown): Promise<void> {
    const nodes = httpNodesOf(graph);
    if (!nodes.length) return;
    for (const n of nodes)
      if (typeof n.data.url === 'string' && credentialInOrigin(n.data.url))
        throw validationError(
          `pathway_graph: node ${n.id}: a secret or connection may not be used in the URL's scheme, host or port`,
        );
    const refs = referencedNames(nodes.flatMap((n) => httpTemplates(n.data)));
    const saver = saverFrom(scope);
    if (saver.admin) return;
    for (const [name, policy] of await credentials.policies(scope.workspaceId, refs.secrets)) {
      const why = secretRefusal(name, policy, saver);
      if (why) throw forbidden(why);
    }
    for (const id of refs.connections) {
      const i = await credentials.integration(scope.workspaceId, id);
      const why = i && connectionRefusal(id, i, saver);
      if (why) throw forbidden(why);
    }
  }

  /** Who saved the graph a run runs: the pinned version's saver (null: the head's); an inline graph's is its caller. */
  async function graphSaver(
    scope: { workspaceId: string; userId: string | null; apiKeyId: string | null; roles: string[]; credential: string },
    pathwayId: string | null,
    version: number | null,
  ): Promise<GraphSaver> {
    if (!pathwayId) {
      // An inline graph is saved by no one: it runs as its caller sent it, and no pathway makes them an editor.
      const admin =
        scope.credential === 'system' || scope.roles.some((r) => r === 'workspace_admin' || r === 'core_admin');
      return { userId: scope.userId ?? scope.apiKeyId, admin, editor: false };
    }
    const found = await repo.findVersion(scope.workspaceId, pathwayId, version ?? -1);
    const head = found?.head;
    const entry =
      found?.entry ??
      (head && (version === null || version === head.latestVersion)
        ? { savedBy: head.graphSavedBy, savedByAdmin: head.graphSavedByAdmin }
        : null);
    const userId = entry?.savedBy ?? null;
    const admin = entry?.savedByAdmin ?? false;
    const role =
      userId && !admin ? (await repo.findParticipantByUser(scope.workspaceId, pathwayId, userId))?.role : null;
    return { userId, admin, editor: admin || role === 'editor' || role === 'owner' };
  }

  /** 400 unless `graph` is a valid id-based graph whose neurons exist in the pathway's workspace and brain. */
  async function checkGraph(scope: Scope, brainId: string, graph: unknown, selfId?: string): Promise<void> {
    if (isIndexGraph(graph) && graph.nodes.length > 0) {
      throw validationError(
        'pathway_graph: expected an id-based graph (nodes { id, type, data }, edges { id, source, target }); compile produces the index form',
      );
    }
    const result = validateGraph(graph, { ...(await refsFor({ ...scope, brainId })), selfPathwayId: selfId });
    if (result.valid) return checkHttpUrls(graph);
    const more =
      result.errors.length > ERRORS_IN_MESSAGE ? ` (and ${result.errors.length - ERRORS_IN_MESSAGE} more)` : '';
    throw validationError(`pathway_graph is invalid: ${result.errors.slice(0, ERRORS_IN_MESSAGE).join('; ')}${more}`);
  }

  /**
   * Applies a change and, when the plan has a note, records a new version (the repository holds the
   * pathway's write hold, so concurrent saves never lose a version; 409 after a wait).
   */
  async function commit(scope: Scope, id: string, plan: PathwayPlan): Promise<Pathway> {
    const out: PathwayChangeOutcome = await repo.recordVersion(scope.workspaceId, id, {
      brainId: scope.brainId,
      createdBy: actor(scope),
      plan,
    });
    if (out === 'missing') throw pathwayNotFound();
    if (out === 'busy') throw conflict('Pathway is being changed by another request; retry');
    if (out === 'raced') throw conflict('Pathway was changed concurrently; retry');
    await events.emit(scope.workspaceId, 'updated', ref(out));
    return out;
  }

  return {
    bounded,
    neuronIdsFor,
    pathwayIdsFor,
    refsFor,
    head,
    participant,
    requireRole,
    checkCredentials,
    graphSaver,
    checkGraph,
    commit,
  };
}

/** What the groups are built over: the context and the shared checks. */
type PathwayGroupContext = PathwayContext & { calls: ReturnType<typeof createPathwayChecks> };

/** Reading pathways: the list, a head, its versions, slugs, validate and compile previews, and the run engine's lookups. */
function createPathwayReads({ repo, calls }: PathwayGroupContext) {
  const { neuronIdsFor, pathwayIdsFor, graphSaver, checkCredentials, requireRole, head, refsFor } = calls;
  const reads = {
    neuronIdsFor,
    pathwayIdsFor,
    graphSaver,
    /** 403/400 unless the caller may use every secret and connection the graph's http nodes name (an inline run's start). */
    checkCredentials,
    /** 403 unless the caller's role on the pathway covers `need` (for services that change what a pathway owns, like its receptor). */
    assertRole: requireRole,

    async list(scope: Scope, q: PathwayListQuery): Promise<PathwayPage> {
      if (!scope.brainId) throw validationError('X-Brain-Id header is required');
      const where = { brainId: scope.brainId, createdBy: q.createdBy, search: q.search };
      const dir = q.sortDirection === 'asc' ? 1 : -1;
      return repo.page(scope.workspaceId, where, { field: SORT_FIELD[q.sortBy], dir }, q);
    },

    get: head,

    /**
     * The pathway a run names (execute, the OpenAI-compatible `pathway:<ref>`): its id, or its
     * slug (its name as neurons' names are slugged, so `Support Triage`, `support-triage` and
     * `support triage` name one pathway) among the caller's brain's pathways. Slugs are not unique:
     * two pathways of the brain with one slug are a 400 that asks for the id; none is a 404.
     */
    async resolveId(scope: Scope, ref: string): Promise<string> {
      if (UUID_RE.test(ref)) return ref.toLowerCase();
      const slug = toNeuronSlug(ref);
      if (!scope.brainId || !slug) throw pathwayNotFound();
      const ids = await repo.idsBySlug(scope.workspaceId, scope.brainId, slug);
      if (ids.length > 1)
        throw validationError(`Several pathways of this brain are named "${slug}": use the pathway id`);
      if (!ids[0]) throw pathwayNotFound();
      return ids[0];
    },

    /** Start-up: pathways stored before slugs get theirs (idempotent; a no-op once done). */
    async fillSlugs(all: { _id: string; workspaceId: string; name: string; slug?: string }[]): Promise<number> {
      let filled = 0;
      for (const p of all)
        if (p.slug === undefined && (await repo.fillSlug(p.workspaceId, p._id, toNeuronSlug(p.name)))) filled++;
      return filled;
    },

    /** The kept history, newest first. */
    async versions(scope: Scope, id: string): Promise<{ doc: Pathway; versions: PathwayVersionSummary[] }> {
      const { head: doc, versions } = visible(scope, await repo.history(scope.workspaceId, id));
      return { doc, versions: [...versions].sort((a, b) => b.version - a.version) };
    },

    /** One kept version; 404 when it was never recorded or has been dropped by the cap. */
    async version(scope: Scope, id: string, version: number): Promise<{ doc: Pathway; entry: PathwayVersion }> {
      const { head: doc, entry } = visible(scope, await repo.findVersion(scope.workspaceId, id, version));
      if (!entry) throw notFound('Pathway version');
      return { doc, entry };
    },

    /** POST /v1/pathways/validate: the graph rules plus the neuron check against the caller's workspace (and brain). */
    async validate(scope: Scope, body: PathwayValidateBody): Promise<ValidationResult> {
      return validateGraph({ nodes: body.nodes ?? [], edges: body.edges ?? [] }, await refsFor(scope));
    },

    /** POST /v1/pathways/compile: the index-based graph a run would walk, with the preview input echoed. */
    async compile(
      scope: Scope,
      body: PathwayCompileBody,
    ): Promise<CompileResult & { preview?: { input: Record<string, unknown> } }> {
      const result = compileGraph(body.pathway, { ...(await refsFor(scope)), overrides: body.overrides });
      return { ...result, ...(body.payload !== undefined && { preview: { input: body.payload } }) };
    },

    /**
     * For the run engine: 404 'Pathway not found' when the scope has no brain, the pathway
     * is in another workspace or brain, or it is inactive and no version was requested. `version` picks a kept
     * version (404 'Pathway version not found' when it is not kept); omitted, the tip.
     */
    async getForRun(scope: Scope, id: string, version?: number): Promise<PathwayForRun> {
      if (!scope.brainId) throw pathwayNotFound();
      if (version === undefined) {
        const pathway = await repo.findHead(scope.workspaceId, id);
        if (!pathway || pathway.brainId !== scope.brainId || !pathway.isActive) throw pathwayNotFound();
        return { pathway, version: pathway.latestVersion, graph: pathway.graph };
      }
      const found = await repo.findVersion(scope.workspaceId, id, version);
      if (!found || found.head.brainId !== scope.brainId) throw pathwayNotFound();
      const { head: pathway, entry } = found;
      if (entry) return { pathway, version, graph: entry.graph };
      if (version === pathway.latestVersion) return { pathway, version, graph: pathway.graph };
      throw notFound('Pathway version');
    },

    /**
     * For a pathway or map node: the pathway in the run's workspace, in the run's brain when it has one
     * (else the pathway's own), at `version` (omitted: the tip, active or not; a node names it on
     * purpose). 404 as getForRun when it is not there.
     */
    async getForChildRun(scope: Scope, id: string, version?: number): Promise<PathwayForRun> {
      const found = await repo.findHead(scope.workspaceId, id);
      if (!found || (scope.brainId && found.brainId !== scope.brainId)) throw pathwayNotFound();
      if (version === undefined) return { pathway: found, version: found.latestVersion, graph: found.graph };
      return reads.getForRun({ ...scope, brainId: found.brainId }, id, version);
    },
  };
  return reads;
}

/** Changing pathways: create, update (a new version when the content changes), remove and promote a kept version. */
function createPathwayWrites({ repo, events, bus, calls }: PathwayGroupContext) {
  const { bounded, checkGraph, checkCredentials, head, requireRole, commit } = calls;
  return {
    /** Version 1 is recorded at creation; a JWT creator becomes the pathway's owner participant. */
    async create(scope: Scope, body: PathwayCreateBody): Promise<Pathway> {
      if (!scope.brainId) throw validationError('X-Brain-Id header is required');
      const graph = bounded(body.pathway_graph ?? EMPTY_GRAPH, 'pathway_graph', PATHWAY_GRAPH_MAX_BYTES);
      const design = bounded(body.pathway_data ?? null, 'pathway_data', PATHWAY_DATA_MAX_BYTES);
      await checkGraph(scope, scope.brainId, graph);
      await checkCredentials(scope, graph);
      const saver = saverFrom(scope);
      const now = new Date();
      const doc: Pathway = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        brainId: scope.brainId,
        name: body.name,
        slug: toNeuronSlug(body.name),
        description: body.description ?? '',
        graph,
        design,
        isActive: body.is_active,
        latestVersion: 1,
        graphSavedBy: saver.userId,
        graphSavedByAdmin: saver.admin,
        createdBy: actor(scope),
        createdAt: now,
        updatedAt: now,
      };
      await repo.create(doc, 'created');
      await events.emit(scope.workspaceId, 'created', ref(doc));
      await bus.emit('pathway.created', { scope, pathway: doc });
      if (scope.userId) {
        // the creator (through a JWT or their own API key) owns it
        await repo.addParticipant({
          _id: randomUUID(),
          workspaceId: scope.workspaceId,
          pathwayId: doc._id,
          userId: scope.userId,
          role: 'owner',
          addedBy: scope.userId,
          createdAt: now,
        });
      }
      return doc;
    },

    /**
     * Needs role editor. A new version is recorded when the graph, name or description changes (the versioned content);
     * pathway_data (editor layout) and is_active change the head only. Sending identical values records nothing.
     */
    async update(scope: Scope, id: string, body: PathwayUpdateBody): Promise<Pathway> {
      const current = await head(scope, id);
      await requireRole(scope, id, 'editor', 'Updating a pathway');
      const graph =
        body.pathway_graph === undefined
          ? undefined
          : bounded(body.pathway_graph, 'pathway_graph', PATHWAY_GRAPH_MAX_BYTES);
      const design =
        body.pathway_data === undefined
          ? undefined
          : bounded(body.pathway_data, 'pathway_data', PATHWAY_DATA_MAX_BYTES);
      if (graph !== undefined && !repo.sameStored(graph, current.graph)) {
        await checkGraph(scope, current.brainId, graph, id);
        await checkCredentials(scope, graph);
      }
      const saver = saverFrom(scope);
      const updated = await commit(scope, id, (doc) => {
        const set: PathwayChange = {};
        const changed: string[] = [];
        if (graph !== undefined && !repo.sameStored(graph, doc.graph)) {
          set.graph = graph;
          // The graph is now this caller's: its secrets are checked against them when it runs.
          set.graphSavedBy = saver.userId;
          set.graphSavedByAdmin = saver.admin;
          changed.push('graph');
        }
        if (body.name !== undefined && body.name !== doc.name) {
          set.name = body.name;
          set.slug = toNeuronSlug(body.name);
          changed.push('name');
        }
        const description = body.description === undefined ? undefined : (body.description ?? '');
        if (description !== undefined && description !== doc.description) {
          set.description = description;
          changed.push('description');
        }
        if (design !== undefined) set.design = design;
        if (body.is_active !== undefined) set.isActive = body.is_active;
        return changed.length ? { set, note: `updated: ${changed.join(', ')}` } : { set };
      });
      if (body.is_active !== undefined)
        await bus.emit('pathway.activity', { scope, pathwayId: id, isActive: updated.isActive });
      return updated;
    },

    /** Needs role owner; removes the head (with its history) and then its participants. */
    async remove(scope: Scope, id: string): Promise<void> {
      const doc = await head(scope, id);
      await requireRole(scope, id, 'owner', 'Deleting a pathway');
      if (!(await repo.remove(scope.workspaceId, id))) throw pathwayNotFound();
      await events.emit(scope.workspaceId, 'deleted', ref(doc));
      await bus.emit('pathway.removed', { scope, pathwayId: id });
    },

    /**
     * Makes a kept version's graph the tip as a new version entry (`promoted from vN`); name, description, pathway_data
     * and is_active stay as they are. Needs role editor. The graph is not re-validated: rolling back must always work,
     * and a run compiles (and checks neurons) anyway.
     */
    async promote(scope: Scope, id: string, version: number, body: PathwayPromoteBody = {}): Promise<Pathway> {
      if (body.workspace_id !== undefined && body.workspace_id !== scope.workspaceId)
        throw forbidden('workspace_id does not match the credential');
      await head(scope, id);
      await requireRole(scope, id, 'editor', 'Promoting a pathway version');
      // Promoting saves that graph again, as the caller: its secrets and connections are theirs to use.
      const kept = (await repo.findVersion(scope.workspaceId, id, version))?.entry;
      if (!kept) throw notFound('Pathway version');
      await checkCredentials(scope, kept.graph);
      const saver = saverFrom(scope);
      return commit(scope, id, (_head, keptNow) => {
        const entry = keptNow(version);
        if (!entry) throw notFound('Pathway version');
        return {
          set: { graph: entry.graph, graphSavedBy: saver.userId, graphSavedByAdmin: saver.admin },
          note: `promoted from v${version}`,
        };
      });
    },
  };
}

/** A pathway's participants (owner ⊇ editor ⊇ viewer) and the role check. */
function createPathwayParticipants({ repo, calls }: PathwayGroupContext) {
  const { head, participant, requireRole } = calls;
  return {
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
      if (!(await repo.addParticipant(doc))) throw conflict('User is already a participant of this pathway');
      return doc;
    },

    /** Needs role owner on the participant's pathway. */
    async updateParticipant(scope: Scope, participantId: string, role: PathwayRole): Promise<PathwayParticipantDoc> {
      const p = await participant(scope, participantId);
      await requireRole(scope, p.pathwayId, 'owner', 'Managing participants');
      await repo.setParticipantRole(scope.workspaceId, p._id, role);
      return { ...p, role };
    },

    /** Needs role owner; 404 when the user is not a participant. */
    async removeParticipantByUser(scope: Scope, id: string, userId: string): Promise<void> {
      await head(scope, id);
      await requireRole(scope, id, 'owner', 'Managing participants');
      if (!(await repo.removeParticipantByUser(scope.workspaceId, id, userId))) throw notFound('Participant');
    },

    /** Needs role owner on the participant's pathway. */
    async removeParticipant(scope: Scope, participantId: string): Promise<void> {
      const p = await participant(scope, participantId);
      await requireRole(scope, p.pathwayId, 'owner', 'Managing participants');
      if (!(await repo.removeParticipant(scope.workspaceId, p._id))) throw notFound('Participant');
    },

    /** Whether `userId`'s participant role covers `required` (owner ⊇ editor ⊇ viewer); a non-participant has role null. */
    async checkRole(scope: Scope, id: string, userId: string, required: PathwayRole): Promise<RoleCheck> {
      await head(scope, id);
      const role = (await repo.findParticipantByUser(scope.workspaceId, id, userId))?.role ?? null;
      return { userId, role, requiredRole: required, allowed: role !== null && RANK[role] >= RANK[required] };
    },
  };
}

/**
 * Pathways (`/v1/pathways` in the API reference): CRUD with a capped version history on the head record, graph validation against
 * the caller's neurons, compile previews, participants with owner ⊇ editor ⊇ viewer, and the lookup the run engine
 * uses. Every call takes the scope first; another workspace's or brain's pathway is indistinguishable from a missing one.
 */
export function createPathwayService(d: {
  repo: PathwayStore;
  events: ResourceEvents;
  /** Publishes pathway.created, pathway.activity and pathway.removed: the pathway's receptor follows it. */
  bus: Bus;
  /** The outbound guard: an http node's literal URL is checked when the graph is saved (and at each call). */
  guard: Pick<Guard, 'checkSavedAll'>;
  credentials: CredentialLookup;
}) {
  const ctx: PathwayGroupContext = { ...d, calls: createPathwayChecks(d) };
  return { ...createPathwayReads(ctx), ...createPathwayWrites(ctx), ...createPathwayParticipants(ctx) };
}
export type PathwayService = ReturnType<typeof createPathwayService>;
