import type { ChunkDoc, DocumentDoc, MemoryDoc } from '../db/knowledge.js';
import type { MeetingDoc } from '../db/meetings.js';
import type { StakeholderMapDoc } from '../db/stakeholder-maps.js';
import { decodeBlob } from '../db/codec.js';
import type { Repos } from '../db/index.js';
import type { NeuronDoc } from '../db/neurons.js';
import type { PathwayHead } from '../db/pathways.js';
import type { ActionPlanDoc, ReceptorDoc } from '../db/receptors.js';
import type { ReflexDoc } from '../db/reflexes.js';
import { bytesToVector } from '../embeddings/index.js';
import type { ResourceRef } from '../services/resource-events.js';
import type { IndexEntry, SearchType } from './memory-index.js';
import { findById } from '../db/client.js';

/**
 * What the index holds for each resource kind (docs/search.md, What is indexed): read from the
 * store, never from an event's payload, so a follower that replays an old event still indexes the
 * current state (or removes a resource that is gone).
 */
export interface Source {
  type: SearchType;
  /** The entries of one resource (its head, then its chunks), or [] when it is gone or not searchable. */
  load(workspaceId: string, id: string): Promise<IndexEntry[]>;
  /** Every resource of the kind, resource by resource (the start-up rebuild). */
  all(): AsyncIterable<IndexEntry[]>;
}

/** The resource-event kinds the index follows, and the searchable type each becomes. */
export const TYPE_OF_KIND: Partial<Record<ResourceRef['kind'], SearchType>> = {
  neuron: 'neurons', pathway: 'pathways', receptor: 'receptors', reflex: 'reflexes', action_plan: 'action_plans',
  asset: 'assets', artifact: 'artifacts', memory: 'memories', meeting: 'meetings', stakeholder_map: 'stakeholder_maps',
};

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const joinPath = (...parts: string[]) => parts.filter(Boolean).join('/');

/** Chunk entries of a resource's live version (the newest one that has chunks). */
function chunkEntries(head: IndexEntry, chunks: ChunkDoc[]): IndexEntry[] {
  const live = chunks.reduce((m, c) => Math.max(m, c.version), 0);
  return chunks.filter((c) => c.version === live).sort((a, b) => a.index - b.index).map((c) => ({
    ...head, id: c._id, chunkIndex: c.index, description: '', text: c.text,
    vector: c.embedding ? bytesToVector(c.embedding.vector.buffer) : null, vectorModel: c.embedding?.model ?? null,
  }));
}

