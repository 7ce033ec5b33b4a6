import type { Collection, Document, Filter, FindOptions } from 'mongodb';
import type { ChunkDoc, ChunkedKind, DocumentDoc, MemoryDoc } from '../db/knowledge.js';
import type { Meeting } from '../db/meetings.js';
import type { StakeholderMap } from '../db/stakeholder-maps.js';
import { decodeBlob } from '../db/codec.js';
import type { Repos } from '../db/index.js';
import type { NeuronDoc } from '../db/neurons.js';
import type { PathwayHead } from '../db/pathways.js';
import type { ActionPlanDoc, ReceptorDoc } from '../db/receptors.js';
import type { ReflexDoc } from '../db/reflexes.js';
import { bytesToVector } from '../embeddings/index.js';
import type { ResourceRef } from '../services/resource-events.js';
import type { IndexEntry, SearchType } from './memory-index.js';
import { findByIds } from '../db/client.js';

/** One resource the index is asked to re-read: its workspace and id. */
export interface ResourceKey {
  workspaceId: string;
  id: string;
}

/**
 * What the index holds for each resource kind (docs/search.md, What is indexed): read from the
 * store, never from an event's payload, so a follower that replays an old event still indexes the
 * current state (or removes a resource that is gone). Reads are in bulk: a batch of changed
 * resources costs one query per collection (or a few key lookups), and the snapshot walk one
 * cursor per collection, never one query per resource.
 */
export interface Source {
  type: SearchType;
  /** The entries (head, then chunks) of each of `keys` that exists in its workspace and is searchable, by resource id; one left out is gone. */
  loadMany(keys: ResourceKey[]): Promise<Map<string, IndexEntry[]>>;
  /** Every resource of the kind, a page of resources at a time (the snapshot walk). */
  all(): AsyncIterable<IndexEntry[][]>;
}

/** The resource-event kinds the index follows, and the searchable type each becomes. */
export const TYPE_OF_KIND: Partial<Record<ResourceRef['kind'], SearchType>> = {
  neuron: 'neurons',
  pathway: 'pathways',
  receptor: 'receptors',
  reflex: 'reflexes',
  action_plan: 'action_plans',
  asset: 'assets',
  artifact: 'artifacts',
  memory: 'memories',
  meeting: 'meetings',
  stakeholder_map: 'stakeholder_maps',
};

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const joinPath = (...parts: string[]) => parts.filter(Boolean).join('/');
/** Resources per page of the snapshot walk. */
const PAGE = 500;

type ChunkRow = Pick<ChunkDoc, '_id' | 'workspaceId' | 'resourceId' | 'version' | 'index' | 'text' | 'embedding'>;
const CHUNK_FIELDS = {
  projection: { _id: 1, workspaceId: 1, resourceId: 1, version: 1, index: 1, text: 1, embedding: 1 },
};
/** Chunks of some resources, by resource id. */
type ChunksOf = (ids: string[]) => Promise<Map<string, ChunkRow[]>>;

/** Chunk entries of a resource's live version (the newest one that has chunks). */
function chunkEntries(head: IndexEntry, chunks: ChunkRow[]): IndexEntry[] {
  const mine = chunks.filter((c) => c.workspaceId === head.workspaceId);
  const live = mine.reduce((m, c) => Math.max(m, c.version), 0);
  return mine
    .filter((c) => c.version === live)
    .sort((a, b) => a.index - b.index)
    .map((c) => ({
      ...head,
      id: c._id,
      chunkIndex: c.index,
      description: '',
      text: c.text,
      vector: c.embedding ? bytesToVector(c.embedding.vector.buffer) : null,
      vectorModel: c.embedding?.model ?? null,
    }));
}

function group<T extends { resourceId: string }>(rows: T[], into = new Map<string, T[]>()): Map<string, T[]> {
  for (const r of rows) {
    const list = into.get(r.resourceId);
    if (list) list.push(r);
    else into.set(r.resourceId, [r]);
  }
  return into;
}

async function* pages<T>(cursor: AsyncIterable<T>): AsyncIterable<T[]> {
  let page: T[] = [];
  for await (const d of cursor) {
    page.push(d);
    if (page.length >= PAGE) {
      yield page;
      page = [];
    }
  }
  if (page.length) yield page;
}

interface KindSpec<D extends { _id: string; workspaceId: string }> {
  type: SearchType;
  coll: Collection<D>;
  /** What the walk reads (and what a re-read must also satisfy, via `keep`). */
  filter?: Filter<D>;
  keep?: (d: D) => boolean;
  options?: FindOptions;
  /** Chunked kinds: the walk reads this kind's chunks in one scan first. */
  chunked?: ChunkedKind;
  /** The entries of each doc (same order); [] for one that is not searchable. */
  entries(docs: D[], chunksOf: ChunksOf): Promise<IndexEntry[][]> | IndexEntry[][];
}

