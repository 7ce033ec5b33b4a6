/**
 * The index in Weaviate (docs/search.md, "Weaviate"): one collection per deployment, embedding model
 * and dimension (`Cortex_<database>_<model>_<dim>d`), a tenant per workspace (one shard each,
 * created on first write), filter properties for brain, type, path, activity, visibility and the
 * memory fields, and the platform's own vectors (Weaviate embeds nothing). BM25F weighs the title
 * twice like the embedded index. Each leg is one engine query; rank.ts fuses them as it does for the
 * embedded index, so `explain`, the threshold after fusion and one hit per resource are unchanged.
 * The sync's feed position is kept in Weaviate itself (collection `CortexSync`, one object per
 * index collection): an index that is wiped loses its position with it and is re-synced whole.
 */
import { createHash } from 'node:crypto';
import weaviate, {
  Filters,
  type WeaviateField,
  generateUuid5,
  type Collection,
  type FilterValue,
  type WeaviateClient,
} from 'weaviate-client';
import {
  newestFirst,
  type EntryField,
  type EntryPage,
  type EntryWhere,
  type IndexFilter,
  type SearchBackend,
} from './backend.js';
import type { IndexEntry, Scored, SearchType } from './memory-index.js';

type Props = Record<string, unknown>;
type Coll = Collection;

/**
 * The HNSW settings of the index collection (docs/search.md, "Recall"). Every query has a filter (the
 * types at least), and a filtered query whose filter passes fewer than `flatSearchCutoff` objects of
 * the tenant is an exact scan of them (as the embedded index is), not a graph search: on the bench's
 * 100k chunks HNSW with the defaults found 0.31 of the true top 10 (0.57 with ef 512; usearch's HNSW
 * with the same M and efConstruction 0.33: the vectors, not the engine), so a workspace up to 200k
 * matching entries is searched exactly, and a larger one by HNSW with ef 512.
 */
export const HNSW = {
  ef: 512,
  efConstruction: 128,
  maxConnections: 32,
  flatSearchCutoff: 200_000,
};

/**
 * Objects per insert call. Four calls of 125 in flight wrote memory heads 1.6 times as fast as two
 * of 500 (580 against 366 per second on the shared 2-core machine); eight of 63 were no faster.
 */
const WRITE_BATCH = 125;
/** Insert calls in flight at once. */
const IN_FLIGHT = 4;
/** Objects per page of a scan. */
const SCAN_PAGE = 1000;
/** Entries a page's window reads beyond each side of the page at first (`page`): ×8 while a tie on updatedAt crosses its edge. */
const PAGE_MARGIN = 16;
/** Groups `paths` reads at most (distinct folders below one folder); beyond, the caller counts a scan. */
const GROUPS = 10_000;
/** A query with filters only the post-check applies fetches this many times its limit. */
const OVERFETCH = 4;
const SYNC_COLLECTION = 'CortexSync';

/**
 * Where the sync stands, per resource-feed partition (src/kernel/feed.ts): the last entry applied (its seq;
 * null when it had none) and the partition's Redis clock at the last snapshot; and Redis's run id.
 */
export interface SyncPosition {
  partitions: { feedId: string; seq: number | null; snapshotMs: number }[];
  runId: string | null;
}

/** The stored form of the partitions (one JSON text property): null when it does not parse. */
function parsePartitions(text: string): SyncPosition['partitions'] | null {
  try {
    const v = JSON.parse(text) as unknown;
    if (!Array.isArray(v)) return null;
    return v.map((p: { feedId?: unknown; seq?: unknown; snapshotMs?: unknown }) => ({
      feedId: String(p.feedId ?? '0-0'),
      seq: typeof p.seq === 'number' ? p.seq : null,
      snapshotMs: Number(p.snapshotMs ?? 0),
    }));
  } catch {
    return null;
  }
}

