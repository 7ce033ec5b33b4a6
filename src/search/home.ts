import type { Config } from '../kernel/config.js';
import type { Embedder } from '../embeddings/index.js';
import type { SearchBackend } from './backend.js';
import { connectWeaviate, createWeaviateIndex, type SyncPosition, type WeaviateIndex } from './weaviate-index.js';

/**
 * Where the search index lives (docs/search.md, "One index, two homes"). The follower in
 * search-index.ts is the same for both: it writes what the feed changed into `current()`, and a
 * full re-sync writes into `beginResync().target`, then commits. The embedded home swaps in a
 * freshly built index; the Weaviate home writes in place and sweeps what the walk did not write.
 * Only a home that keeps its index between starts (Weaviate) stores its feed position (`save`) and
 * resumes from it (`load`).
 */
export interface IndexHome {
  readonly kind: 'embedded' | 'weaviate';
  /**
   * One index shared by every process (Weaviate): one elected process (the syncer) writes the feed
   * into it and the others read its stored position for read-your-writes. Not shared (embedded):
   * each process keeps and writes its own.
   */
  readonly shared: boolean;
  /** The index's name (Weaviate: its collection), once open: the key of the syncer's lease. */
  name(): string;
  current(): SearchBackend;
  /** Connects and creates what is missing (retried by the follower until it succeeds). */
  open(): Promise<void>;
  load(): Promise<SyncPosition | null>;
  save(pos: SyncPosition): Promise<void>;
  /** Refreshes what /health reports (the entry count), at most every so often. */
  refresh(): Promise<void>;
  beginResync(): Promise<{ target: SearchBackend; commit: () => Promise<void> }>;
  /** Objects written so far (Weaviate: a re-sync skips unchanged ones); undefined for the embedded home. */
  written?(): number;
}

/** How often the Weaviate home counts its entries for /health. */
const COUNT_EVERY_MS = 30_000;

/** The search backend the configuration selects (CORTEX_SEARCH; WEAVIATE_URL alone changes nothing). */
export const searchKind = (c: Config): 'embedded' | 'weaviate' => c.CORTEX_SEARCH;

/** The index in Weaviate (src/search/weaviate-index.ts): one collection per deployment (the store's database) and model. */
export function weaviateHome(d: { config: Config; embedder: Embedder }): IndexHome {
  const c = d.config;
  let wv: WeaviateIndex | null = null;
  let counted = 0;
  const need = () => {
    if (!wv) throw new Error('weaviate: not connected yet');
    return wv;
  };
  return {
    kind: 'weaviate',
    shared: true,
    name: () => need().collection,
    current: () => need().backend,
    async open() {
      if (wv) return;
      if (!c.WEAVIATE_URL) throw new Error('CORTEX_SEARCH=weaviate needs WEAVIATE_URL (and WEAVIATE_GRPC_ADDRESS)');
      const client = await connectWeaviate({
        url: c.WEAVIATE_URL,
        grpc: c.WEAVIATE_GRPC_ADDRESS,
        apiKey: c.WEAVIATE_API_KEY,
      });
      // The collection is per model and dimension; a remote model's dimension is learned from one embedding.
      const dimension = d.embedder.dimension ?? (await d.embedder.embed(['dimension'])).dimension;
      wv = await createWeaviateIndex({ client, database: c.MONGODB_DB, model: d.embedder.model, dimension });
    },
    load: () => need().position(),
    written: () => wv?.written() ?? 0,
    save: (pos) => need().savePosition(pos),
    async refresh() {
      if (!wv || Date.now() - counted < COUNT_EVERY_MS) return;
      counted = Date.now();
      await wv.count();
    },
    beginResync() {
      const index = need();
      const resync = index.beginResync();
      return Promise.resolve({
        target: resync.target,
        commit: async () => {
          await resync.sweep();
          counted = Date.now();
          await index.count();
        },
      });
    },
  };
}