/** A kind its repository reads in domain terms: by ids (any workspace; checked here) and a walk of every resource. */
interface RepoKindSpec<D extends { _id: string; workspaceId: string }> {
  type: SearchType;
  read: { findMany(ids: string[]): Promise<D[]>; walk(pageSize: number): AsyncIterable<D[]> };
  /** The entries of each doc (same order); [] for one that is not searchable. */
  entries(docs: D[]): Promise<IndexEntry[][]> | IndexEntry[][];
}

function repoSource<D extends { _id: string; workspaceId: string }>(spec: RepoKindSpec<D>): Source {
  return {
    type: spec.type,
    async loadMany(keys) {
      const ws = new Map(keys.map((x) => [x.id, x.workspaceId]));
      const docs = (await spec.read.findMany([...ws.keys()])).filter((d) => ws.get(d._id) === d.workspaceId);
      const out = new Map<string, IndexEntry[]>();
      (await spec.entries(docs)).forEach((e, i) => {
        if (e.length) out.set(docs[i]._id, e);
      });
      return out;
    },
    async *all() {
      for await (const docs of spec.read.walk(PAGE)) if (docs.length) yield await spec.entries(docs);
    },
  };
}

export function createSources(repos: Repos): Source[] {
  const k = repos.knowledge;
  /** Chunks of a batch of resources: one query. */
  const chunksByIds: ChunksOf = async (ids) =>
    ids.length ? group(await k.chunks.find({ resourceId: { $in: ids } }, CHUNK_FIELDS).toArray()) : new Map();

  function source<D extends { _id: string; workspaceId: string }>(spec: KindSpec<D>): Source {
    const keep = spec.keep ?? (() => true);
    return {
      type: spec.type,
      async loadMany(keys) {
        const ws = new Map(keys.map((x) => [x.id, x.workspaceId]));
        const docs = ((await findByIds(spec.coll, [...ws.keys()], spec.options)) as D[]).filter(
          (d) => ws.get(d._id) === d.workspaceId && keep(d),
        );
        const out = new Map<string, IndexEntry[]>();
        (await spec.entries(docs, chunksByIds)).forEach((e, i) => {
          if (e.length) out.set(docs[i]._id, e);
        });
        return out;
      },
      async *all() {
        let chunksOf = chunksByIds;
        if (spec.chunked) {
          // One scan of the kind's chunks, grouped by resource, handed out page by page.
          const byResource = new Map<string, ChunkRow[]>();
          for await (const rows of pages(k.chunks.find({ resourceKind: spec.chunked }, CHUNK_FIELDS)))
            group(rows, byResource);
          chunksOf = async (ids) => {
            const out = new Map<string, ChunkRow[]>();
            for (const id of ids) {
              const rows = byResource.get(id);
              if (rows) {
                out.set(id, rows);
                byResource.delete(id);
              }
            }
            return out;
          };
        }
        for await (const docs of pages(spec.coll.find(spec.filter ?? {}, spec.options) as AsyncIterable<D>)) {
          const kept = docs.filter(keep);
          if (kept.length) yield await spec.entries(kept, chunksOf);
        }
      },
    };
  }

  const documentHead = (r: DocumentDoc): IndexEntry => {
    const type: SearchType = r.lane === 'asset' ? 'assets' : 'artifacts';
    const meta = decodeBlob<Record<string, unknown>>(r.metadata, {});
    return {
      id: r._id,
      workspaceId: r.workspaceId,
      brainId: r.brainId,
      type,
      resourceId: r._id,
      title: r.name,
      description: str(meta.description),
      text: '',
      path: r.path,
      url: `/v1/${type}/${r._id}`,
      displayPath: joinPath(type, r.path, r.name),
      updatedAt: r.updatedAt.getTime(),
    };
  };
  const documents = (lane: 'asset' | 'artifact'): Source =>
    source<DocumentDoc>({
      type: lane === 'asset' ? 'assets' : 'artifacts',
      coll: k.documents,
      filter: { lane },
      keep: (r) => r.lane === lane,
      options: { projection: { content: 0 } },
      chunked: lane,
      async entries(docs, chunksOf) {
        const chunks = await chunksOf(docs.map((r) => r._id));
        return docs.map((r) => {
          const head = documentHead(r);
          return [head, ...chunkEntries(head, chunks.get(r._id) ?? [])];
        });
      },
    });

  const memoryHead = (m: MemoryDoc): IndexEntry => {
    const meta = decodeBlob<Record<string, unknown>>(m.metadata, {});
    return {
      id: m._id,
      workspaceId: m.workspaceId,
      brainId: m.brainId,
      type: 'memories',
      resourceId: m._id,
      title: m.name,
      description: m.description ?? '',
      text: m.tags.join(' '),
      path: 'memories',
      ownerType: m.ownerType,
      ownerId: m.ownerId,
      tags: m.tags,
      project: str(meta.project) || null,
      context: str(meta.context) || null,
      url: `/v1/memories/${m._id}`,
      displayPath: joinPath('memories', m.name),
      updatedAt: m.updatedAt.getTime(),
    };
  };

  return [
    source<NeuronDoc>({
      type: 'neurons',
      coll: repos.neurons.neurons,
      filter: { deletedAt: null },
      keep: (n) => n.deletedAt == null,
      entries: (docs) => docs.map((n) => [neuronEntry(n)]),
    }),
    source<PathwayHead>({
      type: 'pathways',
      coll: repos.pathways.pathways as unknown as Collection<PathwayHead>,
      options: { projection: { versions: 0 } },
      entries: (docs) => docs.map((p) => [pathwayEntry(p)]),
    }),
    source<ReceptorDoc>({
      type: 'receptors',
      coll: repos.receptors.receptors,
      entries: (docs) => docs.map((r) => [receptorEntry(r)]),
    }),
    source<ReflexDoc>({
      type: 'reflexes',
      coll: repos.reflexes.reflexes,
      entries: (docs) => docs.map((r) => [reflexEntry(r)]),
    }),
    source<ActionPlanDoc>({ type: 'action_plans', coll: repos.receptors.actionPlans, entries: actionPlanEntries }),
    repoSource<Meeting>({
      type: 'meetings',
      read: repos.meetings,
      entries: (docs) => docs.map((m) => [meetingEntry(m)]),
    }),
    repoSource<StakeholderMap>({
      type: 'stakeholder_maps',
      read: repos.stakeholderMaps,
      entries: stakeholderMapEntries,
    }),
    documents('asset'),
    documents('artifact'),
    source<MemoryDoc>({
      type: 'memories',
      coll: k.memories,
      chunked: 'memory',
      async entries(docs, chunksOf) {
        const chunks = await chunksOf(docs.map((m) => m._id));
        return docs.map((m) => {
          const head = memoryHead(m);
          return [head, ...chunkEntries(head, chunks.get(m._id) ?? [])];
        });
      },
    }),
  ];

  /** A map is found by its name, description, summary and the names of its stakeholders (the first 2,000). */
  async function stakeholderMapEntries(maps: StakeholderMap[]): Promise<IndexEntry[][]> {
    const people = maps.length
      ? group(
          (await repos.stakeholderMaps.stakeholderNames(maps.map((m) => m._id))).map((p) => ({
            ...p,
            resourceId: p.mapId,
          })),
        )
      : new Map<string, { name: string; workspaceId: string }[]>();
    return maps.map((m) => [
      {
        id: m._id,
        workspaceId: m.workspaceId,
        brainId: m.brainId,
        type: 'stakeholder_maps',
        resourceId: m._id,
        title: m.name,
        description: [m.description, m.summary].filter(Boolean).join(' — '),
        text: (people.get(m._id) ?? [])
          .filter((p) => p.workspaceId === m.workspaceId)
          .slice(0, 2000)
          .map((p) => p.name)
          .join(', '),
        path: '',
        url: `/v1/resources/stakeholder_maps/${m._id}`,
        displayPath: joinPath('stakeholder_maps', m.name),
        updatedAt: m.updatedAt.getTime(),
      },
    ]);
  }

  async function actionPlanEntries(plans: ActionPlanDoc[]): Promise<IndexEntry[][]> {
    const [pathways, receptors] = await Promise.all([
      byId(
        repos.pathways.pathways as unknown as Collection<PathwayHead>,
        plans.map((p) => p.pathwayId),
        { projection: { _id: 1, workspaceId: 1, name: 1 } },
      ),
      byId(
        repos.receptors.receptors,
        plans.map((p) => p.receptorId),
        { projection: { _id: 1, workspaceId: 1, slug: 1 } },
      ),
    ]);
    return plans.map((p) => {
      const pw = pathways.get(p.pathwayId);
      const pathway = pw?.workspaceId === p.workspaceId ? pw : undefined;
      const rc = receptors.get(p.receptorId);
      const receptor = rc?.workspaceId === p.workspaceId ? rc : undefined;
      const input = decodeBlob<unknown>(p.input, null);
      const title = `${pathway?.name ?? 'pathway'} (${p.status})`;
      return [
        {
          id: p._id,
          workspaceId: p.workspaceId,
          brainId: p.brainId,
          type: 'action_plans',
          resourceId: p._id,
          title,
          description: `Action plan ${p.status} by receptor ${receptor?.slug ?? p.receptorId} for pathway ${pathway?.name ?? p.pathwayId}`,
          text: input == null ? '' : JSON.stringify(input).slice(0, 4000),
          path: '',
          isActive: p.status === 'proposed',
          url: `/v1/jobs/${p.jobId}`,
          displayPath: joinPath('action_plans', p._id),
          updatedAt: p.updatedAt.getTime(),
        },
      ];
    });
  }
}