export function createSources(repos: Repos): Source[] {
  const k = repos.knowledge;

  const documentHead = (r: DocumentDoc): IndexEntry => {
    const type: SearchType = r.lane === 'asset' ? 'assets' : 'artifacts';
    const meta = decodeBlob<Record<string, unknown>>(r.metadata, {});
    return {
      id: r._id, workspaceId: r.workspaceId, brainId: r.brainId, type, resourceId: r._id,
      title: r.name, description: str(meta.description), text: '', path: r.path,
      url: `/v1/${type}/${r._id}`, displayPath: joinPath(type, r.path, r.name), updatedAt: r.updatedAt.getTime(),
    };
  };
  const documentEntries = async (r: DocumentDoc) => {
    const head = documentHead(r);
    return [head, ...chunkEntries(head, await k.chunks.find({ resourceId: r._id, workspaceId: r.workspaceId }).toArray())];
  };
  const documents = (lane: 'asset' | 'artifact'): Source => ({
    type: lane === 'asset' ? 'assets' : 'artifacts',
    async load(ws, id) {
      const r = await findById(k.documents, id, { workspaceId: ws, lane }, { projection: { content: 0 } });
      return r ? documentEntries(r) : [];
    },
    async *all() {
      for await (const r of k.documents.find({ lane }, { projection: { content: 0 } })) yield await documentEntries(r);
    },
  });

  const memoryEntries = async (m: MemoryDoc) => {
    const meta = decodeBlob<Record<string, unknown>>(m.metadata, {});
    const head: IndexEntry = {
      id: m._id, workspaceId: m.workspaceId, brainId: m.brainId, type: 'memories', resourceId: m._id,
      title: m.name, description: m.description ?? '', text: m.tags.join(' '), path: 'memories',
      ownerType: m.ownerType, ownerId: m.ownerId, tags: m.tags, project: str(meta.project) || null, context: str(meta.context) || null,
      url: `/v1/memories/${m._id}`, displayPath: joinPath('memories', m.name), updatedAt: m.updatedAt.getTime(),
    };
    return [head, ...chunkEntries(head, await k.chunks.find({ resourceId: m._id, workspaceId: m.workspaceId }).toArray())];
  };

  return [
    {
      type: 'neurons',
      async load(ws, id) {
        const n = await findById(repos.neurons.neurons, id, { workspaceId: ws, deletedAt: null });
        return n ? [neuronEntry(n)] : [];
      },
      async *all() { for await (const n of repos.neurons.neurons.find({ deletedAt: null })) yield [neuronEntry(n)]; },
    },
    {
      type: 'pathways',
      async load(ws, id) {
        const p = await repos.pathways.findHead(ws, id);
        return p ? [pathwayEntry(p)] : [];
      },
      async *all() { for await (const p of repos.pathways.pathways.find({}, { projection: { versions: 0 } })) yield [pathwayEntry(p)]; },
    },
    {
      type: 'receptors',
      async load(ws, id) {
        const r = await repos.receptors.findById(ws, id);
        return r ? [receptorEntry(r)] : [];
      },
      async *all() { for await (const r of repos.receptors.receptors.find({})) yield [receptorEntry(r)]; },
    },
    {
      type: 'reflexes',
      async load(ws, id) {
        const r = await repos.reflexes.findById(ws, id);
        return r ? [reflexEntry(r)] : [];
      },
      async *all() { for await (const r of repos.reflexes.reflexes.find({})) yield [reflexEntry(r)]; },
    },
    {
      type: 'action_plans',
      async load(ws, id) {
        const p = await findById(repos.receptors.actionPlans, id, { workspaceId: ws });
        return p ? [await actionPlanEntry(p)] : [];
      },
      async *all() { for await (const p of repos.receptors.actionPlans.find({})) yield [await actionPlanEntry(p)]; },
    },
    {
      type: 'meetings',
      async load(ws, id) {
        const m = await findById(repos.meetings.meetings, id, { workspaceId: ws });
        return m ? [meetingEntry(m)] : [];
      },
      async *all() { for await (const m of repos.meetings.meetings.find({})) yield [meetingEntry(m)]; },
    },
    {
      type: 'stakeholder_maps',
      async load(ws, id) {
        const m = await findById(repos.stakeholderMaps.maps, id, { workspaceId: ws });
        return m ? [await stakeholderMapEntry(m)] : [];
      },
      async *all() { for await (const m of repos.stakeholderMaps.maps.find({})) yield [await stakeholderMapEntry(m)]; },
    },
    documents('asset'),
    documents('artifact'),
    {
      type: 'memories',
      async load(ws, id) {
        const m = await findById(k.memories, id, { workspaceId: ws });
        return m ? memoryEntries(m) : [];
      },
      async *all() { for await (const m of k.memories.find({})) yield await memoryEntries(m); },
    },
  ];

  /** A map is found by its name, description, summary and the names of its stakeholders. */
  async function stakeholderMapEntry(m: StakeholderMapDoc): Promise<IndexEntry> {
    const people = await repos.stakeholderMaps.index.find({ workspaceId: m.workspaceId, mapId: m._id }, { projection: { name: 1 } }).limit(2000).toArray();
    return {
      id: m._id, workspaceId: m.workspaceId, brainId: m.brainId, type: 'stakeholder_maps', resourceId: m._id,
      title: m.name, description: [m.description, m.summary].filter(Boolean).join(' — '), text: people.map((p) => p.name).join(', '), path: '',
      url: `/v1/resources/stakeholder_maps/${m._id}`, displayPath: joinPath('stakeholder_maps', m.name), updatedAt: m.updatedAt.getTime(),
    };
  }

  async function actionPlanEntry(p: ActionPlanDoc): Promise<IndexEntry> {
    const [pathway, receptor] = await Promise.all([repos.pathways.findHead(p.workspaceId, p.pathwayId), repos.receptors.findById(p.workspaceId, p.receptorId)]);
    const input = decodeBlob<unknown>(p.input, null);
    const title = `${pathway?.name ?? 'pathway'} (${p.status})`;
    return {
      id: p._id, workspaceId: p.workspaceId, brainId: p.brainId, type: 'action_plans', resourceId: p._id,
      title, description: `Action plan ${p.status} by receptor ${receptor?.slug ?? p.receptorId} for pathway ${pathway?.name ?? p.pathwayId}`,
      text: input == null ? '' : JSON.stringify(input).slice(0, 4000), path: '', isActive: p.status === 'proposed',
      url: `/v1/jobs/${p.jobId}`, displayPath: joinPath('action_plans', p._id), updatedAt: p.updatedAt.getTime(),
    };
  }
}


