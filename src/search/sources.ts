import type { KnowledgeDocument, MemoryRecord as Memory } from '../knowledge/index.js';
import type { PathwayHead } from '../pathways/index.js';
import type { ReflexDoc } from '../reflexes/index.js';
import type {
  ActionPlanRecord,
  ChunkedRecord,
  MeetingRecord,
  NeuronRecord,
  ReceptorRecord,
  ResourceKey,
  SearchChunk,
  SearchReader,
  SearchSources,
  StakeholderMapRecord,
} from './store.js';
import type { ResourceRef } from '../platform/index.js';
import type { IndexEntry, SearchType } from './memory-index.js';

export type { ResourceKey } from './store.js';

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

/** Chunk entries of a resource's live version (the newest one that has chunks). */
function chunkEntries(head: IndexEntry, chunks: SearchChunk[]): IndexEntry[] {
  const live = chunks.reduce((m, c) => Math.max(m, c.version), 0);
  return chunks
    .filter((c) => c.version === live)
    .sort((a, b) => a.index - b.index)
    .map((c) => ({
      ...head,
      id: c.id,
      chunkIndex: c.index,
      description: '',
      text: c.text,
      vector: c.vector,
      vectorModel: c.vectorModel,
    }));
}

/** A source of `type` over a reader of records, each record's entries built by `entries`. */
function source<R>(type: SearchType, reader: SearchReader<R>, entries: (r: R) => IndexEntry[]): Source {
  return {
    type,
    async loadMany(keys) {
      const out = new Map<string, IndexEntry[]>();
      for (const [id, r] of await reader.loadMany(keys)) {
        const e = entries(r);
        if (e.length) out.set(id, e);
      }
      return out;
    },
    async *all() {
      for await (const page of reader.all()) yield page.map(entries);
    },
  };
}

const withChunks =
  <T>(head: (d: T) => IndexEntry) =>
  (r: ChunkedRecord<T>): IndexEntry[] => {
    const h = head(r.doc);
    return [h, ...chunkEntries(h, r.chunks)];
  };

export function createSources(reads: SearchSources): Source[] {
  return [
    source('neurons', reads.neurons, (n) => [neuronEntry(n)]),
    source('pathways', reads.pathways, (p) => [pathwayEntry(p)]),
    source('receptors', reads.receptors, (r) => [receptorEntry(r)]),
    source('reflexes', reads.reflexes, (r) => [reflexEntry(r)]),
    source('action_plans', reads.actionPlans, (p) => [actionPlanEntry(p)]),
    source('meetings', reads.meetings, (m) => [meetingEntry(m)]),
    source('stakeholder_maps', reads.stakeholderMaps, (m) => [stakeholderMapEntry(m)]),
    source('assets', reads.assets, withChunks(documentHead)),
    source('artifacts', reads.artifacts, withChunks(documentHead)),
    source('memories', reads.memories, withChunks(memoryHead)),
  ];
}

function documentHead(r: KnowledgeDocument): IndexEntry {
  const type: SearchType = r.lane === 'asset' ? 'assets' : 'artifacts';
  return {
    id: r._id,
    workspaceId: r.workspaceId,
    brainId: r.brainId,
    type,
    resourceId: r._id,
    title: r.name,
    description: str(r.metadata.description),
    text: '',
    path: r.path,
    url: `/v1/${type}/${r._id}`,
    displayPath: joinPath(type, r.path, r.name),
    updatedAt: r.updatedAt.getTime(),
  };
}

function memoryHead(m: Memory): IndexEntry {
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
    project: str(m.metadata.project) || null,
    context: str(m.metadata.context) || null,
    url: `/v1/memories/${m._id}`,
    displayPath: joinPath('memories', m.name),
    updatedAt: m.updatedAt.getTime(),
  };
}

/** A map is found by its name, description, summary and the names of its stakeholders (the first 2,000). */
function stakeholderMapEntry({ map: m, people }: StakeholderMapRecord): IndexEntry {
  return {
    id: m._id,
    workspaceId: m.workspaceId,
    brainId: m.brainId,
    type: 'stakeholder_maps',
    resourceId: m._id,
    title: m.name,
    description: [m.description, m.summary].filter(Boolean).join(' — '),
    text: people.slice(0, 2000).join(', '),
    path: '',
    url: `/v1/resources/stakeholder_maps/${m._id}`,
    displayPath: joinPath('stakeholder_maps', m.name),
    updatedAt: m.updatedAt.getTime(),
  };
}

function actionPlanEntry({ plan: p, pathwayName, receptorSlug }: ActionPlanRecord): IndexEntry {
  const title = `${pathwayName ?? 'pathway'} (${p.status})`;
  return {
    id: p._id,
    workspaceId: p.workspaceId,
    brainId: p.brainId,
    type: 'action_plans',
    resourceId: p._id,
    title,
    description: `Action plan ${p.status} by receptor ${receptorSlug ?? p.receptorId} for pathway ${pathwayName ?? p.pathwayId}`,
    text: p.input == null ? '' : JSON.stringify(p.input).slice(0, 4000),
    path: '',
    isActive: p.status === 'proposed',
    url: `/v1/jobs/${p.jobId}`,
    displayPath: joinPath('action_plans', p._id),
    updatedAt: p.updatedAt.getTime(),
  };
}

function neuronEntry(n: NeuronRecord): IndexEntry {
  const cfg = n.config;
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
function meetingEntry(m: MeetingRecord): IndexEntry {
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

function receptorEntry(r: ReceptorRecord): IndexEntry {
  const cfg = r.config;
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