async function byId<D extends Document & { _id: string }>(
  coll: Collection<D>,
  ids: string[],
  options: FindOptions,
): Promise<Map<string, D>> {
  return new Map(((await findByIds(coll, ids, options)) as D[]).map((d) => [d._id, d]));
}

function neuronEntry(n: NeuronDoc): IndexEntry {
  const cfg = decodeBlob<Record<string, unknown>>(n.config, {});
  return {
    id: n._id,
    workspaceId: n.workspaceId,
    brainId: n.brainId,
    type: 'neurons',
    resourceId: n._id,
    // A core neuron's system prompt is redacted for most readers: it is not searchable either.
    title: n.name,
    description: n.description,
    text: n.scope === 'core' ? '' : str(cfg.system_prompt),
    path: '',
    isActive: n.isActive,
    visibility: n.scope,
    url: `/v1/neurons/${n._id}`,
    displayPath: joinPath('neurons', n.name),
    updatedAt: n.updatedAt.getTime(),
  };
}

/** A meeting's searchable text: summary, agenda, notes, decisions, action items, then the transcript (first 20,000 characters). */
function meetingEntry(m: Meeting): IndexEntry {
  const body = m.body;
  const flat = (v: unknown): string =>
    typeof v === 'string'
      ? v
      : Array.isArray(v)
        ? v.map(flat).join('\n')
        : v && typeof v === 'object'
          ? Object.values(v).map(flat).join(' ')
          : '';
  const transcript = Array.isArray(body.transcript_segments)
    ? (body.transcript_segments as { text?: unknown }[]).map((x) => str(x?.text)).join(' ')
    : '';
  const text = [
    flat(body.summary),
    flat(body.agenda),
    flat(body.notes),
    flat(body.decisions),
    flat(body.action_items),
    transcript,
  ]
    .filter(Boolean)
    .join('\n')
    .slice(0, 20_000);
  return {
    id: m._id,
    workspaceId: m.workspaceId,
    brainId: m.brainId,
    type: 'meetings',
    resourceId: m._id,
    title: m.title,
    description: m.description,
    text,
    path: '',
    url: `/v1/meetings/${m._id}`,
    displayPath: joinPath('meetings', m.title),
    updatedAt: m.updatedAt.getTime(),
  };
}

