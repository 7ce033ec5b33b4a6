import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import { claim, claimNext, isDuplicateKey, newest } from '../db/claims.js';
import { decodeBlob, encodeBlob } from '../db/codec.js';
import type {
  StakeholderMapDoc,
  StakeholderMapRepo,
  StakeholderRevisionDoc,
  StakeholderVersionDoc,
} from '../db/stakeholder-maps.js';
import type { WorkspaceRepo } from '../db/workspaces.js';
import { conflict, notFound, validationError } from '../errors.js';
import type { ModelRegistry } from '../llm/registry.js';
import type {
  Changes,
  DiffQuery,
  ExtractBody,
  GraphLimits,
  Interaction,
  MapCreateBody,
  PatchBody,
  StakeholderOp,
  VersionRef,
} from '../schemas/stakeholder-maps.js';
import { systemScope, type Scope } from '../scope.js';
import { briefingOf, diffGraphs } from '../stakeholders/analysis.js';
import { compileDsl } from '../stakeholders/dsl.js';
import {
  answerToOps,
  extractionMessages,
  extractionSchema,
  MAX_TRANSCRIPT_CHARS,
  parseAnswer,
} from '../stakeholders/extraction.js';
import { applyOps, countsOf, emptyGraph, viewOf, type Graph } from '../stakeholders/graph.js';
import type { StakeholderExtractInput } from '../temporal/definitions.js';
import type { JobService } from './jobs.js';
import type { ResourceEvents } from './resource-events.js';
import { uuidFromName } from '../ids.js';
import type { UsageService } from './usage.js';
import { findById } from '../db/client.js';
import { page } from '../db/paging.js';

/** The offline local/* models answer with fixed text: they can never produce an extraction. */
const canExtract = (modelId: string) => !modelId.startsWith('local/');

/** Live-graph revisions kept per map (older ones are pruned; saved versions are kept for good). */
export const REVISIONS_KEPT = 10;
/** JSON characters of decoded graph bodies each process keeps in memory (a full map is ~2 MB). */
export const GRAPH_CACHE_CHARS = 24_000_000;

/**
 * What the meetings family provides to the extraction step (docs/stakeholder-maps.md, Meeting
 * hook): a finalized meeting's transcript, read by id in the caller's workspace.
 */
export interface MeetingTranscriptSource {
  transcript(
    workspaceId: string,
    meetingId: string,
  ): Promise<{ brainId: string; title: string; text: string; finalizedAt: Date | null } | null>;
}

/**
 * Stakeholder maps (docs/stakeholder-maps.md): map heads are resources of kind
 * stakeholder_map in a brain; each has a live graph (claimed revisions, src/db/stakeholder-maps.ts)
 * changed only through patch ops (JSON, the DSL, or a meeting extraction's answer), numbered saved
 * versions, diffs between any two states, and per-stakeholder briefings computed from the graph.
 */