/** Parses `http(s)://host:port` and `host:port` (gRPC) into the client's options. */
function connectOptions(url: string, grpc: string | undefined) {
  const u = new URL(url);
  const secure = u.protocol === 'https:';
  const httpPort = Number(u.port || (secure ? 443 : 80));
  const [gh, gp] = (grpc ?? `${u.hostname}:50051`).replace(/^[a-z]+:\/\//, '').split(':');
  return {
    httpHost: u.hostname,
    httpPort,
    httpSecure: secure,
    grpcHost: gh,
    grpcPort: Number(gp ?? 50051),
    grpcSecure: secure,
  };
}

export async function connectWeaviate(o: { url: string; grpc?: string; apiKey?: string }): Promise<WeaviateClient> {
  return weaviate.connectToCustom({
    ...connectOptions(o.url, o.grpc),
    ...(o.apiKey ? { authCredentials: new weaviate.ApiKey(o.apiKey) } : {}),
    timeout: { init: 10, query: 60, insert: 120 },
  });
}

/**
 * The version of the collection's layout (its properties' indexes and its HNSW settings), part of its
 * name: a change that Weaviate cannot make to an existing collection (distance, `efConstruction`,
 * `maxConnections`, a property's indexes) takes a new version, so a deployment that upgrades finds
 * no collection of that name and no stored position, and its sync fills the new collection from the
 * store (docs/search.md, "Layout versions"). Version 1 had no suffix.
 */
const LAYOUT_VERSION = 3;

/** A collection name Weaviate accepts: letters, digits and underscores, starting with a capital. */
export function collectionName(database: string, model: string, dim: number): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, '');
  return `Cortex_${clean(database)}_${clean(model)}_${dim}d_v${LAYOUT_VERSION}`;
}

/**
 * A text property. Only what a filter reads is filterable and only the BM25 fields are searchable:
 * every index of a property is written for every object, so an unused one only slows the sync.
 */
const text = (name: string, o: { filter?: boolean; search?: boolean } = {}) => ({
  name,
  dataType: 'text' as const,
  tokenization: o.search ? ('word' as const) : ('field' as const),
  indexSearchable: o.search ?? false,
  indexFilterable: o.filter ?? false,
});
const stored = (name: string, dataType: 'int' | 'number' | 'boolean') => ({ name, dataType, indexFilterable: false });

/** The properties of an entry object; `activeState` is 1, 0, or -1 when the type has no active flag. */
const PROPERTIES = [
  text('entryId'),
  text('resourceId', { filter: true }),
  { name: 'isHead', dataType: 'boolean' as const, indexFilterable: true },
  text('brainId'),
  /** Who beyond the brain sees the entry: its brain id, or '*' when its visibility is workspace or core. */
  text('reach', { filter: true }),
  text('type', { filter: true }),
  text('title', { search: true }),
  text('description', { search: true }),
  text('text', { search: true }),
  text('path', { filter: true }),
  /** '/' and the path: a folder's own entries (`EntryWhere.folder`; an empty path is not indexed). */
  text('dir', { filter: true }),
  { name: 'activeState', dataType: 'int' as const, indexFilterable: true },
  text('visibility', { filter: true }),
  text('ownerType', { filter: true }),
  text('ownerId'),
  text('ownerIdLower', { filter: true }),
  {
    name: 'tags',
    dataType: 'text[]' as const,
    tokenization: 'field' as const,
    indexSearchable: false,
    indexFilterable: true,
  },
  text('project', { filter: true }),
  text('context', { filter: true }),
  stored('chunkIndex', 'int'),
  text('url'),
  text('displayPath'),
  /** Filterable from layout 3: Weaviate's sort planner walks this index in order for browse's pages (`page`). */
  { name: 'updatedAt', dataType: 'number' as const, indexFilterable: true },
  text('vectorModel'),
  { name: 'stamp', dataType: 'number' as const, indexFilterable: true },
  /** A digest of everything else the object holds (its vector too): a full re-sync skips an object whose digest is unchanged. */
  text('digest'),
];

function toProps(e: IndexEntry, stamp: number, vector: number[] | undefined): Record<string, WeaviateField> {
  const props: Record<string, WeaviateField> = {
    entryId: e.id,
    resourceId: e.resourceId,
    isHead: e.id === e.resourceId,
    brainId: e.brainId ?? '',
    reach: e.visibility && e.visibility !== 'brain' ? '*' : (e.brainId ?? ''),
    type: e.type,
    title: e.title,
    description: e.description,
    text: e.text,
    path: e.path,
    dir: `/${e.path}`,
    activeState: e.isActive === undefined ? -1 : e.isActive ? 1 : 0,
    visibility: e.visibility ?? '',
    ownerType: e.ownerType ?? '',
    ownerId: e.ownerId ?? '',
    ownerIdLower: (e.ownerId ?? '').toLowerCase(),
    tags: e.tags ?? [],
    project: e.project ?? '',
    context: e.context ?? '',
    chunkIndex: e.chunkIndex ?? -1,
    url: e.url,
    displayPath: e.displayPath,
    updatedAt: e.updatedAt,
    vectorModel: e.vector && e.vectorModel ? e.vectorModel : '',
    stamp: 0,
  };
  const h = createHash('sha1').update(JSON.stringify(props));
  if (vector) h.update(Buffer.from(Float32Array.from(vector).buffer));
  props.digest = h.digest('base64');
  props.stamp = stamp;
  return props;
}

