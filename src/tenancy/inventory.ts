/**
 * Where a workspace's rows are (docs/operations.md, "Deleting a workspace"). Every collection whose
 * rows carry `workspaceId` is found by listing the store's collections, so a new collection is
 * covered without a change here; only the rows that do not carry it are named: children found
 * through a parent collection, and short-lived holds keyed by a string that contains the id.
 */
export interface ChildRule {
  collection: string;
  parent: string;
  /** The child's field holding the parent's `_id`; or `idPrefix`: the child's `_id` starts with `<parent _id>:`. */
  field: string | null;
}
export const CHILDREN: ChildRule[] = [
  { collection: 'run_steps', parent: 'jobs', field: 'jobId' },
  { collection: 'document_versions', parent: 'documents', field: 'documentId' },
  { collection: 'usage_job_rows', parent: 'usage_ledger', field: 'rowId' },
  { collection: 'engram_places', parent: 'traces', field: null },
];

/** Collections of the platform itself: never a workspace's rows, never exported. */
export const PLATFORM_COLLECTIONS = new Set(['workspace_deletions']);

/** Holds and locks: short-lived rows (an expiry), keyed by a string; a workspace's are those whose key names it. */
export const isHoldCollection = (name: string) => /_holds$|_locks$|^connection_refreshes$/.test(name);

/** The searchable resources (src/search/sources.ts TYPE_OF_KIND): collection, and how a row names its kind. */
export const SEARCHABLE: { collection: string; kind: string | { field: string } }[] = [
  { collection: 'neurons', kind: 'neuron' },
  { collection: 'pathways', kind: 'pathway' },
  { collection: 'receptors', kind: 'receptor' },
  { collection: 'reflexes', kind: 'reflex' },
  { collection: 'action_plans', kind: 'action_plan' },
  { collection: 'documents', kind: { field: 'lane' } },
  { collection: 'memories', kind: 'memory' },
  { collection: 'meetings', kind: 'meeting' },
  { collection: 'stakeholder_maps', kind: 'stakeholder_map' },
];

/**
 * The blob folders that hold a workspace's bodies, each `<folder>/<workspace id>/…` (src/services:
 * asset-intake, memories, transcription): deleting a workspace removes these folders whole, bodies
 * no row names included (an upload cut short, a chunk whose row was never written).
 */
export const BLOB_FOLDERS = ['assets', 'memories', 'attachments', 'audio'] as const;
