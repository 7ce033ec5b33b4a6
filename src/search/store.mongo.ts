import type { Collection, Db, Document, Filter, FindOptions } from 'mongodb';
import { bytesToVector } from '../embeddings/index.js';
import { releaseHold, renewHold, tryHold, type HoldDoc } from '../kernel/store/claims.js';
import { decodeBlob } from '../kernel/store/codec.js';
import type {
  ChunkDoc,
  ChunkedKind,
  DocumentDoc,
  KnowledgeDocument,
  MemoryRecord as Memory,
  MemoryDoc,
} from '../knowledge/index.js';
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
import { toDocument, toMemory } from '../knowledge/index.js';
import type { MeetingDoc } from '../meetings/index.js';
import type { NeuronDoc } from '../neurons/index.js';
import type { PathwayHead } from '../pathways/index.js';
import type { ActionPlanDoc, ReceptorDoc } from '../receptors/index.js';
import type { ReflexDoc } from '../reflexes/index.js';
import type { StakeholderMapDoc } from '../stakeholders/index.js';

/**
 * The search index's reads (docs/search.md, What is indexed): every searchable resource of every
 * area, decoded, in bulk. A batch of changed resources costs one query per collection (or a few key
 * lookups), the snapshot walk one cursor per collection, never one query per resource. The search
 * service builds its entries from these records; it never sees the store.
 */

type Json = Record<string, unknown>;

/** Records per page of the snapshot walk. */
const PAGE = 500;
/**
 * Up to this many ids (or resources' chunks) are read by key one by one, in parallel; more in one
 * `$in` query. FerretDB's SQLite backend answers `$in` by scanning the whole collection, so a
 * batch's one query costs more as the collection grows (the chunks of every artifact: 230 ms per
 * re-read, rising to 350 ms, in bench (n)), while a lookup by key stays an index read.
 */
const FEW_IDS = 64;

type Row = Document & { _id: string; workspaceId: string };

/**
 * Rows by key, each in its own workspace: up to FEW_IDS by key (the `_id` and the workspace in the
 * filter), more in one `$in` query under the batch's workspaces (a scan on FerretDB's SQLite
 * backend), keeping the rows whose workspace is their key's.
 */