/** The BM25 fields (word tokenization: lower-cased runs of letters and digits). */
const BM25_FIELDS = ['title', 'description', 'text'] as const;

/**
 * `like` patterns on the BM25 fields' tokens that every entry containing `needle` (case-insensitive)
 * in one of those fields passes: a necessary condition, never a sufficient one (the caller checks
 * the substring on what passes). A field that contains the needle contains each run of ASCII
 * letters and digits of it: a run with a non-alphanumeric character of the needle on both sides is a
 * whole token of the field, a run at the needle's start is the end of a token, a run at its end the
 * start of one, a needle of one run lies inside a token. So: `run*`, `*run`, `*run*`, each on any of
 * the three fields, all runs together (only the `run*` ones where there are any: they seek, the others
 * walk every term); a whole-token run is matched as `run*` as well (an exact
 * term that is a stopword would be dropped from the filter). A needle with a non-ASCII character
 * gives none: lower-casing outside ASCII is not the same in JavaScript and in Weaviate's tokenizer
 * (and may change lengths), so no token pattern is sure to hold.
 */
export function containsPatterns(needle: string): string[] {
  const n = needle.toLowerCase();
  if (!/^[\x00-\x7f]*$/.test(n)) return [];
  const out: string[] = [];
  for (const m of n.matchAll(/[a-z0-9]+/g)) {
    const left = m.index > 0; // a non-alphanumeric character of the needle before the run
    const right = m.index + m[0].length < n.length; // and after it
    out.push(left ? `${m[0]}*` : right ? `*${m[0]}` : `*${m[0]}*`);
  }
  // A pattern that starts with `*` walks every term of the field; one that does not seeks to its
  // prefix. Where a seek is possible the walks are left out (fewer conditions: still necessary).
  const seeks = out.filter((x) => !x.startsWith('*'));
  return seeks.length ? seeks : out;
}

/** The property that holds each field of an entry (`scan`'s `fields`). */
const PROPERTY_OF: Record<EntryField, string> = {
  id: 'entryId',
  brainId: 'brainId',
  type: 'type',
  resourceId: 'resourceId',
  title: 'title',
  description: 'description',
  text: 'text',
  path: 'path',
  isActive: 'activeState',
  visibility: 'visibility',
  ownerType: 'ownerType',
  ownerId: 'ownerId',
  tags: 'tags',
  vectorModel: 'vectorModel',
  project: 'project',
  context: 'context',
  chunkIndex: 'chunkIndex',
  url: 'url',
  displayPath: 'displayPath',
  updatedAt: 'updatedAt',
};