function pathwayEntry(p: PathwayHead): IndexEntry {
  return {
    id: p._id,
    workspaceId: p.workspaceId,
    brainId: p.brainId,
    type: 'pathways',
    resourceId: p._id,
    title: p.name,
    description: p.description,
    text: '',
    path: '',
    isActive: p.isActive,
    url: `/v1/pathways/${p._id}`,
    displayPath: joinPath('pathways', p.name),
    updatedAt: p.updatedAt.getTime(),
  };
}

function receptorEntry(r: ReceptorDoc): IndexEntry {
  const cfg = decodeBlob<Record<string, unknown>>(r.config, {});
  return {
    id: r._id,
    workspaceId: r.workspaceId,
    brainId: r.brainId,
    type: 'receptors',
    resourceId: r._id,
    title: r.slug,
    description: str(cfg.description) || str(cfg.name),
    text: [r.executableTarget.kind, ...(r.stimulusKeys ?? []), ...r.activeChannels].join(' '),
    path: '',
    isActive: r.isActive,
    visibility: r.scope,
    url: `/v1/resources/receptors/${r._id}`,
    displayPath: joinPath('receptors', r.slug),
    updatedAt: r.updatedAt.getTime(),
  };
}

function reflexEntry(r: ReflexDoc): IndexEntry {
  return {
    id: r._id,
    workspaceId: r.workspaceId,
    brainId: r.brainId,
    type: 'reflexes',
    resourceId: r._id,
    title: r.name,
    description: r.description,
    text: [r.type, ...r.tools.flatMap((t) => t.tools ?? [])].join(' '),
    path: '',
    isActive: r.isActive,
    visibility: r.scope,
    url: `/v1/reflexes/${r._id}`,
    displayPath: joinPath('reflexes', r.name),
    updatedAt: r.updatedAt.getTime(),
  };
}