async function byKeys<D extends Row>(coll: Collection<D>, keys: ResourceKey[], options?: FindOptions): Promise<D[]> {
  const ws = new Map(keys.map((k) => [k.id, k.workspaceId]));
  if (ws.size <= FEW_IDS) {
    const rows = await Promise.all(
      [...ws].map(([id, workspaceId]) => coll.findOne({ _id: id, workspaceId } as Filter<D>, options)),
    );
    return rows.filter((x): x is NonNullable<typeof x> => x !== null) as D[];
  }
  const filter = { _id: { $in: [...ws.keys()] }, workspaceId: { $in: [...new Set(ws.values())] } } as Filter<D>;
  return ((await coll.find(filter, options).toArray()) as D[]).filter((d) => ws.get(d._id) === d.workspaceId);
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

function group<T extends { resourceId: string }>(rows: T[], into = new Map<string, T[]>()): Map<string, T[]> {
  for (const r of rows) {
    const list = into.get(r.resourceId);
    if (list) list.push(r);
    else into.set(r.resourceId, [r]);
  }
  return into;
}

interface KindSpec<D extends Row, R> {
  coll: Collection<D>;
  /** What the walk reads (and what a re-read must also satisfy, via `keep`). */
  filter?: Filter<D>;
  keep?: (d: D) => boolean;
  options?: FindOptions;
  /** The records of a page of rows (same order). */
  records(docs: D[]): Promise<R[]> | R[];
}

function reader<D extends Row, R>(spec: KindSpec<D, R>): SearchReader<R> {
  const keep = spec.keep ?? (() => true);
  return {
    async loadMany(keys) {
      const docs = (await byKeys(spec.coll, keys, spec.options)).filter(keep);
      const records = await spec.records(docs);
      return new Map(docs.map((d, i) => [d._id, records[i]]));
    },
    async *all() {
      for await (const docs of pages(spec.coll.find(spec.filter ?? {}, spec.options) as AsyncIterable<D>)) {
        const kept = docs.filter(keep);
        if (kept.length) yield await spec.records(kept);
      }
    },
  };
}

const CHUNK_FIELDS = {
  projection: { _id: 1, workspaceId: 1, resourceId: 1, version: 1, index: 1, text: 1, embedding: 1 },
};
type ChunkRow = Pick<ChunkDoc, '_id' | 'workspaceId' | 'resourceId' | 'version' | 'index' | 'text' | 'embedding'>;
const toSearchChunk = (c: ChunkRow): SearchChunk => ({
  id: c._id,
  workspaceId: c.workspaceId,
  resourceId: c.resourceId,
  version: c.version,
  index: c.index,
  text: c.text,
  vector: c.embedding ? bytesToVector(c.embedding.vector.buffer) : null,
  vectorModel: c.embedding?.model ?? null,
});

/**
 * A chunked kind: a re-read reads the batch's chunks resource by resource (one query past
 * FEW_IDS); the walk reads the kind's chunks in one scan first, grouped by resource, and hands
 * them out with their resources' pages.
 */
function chunkedReader<D extends Row, T>(
  chunks: Collection<ChunkDoc>,
  kind: ChunkedKind,
  spec: Omit<KindSpec<D, ChunkedRecord<T>>, 'records'> & { decode: (d: D) => T },
): SearchReader<ChunkedRecord<T>> {
  // Up to FEW_IDS resources' chunks by resource (each an index read on resource_version_index), more in one `$in` query.
  const chunksOf = async (docs: D[]): Promise<Map<string, ChunkRow[]>> => {
    if (!docs.length) return new Map<string, ChunkRow[]>();
    if (docs.length <= FEW_IDS) {
      const each = await Promise.all(
        docs.map((d) => chunks.find({ resourceId: d._id, workspaceId: d.workspaceId }, CHUNK_FIELDS).toArray()),
      );
      return group(each.flat());
    }
    return group(
      await chunks
        .find({ resourceId: { $in: docs.map((d) => d._id) }, workspaceId: workspacesOf(docs) }, CHUNK_FIELDS)
        .toArray(),
    );
  };
  const bundle = (docs: D[], of: Map<string, ChunkRow[]>) =>
    docs.map((d) => ({
      doc: spec.decode(d),
      chunks: (of.get(d._id) ?? []).filter((c) => c.workspaceId === d.workspaceId).map(toSearchChunk),
    }));
  const byKey = reader<D, ChunkedRecord<T>>({
    ...spec,
    records: async (docs) => bundle(docs, await chunksOf(docs)),
  });
  return {
    loadMany: byKey.loadMany,
    async *all() {
      const byResource = new Map<string, ChunkRow[]>();
      for await (const rows of pages(chunks.find({ resourceKind: kind }, CHUNK_FIELDS))) group(rows, byResource);
      const walk = reader<D, ChunkedRecord<T>>({
        ...spec,
        records: (docs) => {
          const out = bundle(docs, byResource);
          for (const d of docs) byResource.delete(d._id);
          return out;
        },
      });
      yield* walk.all();
    },
  };
}

/** A row only when it belongs to `workspaceId`. */
const mine = <D extends Row>(d: D | undefined, workspaceId: string) => (d?.workspaceId === workspaceId ? d : undefined);
const workspacesOf = (rows: { workspaceId: string }[]) => ({ $in: [...new Set(rows.map((r) => r.workspaceId))] });

async function byId<D extends Row>(coll: Collection<D>, keys: ResourceKey[], options: FindOptions) {
  return new Map((await byKeys(coll, keys, options)).map((d) => [d._id, d]));
}

/** Every kind's reader over one Db. */
export function createSearchSources(db: Db): SearchSources {
  const chunks = db.collection<ChunkDoc>('chunks');
  const pathways = db.collection<PathwayHead>('pathways');
  const receptors = db.collection<ReceptorDoc>('receptors');
  const people = db.collection<{ _id: string; workspaceId: string; mapId: string; name: string }>('stakeholder_index');
  const syncHolds = db.collection<HoldDoc>('search_sync_holds');
  const documents = (lane: 'asset' | 'artifact') =>
    chunkedReader<DocumentDoc, KnowledgeDocument>(chunks, lane, {
      coll: db.collection<DocumentDoc>('documents'),
      filter: { lane },
      keep: (r) => r.lane === lane,
      options: { projection: { content: 0 } },
      decode: toDocument,
    });
  return {
    /**
     * The search syncer's lease (docs/search.md, "One syncer per index"): a hold by unique insert
     * (src/kernel/store/claims.ts, the platform's lease), keyed by the index it writes, renewed while held.
     */
    syncLease: {
      take: (key: string, owner: string, leaseMs: number) => tryHold(syncHolds, key, owner, leaseMs),
      renew: (key: string, owner: string, leaseMs: number) => renewHold(syncHolds, key, owner, leaseMs),
      release: (key: string, owner: string) => releaseHold(syncHolds, key, owner),
    },
    neurons: reader<NeuronDoc, NeuronRecord>({
      coll: db.collection<NeuronDoc>('neurons'),
      filter: { deletedAt: null },
      keep: (n) => n.deletedAt == null,
      records: (docs) => docs.map((n) => ({ ...n, config: decodeBlob<Json>(n.config, {}) })),
    }),
    pathways: reader<PathwayHead, PathwayHead>({
      coll: pathways,
      options: { projection: { versions: 0 } },
      records: (docs) => docs,
    }),
    receptors: reader<ReceptorDoc, ReceptorRecord>({
      coll: receptors,
      records: (docs) => docs.map((r) => ({ ...r, config: decodeBlob<Json>(r.config, {}) })),
    }),
    reflexes: reader<ReflexDoc, ReflexDoc>({ coll: db.collection<ReflexDoc>('reflexes'), records: (docs) => docs }),
    actionPlans: reader<ActionPlanDoc, ActionPlanRecord>({
      coll: db.collection<ActionPlanDoc>('action_plans'),
      async records(plans) {
        const [pw, rc] = await Promise.all([
          byId(
            pathways,
            plans.map((p) => ({ workspaceId: p.workspaceId, id: p.pathwayId })),
            { projection: { _id: 1, workspaceId: 1, name: 1 } },
          ),
          byId(
            receptors,
            plans.map((p) => ({ workspaceId: p.workspaceId, id: p.receptorId })),
            { projection: { _id: 1, workspaceId: 1, slug: 1 } },
          ),
        ]);
        return plans.map((p) => ({
          plan: { ...p, input: decodeBlob<unknown>(p.input, null) },
          pathwayName: mine(pw.get(p.pathwayId), p.workspaceId)?.name ?? null,
          receptorSlug: mine(rc.get(p.receptorId), p.workspaceId)?.slug ?? null,
        }));
      },
    }),
    meetings: reader<MeetingDoc, MeetingRecord>({
      coll: db.collection<MeetingDoc>('meetings'),
      records: (docs) => docs.map((m) => ({ ...m, body: decodeBlob<Json>(m.body, {}) })),
    }),
    stakeholderMaps: reader<StakeholderMapDoc, StakeholderMapRecord>({
      coll: db.collection<StakeholderMapDoc>('stakeholder_maps'),
      async records(maps) {
        const rows = maps.length
          ? await people
              .find(
                { mapId: { $in: maps.map((m) => m._id) }, workspaceId: workspacesOf(maps) },
                { projection: { name: 1, mapId: 1, workspaceId: 1 } },
              )
              .toArray()
          : [];
        const names = group(rows.map((p) => ({ ...p, resourceId: p.mapId })));
        return maps.map((m) => ({
          map: m,
          people: (names.get(m._id) ?? []).filter((p) => p.workspaceId === m.workspaceId).map((p) => p.name),
        }));
      },
    }),
    assets: documents('asset'),
    artifacts: documents('artifact'),
    memories: chunkedReader<MemoryDoc, Memory>(chunks, 'memory', {
      coll: db.collection<MemoryDoc>('memories'),
      decode: toMemory,
    }),
  };
}