/** The properties a scan reads for `fields`: those, and what the predicate of `w` reads (it is checked on each object). */
function propertiesFor(fields: readonly EntryField[], w: EntryWhere): string[] {
  const need = new Set<EntryField>([
    ...fields,
    'id',
    'resourceId',
    'type',
    'brainId',
    'visibility',
    'isActive',
    'path',
  ]);
  if (w.ownerType !== undefined) need.add('ownerType');
  if (w.ownerIds) need.add('ownerId');
  if (w.tags?.length) need.add('tags');
  if (w.project) need.add('project');
  if (w.context) need.add('context');
  if (w.contains !== undefined) for (const x of BM25_FIELDS) need.add(x);
  return [...need].map((x) => PROPERTY_OF[x]);
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');
const orNull = (v: unknown) => (typeof v === 'string' && v ? v : null);

function toEntry(workspaceId: string, o: { properties: unknown; vectors?: unknown }): IndexEntry {
  const p = o.properties as Props;
  const vec = (o.vectors as Record<string, unknown> | undefined)?.default;
  const active = Number(p.activeState);
  const e: IndexEntry = {
    id: str(p.entryId),
    workspaceId,
    brainId: orNull(p.brainId),
    type: str(p.type) as SearchType,
    resourceId: str(p.resourceId),
    title: str(p.title),
    description: str(p.description),
    text: str(p.text),
    path: str(p.path),
    url: str(p.url),
    displayPath: str(p.displayPath),
    updatedAt: Number(p.updatedAt ?? 0),
  };
  if (active !== -1) e.isActive = active === 1;
  if (p.visibility) e.visibility = str(p.visibility);
  if (p.ownerType) e.ownerType = str(p.ownerType);
  if (p.ownerId) e.ownerId = str(p.ownerId);
  if (Array.isArray(p.tags) && e.type === 'memories') e.tags = p.tags.map(String);
  if (p.project) e.project = str(p.project);
  if (p.context) e.context = str(p.context);
  if (Number(p.chunkIndex) >= 0) e.chunkIndex = Number(p.chunkIndex);
  if (Array.isArray(vec) && p.vectorModel) {
    e.vector = Float32Array.from(vec as number[]);
    e.vectorModel = str(p.vectorModel);
  }
  return e;
}

/** A missing tenant (a workspace that never wrote) answers like an empty one. */
const noTenant = (err: unknown) => /tenant not found|tenant.*(does not exist|not found)|no tenant/i.test(String(err));

/** Monotonic write stamps: a resource's older objects are the ones with another stamp (no window without entries). */
let lastStamp = 0;
const nextStamp = () => (lastStamp = Math.max(lastStamp + 1, Date.now() * 1000));

/**
 * The index in Weaviate behind the interface, plus what the sync needs (its position, and the sweep
 * that ends a full re-sync). `model` is the platform's embedding model: only vectors of that model
 * are stored; others are kept as lexical-only entries, as the embedded index would never match them.
 */
export async function createWeaviateIndex(o: WeaviateIndexOptions) {
  const name = collectionName(o.database, o.model, o.dimension);
  const { client } = o;
  await ensureCollections(client, name, { ...HNSW, ...o.hnsw });
  const ctx: WeaviateContext = {
    o,
    name,
    coll: client.collections.use(name),
    syncColl: client.collections.use(SYNC_COLLECTION),
    syncId: generateUuid5(name),
    counts: { size: 0, written: 0 },
  };
  const { replace, ...writes } = createWeaviateWrites(ctx);
  const backend: SearchBackend = {
    kind: 'weaviate',
    ...writes, // replaceResources, removeResources, dropWorkspace
    ...createWeaviateQueries(ctx), // lexical, vector, scan
    ...createWeaviatePages(ctx), // page, paths
    size: () => ctx.counts.size,
  };

  return {
    backend,
    collection: name,
    ...createWeaviateSync(ctx, { backend, replace }), // position, savePosition, beginResync, written, count
  };
}

interface WeaviateIndexOptions {
  client: WeaviateClient;
  database: string;
  model: string;
  dimension: number;
  /** The bench's sweep: other HNSW settings than HNSW below (a collection of its own database). */
  hnsw?: Partial<typeof HNSW>;
}

/** What every group of a Weaviate index shares: its options, its collections and its counters. */
interface WeaviateContext {
  o: WeaviateIndexOptions;
  /** The index collection's name. */
  name: string;
  coll: Coll;
  syncColl: Coll;
  /** The id of the index's object in the sync-state collection. */
  syncId: string;
  /** The entries at the last count (/health), and the objects written since the index was opened. */
  counts: { size: number; written: number };
}

const f = (c: Coll) => c.filter;

/**
 * Whether the engine's filter is the whole predicate (no post-check, no wildcard in the folder,
 * no grep pattern, none of recollection's fields): what `page` and `paths` need.
 */
function exactFilter(fl: IndexFilter): boolean {
  const w = fl.where;
  return (
    !fl.post &&
    !/[*?]/.test(w.pathPrefix ?? '') &&
    w.contains === undefined &&
    w.ownerType === undefined &&
    !w.ownerIds &&
    !w.tags?.length &&
    !w.project &&
    !w.context
  );
}
function filterOf(c: Coll, w: EntryWhere): FilterValue {
  const parts: FilterValue[] = [f(c).byProperty('type').containsAny(w.types)];
  if (w.headsOnly) parts.push(f(c).byProperty('isHead').equal(true));
  if (w.resourceIds)
    parts.push(
      f(c)
        .byProperty('resourceId')
        .containsAny(w.resourceIds.length ? w.resourceIds : ['']),
    );
  // Equalities only (a notEqual reads every other entry of the tenant): `reach` is the brain, or '*'.
  if (w.brainId) parts.push(f(c).byProperty('reach').containsAny([w.brainId, '*']));
  if (w.isActive !== undefined)
    parts.push(
      f(c)
        .byProperty('activeState')
        .containsAny([w.isActive ? 1 : 0, -1]),
    );
  if (w.visibility) parts.push(f(c).byProperty('visibility').equal(w.visibility));
  const prefix = w.pathPrefix ? w.pathPrefix.replace(/^\/+|\/+$/g, '') : '';
  if (prefix)
    parts.push(
      Filters.or(
        f(c).byProperty('path').equal(prefix),
        f(c)
          .byProperty('path')
          .like(`${prefix.replace(/[*?]/g, '?')}/*`),
      ),
    );
  if (w.folder !== undefined) parts.push(f(c).byProperty('dir').equal(`/${w.folder}`));
  for (const pattern of w.contains ? containsPatterns(w.contains) : [])
    parts.push(Filters.or(...BM25_FIELDS.map((p) => f(c).byProperty(p).like(pattern))));
  if (w.ownerType !== undefined) parts.push(f(c).byProperty('ownerType').equal(w.ownerType));
  if (w.ownerIds)
    parts.push(
      f(c)
        .byProperty('ownerIdLower')
        .containsAny(w.ownerIds.length ? w.ownerIds : ['']),
    );
  if (w.tags?.length) parts.push(f(c).byProperty('tags').containsAll(w.tags));
  if (w.project) parts.push(f(c).byProperty('project').equal(w.project));
  if (w.context) parts.push(f(c).byProperty('context').equal(w.context));
  return parts.length === 1 ? parts[0] : Filters.and(...parts);
}

/** The digests of the tenant's objects among `ids` (those it holds). */
async function digests(t: Coll, ids: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  try {
    for (let i = 0; i < ids.length; i += SCAN_PAGE) {
      const part = ids.slice(i, i + SCAN_PAGE);
      const res = await t.query.fetchObjects({
        filters: t.filter.byId().containsAny(part),
        limit: part.length,
        returnProperties: ['digest'],
      });
      for (const obj of res.objects) out.set(obj.uuid, str((obj.properties as Props).digest));
    }
  } catch (err) {
    if (!noTenant(err)) throw err;
  }
  return out;
}

/** Runs a query on a workspace's tenant: a missing tenant (a workspace that never wrote) answers `empty`. */
function tenantQuery(coll: Coll) {
  return async function query<T>(ws: string, run: (c: Coll) => Promise<T>, empty: T): Promise<T> {
    try {
      return await run(coll.withTenant(ws));
    } catch (err) {
      if (noTenant(err)) return empty;
      throw err;
    }
  };
}

/** Writes: resources' entries replaced (by the follower, or a re-sync's walk) and removed, and a workspace's tenant dropped. */
function createWeaviateWrites(ctx: WeaviateContext) {
  const { o, coll } = ctx;
  const query = tenantQuery(coll);

  /**
   * Writes resources' entries into a tenant. The follower (no `walked`) then deletes each resource's
   * entries that carry another stamp; a full re-sync passes `walked` (the object ids it has walked
   * in this tenant), skips the objects whose digest is unchanged (reads instead of writes: a re-sync
   * of a store that mostly did not change writes little) and leaves the deletes to its sweep.
   */
  async function writeTenant(ws: string, resources: IndexEntry[][], stamp: number, walked?: Set<string>) {
    const t = coll.withTenant(ws);
    let objects = resources.flat().map((e) => {
      const vector =
        e.vector && e.vectorModel === o.model && e.vector.length === o.dimension ? Array.from(e.vector) : undefined;
      return {
        id: generateUuid5(e.id, ws),
        properties: toProps(e, stamp, vector),
        ...(vector ? { vectors: vector } : {}),
      };
    });
    if (walked) {
      for (const x of objects) walked.add(x.id);
      const held = await digests(
        t,
        objects.map((x) => x.id),
      );
      objects = objects.filter((x) => held.get(x.id) !== x.properties.digest);
    }
    const batches: (typeof objects)[] = [];
    for (let i = 0; i < objects.length; i += WRITE_BATCH) batches.push(objects.slice(i, i + WRITE_BATCH));
    // A few insert calls in flight: the engine indexes one while the next travels.
    for (let i = 0; i < batches.length; i += IN_FLIGHT) {
      for (const res of await Promise.all(batches.slice(i, i + IN_FLIGHT).map((b) => t.data.insertMany(b)))) {
        if (res.hasErrors) {
          const first = Object.values(res.errors)[0];
          throw new Error(
            `weaviate: writing ${Object.keys(res.errors).length} entries failed: ${first?.message ?? '?'}`,
          );
        }
      }
    }
    ctx.counts.written += objects.length;
    if (walked) return;
    // The entries each resource no longer has (an edit that removed chunks): another stamp.
    const ids = [...new Set(resources.map((r) => r[0]?.resourceId).filter((x): x is string => !!x))];
    for (let i = 0; i < ids.length; i += WRITE_BATCH) {
      await t.data.deleteMany(
        Filters.and(
          f(coll)
            .byProperty('resourceId')
            .containsAny(ids.slice(i, i + WRITE_BATCH)),
          f(coll).byProperty('stamp').notEqual(stamp),
        ),
      );
    }
  }

  async function replace(resources: IndexEntry[][], walked?: Map<string, Set<string>>) {
    const stamp = nextStamp();
    const byTenant = new Map<string, IndexEntry[][]>();
    for (const r of resources) {
      if (!r.length) continue;
      const list = byTenant.get(r[0].workspaceId) ?? [];
      list.push(r);
      byTenant.set(r[0].workspaceId, list);
    }
    for (const [ws, list] of byTenant) {
      let mine = walked?.get(ws);
      if (walked && !mine) walked.set(ws, (mine = new Set()));
      await writeTenant(ws, list, stamp, mine);
    }
  }

  const writes: Pick<SearchBackend, 'replaceResources' | 'removeResources' | 'dropWorkspace'> = {
    replaceResources: (resources) => replace(resources),
    async removeResources(keys) {
      const byTenant = new Map<string, string[]>();
      for (const k of keys) byTenant.set(k.workspaceId, [...(byTenant.get(k.workspaceId) ?? []), k.id]);
      for (const [ws, ids] of byTenant)
        await query(ws, (c) => c.data.deleteMany(f(c).byProperty('resourceId').containsAny(ids)), null);
    },
    async dropWorkspace(ws) {
      try {
        await coll.tenants.remove([ws]);
      } catch (err) {
        if (!noTenant(err)) throw err;
      }
    },
  };
  return { replace, ...writes };
}

/** The ranking legs and scans: BM25, nearest vectors and a filtered scan of a tenant. */
function createWeaviateQueries(ctx: WeaviateContext): Pick<SearchBackend, 'lexical' | 'vector' | 'scan'> {
  const { o } = ctx;
  const query = tenantQuery(ctx.coll);
  return {
    async lexical(ws, terms, fl: IndexFilter, limit) {
      if (!terms.length) return [];
      return query(
        ws,
        async (c) => {
          const res = await c.query.bm25(terms.join(' '), {
            queryProperties: ['title^2', 'description', 'text'],
            limit: fl.post ? limit * OVERFETCH : limit,
            filters: filterOf(c, fl.where),
            returnMetadata: ['score'],
            includeVector: true,
          });
          const out: Scored[] = [];
          for (const obj of res.objects) {
            const e = toEntry(ws, obj);
            if (fl.test(e)) out.push({ entry: e, score: obj.metadata?.score ?? 0 });
            if (out.length >= limit) break;
          }
          return out;
        },
        [],
      );
    },
    async vector(ws, q, model, fl, limit) {
      if (model !== o.model || q.length !== o.dimension || limit <= 0) return [];
      return query(
        ws,
        async (c) => {
          const res = await c.query.nearVector(Array.from(q), {
            limit: fl.post ? limit * OVERFETCH : limit,
            filters: filterOf(c, fl.where),
            returnMetadata: ['distance'],
            includeVector: true,
          });
          const out: Scored[] = [];
          for (const obj of res.objects) {
            const e = toEntry(ws, obj);
            if (fl.test(e)) out.push({ entry: e, score: 1 - (obj.metadata?.distance ?? 1) });
            if (out.length >= limit) break;
          }
          return out;
        },
        [],
      );
    },
    async scan(ws, fl, fields) {
      const returnProperties = fields ? propertiesFor(fields, fl.where) : undefined;
      return query(
        ws,
        async (c) => {
          const out: IndexEntry[] = [];
          for (let offset = 0; ; offset += SCAN_PAGE) {
            const res = await c.query.fetchObjects({
              limit: SCAN_PAGE,
              offset,
              filters: filterOf(c, fl.where),
              // An untyped collection: the client types no property names.
              ...(returnProperties ? { returnProperties: returnProperties as never[] } : {}),
            });
            for (const obj of res.objects) {
              const e = toEntry(ws, obj);
              if (fl.test(e)) out.push(e);
            }
            if (res.objects.length < SCAN_PAGE) return out;
          }
        },
        [],
      );
    },
  };
}

/** What the engine orders and counts itself: browse's pages and the resource tree's folder counts. */
function createWeaviatePages(ctx: WeaviateContext): Pick<SearchBackend, 'page' | 'paths'> {
  const query = tenantQuery(ctx.coll);
  return {
    /**
     * A page newest first, ordered and counted by the engine: `aggregate.overAll` with the filter
     * for the total, and `fetchObjects` sorted by `updatedAt` (descending) for a window of the page
     * plus a margin on each side. The engine breaks ties on `updatedAt` its own way (and compares
     * text case-insensitively), so the window is re-sorted here with `newestFirst` (then the
     * resource id); a window whose edge entry ties with the page's edge entry may have cut that
     * tie's group, and is read again with a margin 8 times as wide (at worst the whole list).
     * Only where the filter says everything the predicate checks (no post-check, no wildcard in the
     * folder, none of recollection's fields): otherwise null, and the caller sorts a scan.
     */
    async page(ws, fl, o): Promise<EntryPage | null> {
      const w = fl.where;
      if (!exactFilter(fl)) return null;
      return query(
        ws,
        async (c) => {
          const filters = filterOf(c, w);
          // The count runs beside the first window's fetch, unless the page lies deep enough that
          // reading it from the other end may be cheaper (that needs the count first).
          const counted = c.aggregate.overAll({ filters }).then((r) => r.totalCount);
          if (o.limit <= 0) return { entries: [], total: await counted };
          const known = o.offset >= 2 * (o.limit + PAGE_MARGIN) ? await counted : null;
          for (let margin = PAGE_MARGIN; ; margin *= 8) {
            const start = Math.max(0, o.offset - margin);
            const want = o.offset + o.limit + margin - start;
            // Weaviate reads `offset + limit` objects and drops the offset: a window with fewer
            // entries after it than before it is read oldest first (positions counted from the end)
            // and reversed, so a deep page reads what lies after it.
            const fromEnd = known !== null && known - (start + want) < start;
            const ascOffset = fromEnd ? Math.max(0, known - start - want) : 0;
            const [total, res] = await Promise.all([
              counted,
              fromEnd && known - start - ascOffset <= 0
                ? { objects: [] }
                : c.query.fetchObjects({
                    filters,
                    // An untyped collection: the client types no property names.
                    sort: c.sort.byProperty('updatedAt' as never, fromEnd),
                    offset: fromEnd ? ascOffset : start,
                    limit: fromEnd ? known - start - ascOffset : want,
                  }),
            ]);
            const rows = res.objects.map((obj) => toEntry(ws, obj));
            if (fromEnd) rows.reverse();
            // The filter is the whole predicate; an entry it let through that the predicate refuses would be a bug: sort a scan instead.
            if (!rows.every(fl.test)) return null;
            const from = o.offset - start;
            if (from >= rows.length) return { entries: [], total };
            const to = Math.min(rows.length, from + o.limit);
            const first = rows[from].updatedAt;
            const last = rows[to - 1].updatedAt;
            const headWhole = start === 0 || rows[0].updatedAt > first;
            const tailWhole = rows.length < want || start + want >= total || rows[rows.length - 1].updatedAt < last;
            if (headWhole && tailWhole) {
              rows.sort((a, b) =>
                a.updatedAt !== b.updatedAt || a.title !== b.title
                  ? newestFirst(a, b)
                  : a.resourceId < b.resourceId
                    ? -1
                    : 1,
              );
              return { entries: rows.slice(from, to), total };
            }
          }
        },
        { entries: [], total: 0 },
      );
    },
    /**
     * The matching entries' count per `path` from `aggregate.groupBy` on `path`: Weaviate reads the
     * `path` of each matching object, and only the groups leave it. Null where the filter is not the
     * whole predicate (as `page`) or when the groups reach `GROUPS` (the caller counts a scan).
     */
    async paths(ws, fl): Promise<Map<string, number> | null> {
      if (!exactFilter(fl)) return null;
      return query(
        ws,
        async (c) => {
          const groups = await c.aggregate.groupBy
            .overAll({ filters: filterOf(c, fl.where), groupBy: { property: 'path', limit: GROUPS } })
            .catch((err: unknown) => {
              // The client refuses an answer without groups (nothing matched).
              if (err instanceof Error && /No grouped results/.test(err.message)) return [];
              throw err;
            });
          if (groups.length >= GROUPS) return null;
          // The filter compares paths trimmed of white space (field tokenization): the groups' own paths are checked here.
          const w = fl.where;
          const prefix = w.pathPrefix ? w.pathPrefix.replace(/^\/+|\/+$/g, '') : '';
          const out = new Map<string, number>();
          for (const g of groups) {
            const path = g.groupedBy.value;
            if (typeof path !== 'string') return null;
            if (prefix && !(path === prefix || path.startsWith(`${prefix}/`))) continue;
            if (w.folder !== undefined && path !== w.folder) continue;
            out.set(path, (out.get(path) ?? 0) + g.totalCount);
          }
          return out;
        },
        new Map<string, number>(),
      );
    },
  };
}

/** The sync's side: its stored position, a full re-sync's target and sweep, and the counts. */
function createWeaviateSync(
  ctx: WeaviateContext,
  w: { backend: SearchBackend; replace: ReturnType<typeof createWeaviateWrites>['replace'] },
) {
  const { name, coll, syncColl, syncId } = ctx;
  const { backend, replace } = w;
  return {
    /** The sync's stored position, or null (a new or wiped index: re-sync it whole). */
    async position(): Promise<SyncPosition | null> {
      const obj = await syncColl.query.fetchObjectById(syncId);
      if (!obj) return null;
      const p = obj.properties;
      const partitions = parsePartitions(str(p.partitions));
      return partitions ? { partitions, runId: orNull(p.runId) } : null;
    },
    async savePosition(pos: SyncPosition): Promise<void> {
      const properties = {
        collection: name,
        partitions: JSON.stringify(pos.partitions),
        runId: pos.runId ?? '',
      };
      if (await syncColl.data.exists(syncId)) await syncColl.data.replace({ id: syncId, properties });
      else await syncColl.data.insert({ id: syncId, properties });
    },
    /**
     * A full re-sync: `target` writes what changed (unchanged objects are only read, see
     * writeTenant); `sweep` ends it by deleting every object it did not walk, unless written since
     * it began (by a follower, this process's or another's): a resource deleted while nobody
     * followed the feed. The walked ids are held in memory until the sweep (about 100 bytes each).
     */
    beginResync() {
      const since = nextStamp();
      const walked = new Map<string, Set<string>>();
      const target: SearchBackend = { ...backend, replaceResources: (resources) => replace(resources, walked) };
      return {
        target,
        async sweep(): Promise<void> {
          const tenants = await coll.tenants.get();
          for (const ws of Object.keys(tenants)) {
            const seen = walked.get(ws) ?? new Set<string>();
            const t = coll.withTenant(ws);
            const gone: string[] = [];
            // Pages by id (a cursor over the tenant, the stamp only): the ids not walked are collected,
            // then deleted unless written since. (The client's `iterator()` took 7.5 s per 1,000 objects here.)
            for (let after: string | undefined; ;) {
              const res = await t.query.fetchObjects({
                limit: SCAN_PAGE,
                returnProperties: ['stamp'],
                ...(after ? { after } : {}),
              });
              for (const obj of res.objects) if (!seen.has(obj.uuid)) gone.push(obj.uuid);
              if (res.objects.length < SCAN_PAGE) break;
              after = res.objects[res.objects.length - 1].uuid;
            }
            while (gone.length) {
              const part = gone.splice(0, WRITE_BATCH);
              await t.data.deleteMany(
                Filters.and(t.filter.byId().containsAny(part), f(coll).byProperty('stamp').lessThan(since)),
              );
            }
          }
        },
      };
    },
    /** Objects written (not skipped as unchanged) since the index was opened: the bench's and the logs' figure. */
    written: () => ctx.counts.written,
    /** Counts the entries (every tenant): /health's `entries`, refreshed by the sync now and then. */
    async count(): Promise<number> {
      const tenants = await coll.tenants.get();
      let n = 0;
      for (const ws of Object.keys(tenants)) n += (await coll.withTenant(ws).aggregate.overAll()).totalCount;
      ctx.counts.size = n;
      return n;
    },
  };
}
export type WeaviateIndex = Awaited<ReturnType<typeof createWeaviateIndex>>;

/** Creates the index collection and the sync-state collection when missing (another process may race us: that is fine). */
async function ensureCollections(client: WeaviateClient, name: string, hnsw: typeof HNSW) {
  const create = async (exists: () => Promise<boolean>, make: () => Promise<unknown>) => {
    if (await exists()) return;
    try {
      await make();
    } catch (err) {
      if (!(await exists())) throw err;
    }
  };
  await create(
    () => client.collections.exists(name),
    () =>
      client.collections.create({
        name,
        description: 'Cortex search entries (docs/search.md): a tenant per workspace',
        multiTenancy: weaviate.configure.multiTenancy({
          enabled: true,
          autoTenantCreation: true,
          autoTenantActivation: true,
        }),
        invertedIndex: weaviate.configure.invertedIndex({ bm25b: 0.75, bm25k1: 1.2 }),
        vectorizers: weaviate.configure.vectors.selfProvided({
          vectorIndexConfig: weaviate.configure.vectorIndex.hnsw({
            distanceMetric: 'cosine',
            ...hnsw,
            // Explicit: a server with DEFAULT_QUANTIZATION would otherwise compress the vectors.
            quantizer: weaviate.configure.vectorIndex.quantizer.none(),
          }),
        }),
        properties: PROPERTIES,
      }),
  );
  await create(
    () => client.collections.exists(SYNC_COLLECTION),
    () =>
      client.collections.create({
        name: SYNC_COLLECTION,
        description: 'Cortex search sync positions: one object per index collection',
        vectorizers: weaviate.configure.vectors.selfProvided({
          vectorIndexConfig: weaviate.configure.vectorIndex.flat(),
        }),
        properties: [text('collection'), text('partitions'), text('runId')],
      }),
  );
}