export function createStakeholderMapService(d: {
  repo: StakeholderMapRepo;
  workspaces: WorkspaceRepo;
  jobs: JobService;
  usage: UsageService;
  models: ModelRegistry;
  events: ResourceEvents;
  config: Config;
  /** Bound late: the meetings family's transcript reader (null until meetings are mounted). */
  meetings?: () => MeetingTranscriptSource | null;
}) {
  const { repo } = d;
  const by = (scope: Scope) => scope.userId ?? scope.apiKeyId;
  const ref = (m: StakeholderMapDoc) => ({
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
  async function get(scope: Scope, id: string): Promise<StakeholderMapDoc> {
    const m = await findById(repo.maps, id.toLowerCase(), { workspaceId: scope.workspaceId });
    if (!m || (scope.brainId && m.brainId !== scope.brainId)) throw notFound('Stakeholder map');
    return m;
  }

  /** The brain's default map, created on first use (one creation event, by the claim's winner). */
  async function ensureDefault(scope: Scope, brainId?: string): Promise<StakeholderMapDoc> {
    const brain = await brainOf(scope, brainId);
    const id = defaultIdOf(scope.workspaceId, brain);
    const found = await findById(repo.maps, id, { workspaceId: scope.workspaceId });
    if (found) return found;
    const now = new Date();
    const doc: StakeholderMapDoc = {
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
    if (await claim(repo.maps, doc)) await d.events.emit(scope.workspaceId, 'created', ref(doc));
    return (await findById(repo.maps, id, { workspaceId: scope.workspaceId }))!;
  }

  /** The map a request names (resource_id), else the brain's default map. */
  const resolve = (scope: Scope, resourceId?: string) => (resourceId ? get(scope, resourceId) : ensureDefault(scope));

  /**
   * Graph bodies are immutable, so each process keeps the newest ones it read or wrote, decoded
   * (up to GRAPH_CACHE_CHARS of their JSON): a live read is then a small record lookup.
   */
  const cache = new Map<string, { graph: Graph; size: number }>();
  let cached = 0;
  const remember = (id: string, graph: Graph, size: number) => {
    if (size > GRAPH_CACHE_CHARS) return;
    cache.delete(id);
    cache.set(id, { graph, size });
    cached += size;
    for (const [k, v] of cache) {
      if (cached <= GRAPH_CACHE_CHARS) break;
      cache.delete(k);
      cached -= v.size;
    }
  };
  const forget = (id: string) => {
    const hit = cache.get(id);
    if (hit) {
      cache.delete(id);
      cached -= hit.size;
    }
  };
  async function loadGraph(id: string): Promise<Graph> {
    const hit = cache.get(id);
    if (hit) return hit.graph;
    const doc = await repo.graphs.findOne({ _id: id });
    if (!doc) throw new Error(`stakeholder graph body ${id} is missing`);
    const graph = decodeBlob<Graph>(doc.graph, emptyGraph());
    remember(id, graph, doc.graph.length);
    return graph;
  }
  async function storeGraph(m: StakeholderMapDoc, graph: Graph, at: Date): Promise<string> {
    const id = randomUUID();
    const body = encodeBlob(graph);
    await repo.graphs.insertOne({ _id: id, mapId: m._id, workspaceId: m.workspaceId, graph: body, createdAt: at });
    remember(id, graph, body.length);
    return id;
  }

  async function live(m: StakeholderMapDoc): Promise<{ graph: Graph; revision: number; at: Date }> {
    const r = await newest(repo.revisions, { mapId: m._id }, 'revision');
    return r
      ? { graph: await loadGraph(r.graphId), revision: r.revision, at: r.createdAt }
      : { graph: emptyGraph(), revision: 0, at: m.createdAt };
  }

  async function versionOf(m: StakeholderMapDoc, n: number): Promise<StakeholderVersionDoc> {
    const v = await repo.versions.findOne({ mapId: m._id, version: n });
    if (!v) throw notFound(`Version ${n} of stakeholder map`);
    return v;
  }

  async function graphAt(m: StakeholderMapDoc, at: VersionRef): Promise<{ graph: Graph; revision: number }> {
    if (at === 'live') return live(m);
    const v = await versionOf(m, at);
    return { graph: await loadGraph(v.graphId), revision: v.revision };
  }

  /**
   * Applies ops as the next revision of the live graph: the new body is stored, then the
   * revision number is claimed by unique insert (src/db/claims.ts); a writer that loses the claim
   * drops its body and re-applies its ops to the newer graph. `opKey` makes a retried change (an
   * extraction job) apply once; `baseRevision` refuses a stale writer with 409.
   */
  async function commit(
    m: StakeholderMapDoc,
    ops: StakeholderOp[],
    o: { by: string | null; source: Interaction['source']; opKey?: string; baseRevision?: number },
  ) {
    const applied = async () => (o.opKey ? repo.revisions.findOne({ mapId: m._id, opKey: o.opKey }) : null);
    const done = await applied();
    if (done) return settle(m, done, null);
    for (let tries = 0; tries < 100; tries++) {
      const prev = await newest(repo.revisions, { mapId: m._id }, 'revision');
      const revision = (prev?.revision ?? 0) + 1;
      if (o.baseRevision !== undefined && o.baseRevision !== revision - 1)
        throw conflict(`the live graph is at revision ${revision - 1}, not ${o.baseRevision}`);
      const now = new Date();
      const out = applyOps(prev ? await loadGraph(prev.graphId) : emptyGraph(), ops, {
        now: now.toISOString(),
        newId: randomUUID,
        source: o.source,
      });
      const graphId = await storeGraph(m, out.graph, now);
      const doc: StakeholderRevisionDoc = {
        _id: `${m._id}:${revision}`,
        mapId: m._id,
        workspaceId: m.workspaceId,
        revision,
        graphId,
        counts: countsOf(out.graph),
        opKey: o.opKey ?? null,
        createdBy: o.by,
        createdAt: now,
      };
      if (await claim(repo.revisions, doc)) return settle(m, doc, out);
      await repo.graphs.deleteOne({ _id: graphId });
      forget(graphId);
      const meanwhile = await applied();
      if (meanwhile) return settle(m, meanwhile, null);
    }
    throw new Error('could not claim the next stakeholder map revision after 100 tries');
  }

  /** After a claimed revision: the head, where each stakeholder lives, pruning, and the event. */
  async function settle(
    m: StakeholderMapDoc,
    rev: StakeholderRevisionDoc,
    own: { graph: Graph; changes: Changes } | null,
  ) {
    const g = own?.graph ?? (await loadGraph(rev.graphId));
    await repo.updateHead(
      { _id: m._id, workspaceId: m.workspaceId, revision: { $lt: rev.revision } },
      {
        revision: rev.revision,
        counts: countsOf(g),
        summary: g.summary.slice(0, 2000),
        updatedAt: rev.createdAt,
      },
    );
    const touched = own ? new Set([...own.changes.added.stakeholders, ...own.changes.updated.stakeholders]) : null;
    await indexStakeholders(
      m,
      g.stakeholders.filter((s) => !touched || touched.has(s.id)),
    );
    const old = await repo.revisions
      .find({ mapId: m._id, revision: { $lte: rev.revision - REVISIONS_KEPT } }, { projection: { graphId: 1 } })
      .toArray();
    // One by id (usually one per patch): FerretDB finds a document by _id without reading the others.
    for (const r of old) {
      forget(r.graphId);
      await repo.graphs.deleteOne({ _id: r.graphId });
      await repo.revisions.deleteOne({ _id: r._id });
    }
    await d.events.emit(m.workspaceId, 'updated', ref(m));
    const none = { stakeholders: [], interactions: [], edges: [], risks: [] };
    return {
      revision: rev.revision,
      changes: own?.changes ?? { added: none, updated: none, removed: none, summary_changed: false },
      graph: g,
    };
  }

  /** Where each stakeholder lives (idempotent upserts; two writers racing to insert one id: the second becomes an update). */
  async function indexStakeholders(m: StakeholderMapDoc, list: Graph['stakeholders']) {
    if (!list.length) return;
    const write = () =>
      repo.index.bulkWrite(
        list.map((s) => ({
          updateOne: {
            filter: { _id: s.id },
            update: { $set: { workspaceId: m.workspaceId, brainId: m.brainId, mapId: m._id, name: s.name } },
            upsert: true,
          },
        })),
        { ordered: false },
      );
    try {
      await write();
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      await write();
    }
  }

  /** Records the live graph (as it is now) as the map's next version number. */
  async function saveVersion(
    scope: Scope,
    m: StakeholderMapDoc,
    label: string | undefined,
  ): Promise<StakeholderVersionDoc> {
    const cur = await live(m);
    // The version keeps a body of its own: live bodies are pruned with their revisions.
    const graphId = await storeGraph(m, cur.graph, new Date());
    const v = (await claimNext(repo.versions, { mapId: m._id }, 'version', (prev) => ({
      _id: randomUUID(),
      mapId: m._id,
      workspaceId: m.workspaceId,
      brainId: m.brainId,
      version: (prev?.version ?? 0) + 1,
      label: label ?? null,
      revision: cur.revision,
      graphId,
      counts: countsOf(cur.graph),
      createdBy: by(scope),
      createdAt: new Date(),
    })))!;
    await repo.updateHead(
      { _id: m._id, workspaceId: m.workspaceId, latestVersion: { $lt: v.version } },
      { latestVersion: v.version, updatedAt: v.createdAt },
    );
    await d.events.emit(m.workspaceId, 'updated', { ...ref(m), version: v.version });
    return v;
  }

  const reread = async (m: StakeholderMapDoc) => (await findById(repo.maps, m._id, { workspaceId: m.workspaceId }))!;

  /** Stores an extraction's input and starts its job (the job id is the workflow id). */
  async function startExtraction(
    scope: Scope,
    m: StakeholderMapDoc,
    x: {
      jobId: string;
      model: string;
      text: string;
      source: { type: 'text' | 'meeting'; id: string | null };
      occurredAt: Date;
    },
  ) {
    const text = x.text.slice(0, MAX_TRANSCRIPT_CHARS);
    await repo.extractions.updateOne(
      { _id: x.jobId },
      {
        $setOnInsert: {
          workspaceId: m.workspaceId,
          brainId: m.brainId,
          mapId: m._id,
          model: x.model,
          source: x.source,
          text,
          truncated: x.text.length > text.length,
          occurredAt: x.occurredAt,
          userId: scope.userId,
          apiKeyId: scope.apiKeyId,
          ops: null,
          appliedRevision: null,
          createdAt: new Date(),
        },
      },
      { upsert: true },
    );
    const { job } = await d.jobs.create(scope, { id: x.jobId, kind: 'stakeholder_extract', brainId: m.brainId });
    const input: StakeholderExtractInput = {
      jobId: x.jobId,
      workspaceId: m.workspaceId,
      brainId: m.brainId,
      mapId: m._id,
    };
    await d.jobs.startWorkflow(
      job,
      'stakeholderExtract',
      [input],
      `stakeholder extraction into ${m.name} (${x.source.type}${x.source.id ? ` ${x.source.id}` : ''})`,
    );
    return { job_id: x.jobId, resource_id: m._id, status: job.status };
  }

  const loadExtraction = async (i: StakeholderExtractInput) => {
    const x = await findById(repo.extractions, i.jobId, { workspaceId: i.workspaceId });
    if (!x) throw notFound('Extraction');
    return x;
  };

  return {
    get,
    ensureDefault,
    resolve,
    defaultIdOf,
    async live(scope: Scope, resourceId: string | undefined) {
      const m = await resolve(scope, resourceId);
      return { map: m, ...(await live(m)) };
    },
    async list(scope: Scope, q: { brain_id?: string; limit: number; offset: number; cursor?: string }) {
      const brain = q.brain_id ?? scope.brainId;
      const filter = { workspaceId: scope.workspaceId, ...(brain ? { brainId: brain } : {}) };
      return page(repo.maps, filter, { field: 'createdAt', dir: -1 }, q);
    },
    async create(scope: Scope, body: MapCreateBody): Promise<StakeholderMapDoc> {
      const brainId = await brainOf(scope, body.brain_id);
      const now = new Date();
      const doc: StakeholderMapDoc = {
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
        createdBy: by(scope),
        createdAt: now,
        updatedAt: now,
      };
      await repo.maps.insertOne(doc);
      await d.events.emit(scope.workspaceId, 'created', ref(doc));
      return doc;
    },

    /** The patch route: ops or DSL applied to the live graph; patch_mode stakeholder_map_record_version then records a version. */
    async patch(scope: Scope, id: string, body: PatchBody) {
      const ops = body.dsl !== undefined ? compileDsl(body.dsl) : body.ops;
      const m = await get(scope, id);
      const applied = ops
        ? await commit(m, ops, {
            by: by(scope),
            source: { type: 'manual', id: null },
            baseRevision: body.base_revision,
          })
        : null;
      if (!applied && body.base_revision !== undefined && (await live(m)).revision !== body.base_revision)
        throw conflict(`the live graph is not at revision ${body.base_revision}`);
      const version =
        body.patch_mode === 'stakeholder_map_record_version' ? await saveVersion(scope, m, body.label) : null;
      const head = await reread(m);
      return { map: head, revision: applied?.revision ?? head.revision, changes: applied?.changes ?? null, version };
    },

    async saveVersion(scope: Scope, resourceId: string | undefined, label: string | undefined) {
      return saveVersion(scope, await resolve(scope, resourceId), label);
    },
    async versions(
      scope: Scope,
      resourceId: string | undefined,
      q: { limit: number; offset: number; cursor?: string },
    ) {
      const m = await resolve(scope, resourceId);
      const p = await page(
        repo.versions,
        { workspaceId: scope.workspaceId, mapId: m._id },
        { field: 'version', dir: -1 },
        q,
      );
      return { map: m, ...p, items: p.items as StakeholderVersionDoc[] };
    },
    async version(scope: Scope, resourceId: string, n: number) {
      const m = await get(scope, resourceId);
      const v = await versionOf(m, n);
      return { version: v, graph: await loadGraph(v.graphId) };
    },
    /** A saved version by its id, or by its number on the brain's default map. */
    async versionByKey(scope: Scope, key: string) {
      if (/^\d+$/.test(key)) {
        const m = await ensureDefault(scope);
        const v = await versionOf(m, Number(key));
        return { version: v, graph: await loadGraph(v.graphId) };
      }
      const v = await findById(repo.versions, key.toLowerCase(), { workspaceId: scope.workspaceId });
      if (!v || (scope.brainId && v.brainId !== scope.brainId)) throw notFound('Stakeholder map version');
      return { version: v, graph: await loadGraph(v.graphId) };
    },

    async diff(scope: Scope, q: DiffQuery) {
      const m = await resolve(scope, q.resource_id);
      const [a, b] = await Promise.all([graphAt(m, q.from), graphAt(m, q.to)]);
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
      const at = await findById(repo.index, stakeholderId.toLowerCase(), { workspaceId: scope.workspaceId });
      if (!at || (scope.brainId && at.brainId !== scope.brainId)) throw notFound('Stakeholder');
      const m = await get({ ...scope, brainId: undefined }, at.mapId).catch(() => null);
      if (!m) throw notFound('Stakeholder');
      const cur = await live(m);
      const b = briefingOf(cur.graph, at._id, new Date(), interactionLimit);
      if (!b) throw notFound('Stakeholder');
      return { resource_id: m._id, brain_id: m.brainId, revision: cur.revision, ...b };
    },

    /** POST /v1/stakeholder-map/extract: a transcript (text, or a meeting's) into a map, as a job. */
    async extract(scope: Scope, body: ExtractBody) {
      // An unknown model, or one that cannot answer with schema-shaped JSON, is a 400 now, not a failed job later.
      const model = d.models.resolve(body.model ?? d.config.DEFAULT_MODEL).id;
      if (!canExtract(model))
        throw validationError(
          `model: ${model} cannot answer with structured JSON; name an openai/… or anthropic/… model (or set DEFAULT_MODEL)`,
        );
      let text = body.text;
      let occurredAt = new Date();
      let brainId: string | undefined;
      if (body.meeting_id) {
        const src = d.meetings?.() ?? null;
        const t = src ? await src.transcript(scope.workspaceId, body.meeting_id.toLowerCase()) : null;
        if (!t || (scope.brainId && t.brainId !== scope.brainId)) throw notFound('Meeting');
        if (text === undefined) {
          if (!t.finalizedAt) throw conflict('The meeting transcript is not finalized yet');
          text = t.text;
        }
        occurredAt = t.finalizedAt ?? occurredAt;
        brainId = t.brainId;
      }
      if (!text?.trim()) throw validationError('text: the transcript is empty');
      const m = body.resource_id ? await get(scope, body.resource_id) : await ensureDefault(scope, brainId);
      return startExtraction(scope, m, {
        jobId: randomUUID(),
        model,
        text,
        source: body.meeting_id ? { type: 'meeting', id: body.meeting_id.toLowerCase() } : { type: 'text', id: null },
        occurredAt,
      });
    },

    /**
     * The meeting hook (docs/stakeholder-maps.md): the meetings family calls this when a meeting's
     * transcript is finalized. One extraction per meeting and finalization (a name-derived job id),
     * into the default map of the meeting's brain, with DEFAULT_MODEL.
     */
    async extractFromMeeting(
      workspaceId: string,
      meeting: { id: string; brainId: string; text: string; finalizedAt: Date },
    ) {
      const model = d.models.resolve(d.config.DEFAULT_MODEL).id;
      // Nothing to do without a model that can answer (a fresh machine on local/echo): no job that can only fail.
      if (!canExtract(model) || !meeting.text.trim()) return null;
      const scope = systemScope(workspaceId, meeting.brainId);
      const m = await ensureDefault(scope, meeting.brainId);
      const jobId = uuidFromName(
        `stakeholder-extract:${workspaceId}:${meeting.id}:${meeting.finalizedAt.toISOString()}`,
      );
      return startExtraction(scope, m, {
        jobId,
        model,
        text: meeting.text,
        source: { type: 'meeting', id: meeting.id },
        occurredAt: meeting.finalizedAt,
      });
    },

    /** Activity step 1: ask the model (structured JSON), check the answer, store it as ops. Idempotent: stored ops are reused. */
    async extractPlan(i: StakeholderExtractInput, attempt: number): Promise<{ ops: number }> {
      const x = await loadExtraction(i);
      if (x.ops) return { ops: decodeBlob<StakeholderOp[]>(x.ops, []).length };
      await d.jobs.transition(i.workspaceId, i.jobId, {
        status: 'running',
        progress: 10,
        currentStep: 'asking the model',
      });
      const m = await findById(repo.maps, i.mapId, { workspaceId: i.workspaceId });
      if (!m) throw notFound('Stakeholder map');
      const model = d.models.resolve(x.model);
      const res = await model.provider.chat({
        model: model.model,
        messages: extractionMessages((await live(m)).graph, x.text),
        responseFormat: 'json',
        jsonSchema: { name: 'stakeholder_map_extraction', schema: extractionSchema() },
        temperature: 0,
        maxTokens: 4000,
      });
      await d.usage.record({
        key: `${i.jobId}:extract:${attempt}`,
        workspaceId: i.workspaceId,
        kind: 'chat',
        modelId: model.id,
        usage: res.usage,
        attribution: {
          brainId: i.brainId,
          userId: x.userId,
          apiKeyId: x.apiKeyId,
          jobId: i.jobId,
          traceId: null,
          receptorId: null,
          neuronId: null,
          pathwayId: null,
        },
      });
      const ops = answerToOps(parseAnswer(res.text), x.occurredAt.toISOString());
      await repo.extractions.updateOne({ _id: x._id, ops: null }, { $set: { ops: encodeBlob(ops) } });
      await d.jobs.transition(i.workspaceId, i.jobId, {
        status: 'running',
        progress: 70,
        currentStep: `applying ${ops.length} changes`,
      });
      return { ops: ops.length };
    },

    /** Activity step 2: the stored ops become one revision of the live graph (once, by the job's key); the job completes. */
    async extractApply(i: StakeholderExtractInput): Promise<Record<string, unknown>> {
      const x = await loadExtraction(i);
      const ops = decodeBlob<StakeholderOp[]>(x.ops, []);
      const m = await findById(repo.maps, i.mapId, { workspaceId: i.workspaceId });
      if (!m) throw notFound('Stakeholder map');
      const applied = ops.length
        ? await commit(m, ops, { by: x.userId ?? x.apiKeyId, source: x.source, opKey: `extract:${i.jobId}` })
        : null;
      const revision = applied?.revision ?? (await live(m)).revision;
      await repo.extractions.updateOne({ _id: x._id }, { $set: { appliedRevision: revision } });
      const result = {
        resource_id: m._id,
        revision,
        source: x.source,
        model: x.model,
        transcript_truncated: x.truncated,
        op_count: ops.length,
        changes: applied?.changes ?? null,
      };
      await d.jobs.finalize(i.workspaceId, i.jobId, {
        status: 'completed',
        progress: 100,
        currentStep: 'completed',
        result,
      });
      return result;
    },

    async extractFail(i: StakeholderExtractInput, reason: string): Promise<void> {
      await d.jobs.finalize(i.workspaceId, i.jobId, { status: 'failed', failedReason: reason, currentStep: 'failed' });
    },

    /** Reads for followers of the resource event stream (search, browse): a head and its live graph. */
    async readForIndex(workspaceId: string, id: string) {
      const m = await findById(repo.maps, id, { workspaceId });
      return m ? { map: m, ...(await live(m)) } : null;
    },
    viewOf: (g: Graph, limits: GraphLimits) => viewOf(g, limits),
  };
}
export type StakeholderMapService = ReturnType<typeof createStakeholderMapService>;