function neuronEntry(n: NeuronDoc): IndexEntry {
  const cfg = decodeBlob<Record<string, unknown>>(n.config, {});
  return {
    id: n._id, workspaceId: n.workspaceId, brainId: n.brainId, type: 'neurons', resourceId: n._id,
    // A core neuron's system prompt is redacted for most readers: it is not searchable either.
    title: n.name, description: n.description, text: n.scope === 'core' ? '' : str(cfg.system_prompt), path: '',
    isActive: n.isActive, visibility: n.scope, url: `/v1/neurons/${n._id}`, displayPath: joinPath('neurons', n.name), updatedAt: n.updatedAt.getTime(),
  };
}

/** A meeting's searchable text: summary, agenda, notes, decisions, action items, then the transcript (first 20,000 characters). */
function meetingEntry(m: MeetingDoc): IndexEntry {
  const body = decodeBlob<Record<string, unknown>>(m.body, {});
  const flat = (v: unknown): string => (typeof v === 'string' ? v : Array.isArray(v) ? v.map(flat).join('\n') : v && typeof v === 'object' ? Object.values(v).map(flat).join(' ') : '');
  const transcript = Array.isArray(body.transcript_segments) ? (body.transcript_segments as { text?: unknown }[]).map((x) => str(x?.text)).join(' ') : '';
  const text = [flat(body.summary), flat(body.agenda), flat(body.notes), flat(body.decisions), flat(body.action_items), transcript].filter(Boolean).join('\n').slice(0, 20_000);
  return {
    id: m._id, workspaceId: m.workspaceId, brainId: m.brainId, type: 'meetings', resourceId: m._id,
    title: m.title, description: m.description, text, path: '', url: `/v1/meetings/${m._id}`, displayPath: joinPath('meetings', m.title), updatedAt: m.updatedAt.getTime(),
  };
}

function pathwayEntry(p: PathwayHead): IndexEntry {
  return {
    id: p._id, workspaceId: p.workspaceId, brainId: p.brainId, type: 'pathways', resourceId: p._id,
    title: p.name, description: p.description, text: '', path: '', isActive: p.isActive,
    url: `/v1/pathways/${p._id}`, displayPath: joinPath('pathways', p.name), updatedAt: p.updatedAt.getTime(),
  };
}

function receptorEntry(r: ReceptorDoc): IndexEntry {
  const cfg = decodeBlob<Record<string, unknown>>(r.config, {});
  return {
    id: r._id, workspaceId: r.workspaceId, brainId: r.brainId, type: 'receptors', resourceId: r._id,
    title: r.slug, description: str(cfg.description) || str(cfg.name),
    text: [r.executableTarget.kind, ...(r.stimulusKeys ?? []), ...r.activeChannels].join(' '), path: '',
    isActive: r.isActive, visibility: r.scope, url: `/v1/resources/receptors/${r._id}`, displayPath: joinPath('receptors', r.slug), updatedAt: r.updatedAt.getTime(),
  };
}

function reflexEntry(r: ReflexDoc): IndexEntry {
  return {
    id: r._id, workspaceId: r.workspaceId, brainId: r.brainId, type: 'reflexes', resourceId: r._id,
    title: r.name, description: r.description, text: [r.type, ...r.tools.flatMap((t) => t.tools ?? [])].join(' '), path: '',
    isActive: r.isActive, visibility: r.scope, url: `/v1/reflexes/${r._id}`, displayPath: joinPath('reflexes', r.name), updatedAt: r.updatedAt.getTime(),
  };
}
