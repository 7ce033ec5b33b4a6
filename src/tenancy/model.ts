import { createHash } from 'node:crypto';

/** What retention applies to (docs/operations.md, "Retention"); each kind has its own window in seconds, 0 keeps forever. */
export const RETENTION_KINDS = [
  'jobs',
  'traces',
  'interventions',
  'webhook_deliveries',
  'transcripts',
  'usage_rows',
] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];
export type RetentionWindows = Record<RetentionKind, number>;

/** A workspace's own windows (null: the platform default from src/kernel/config.ts). */
export interface RetentionSettingsDoc {
  _id: string;
  workspaceId: string;
  windows: Partial<Record<RetentionKind, number | null>>;
  updatedAt: Date;
}

/** A deletion names its workspace only by this digest (nothing of the workspace is kept). */
export const workspaceDigest = (ws: string) => createHash('sha256').update(ws).digest('hex');

/** An operator's workspace deletion: its progress, outside the workspace (only a digest of its id is kept). */
export interface DeletionDoc {
  _id: string;
  workspaceDigest: string;
  status: 'running' | 'completed' | 'failed';
  progress: number;
  currentStep: string;
  deleted: Record<string, number>;
  error: string | null;
  startedAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

/**
 * In order (the workflow runs them by index): credentials first (nothing of the workspace can be
 * called), then its workflows, its rows, the search index (once the rows are gone, so a follower
 * re-reading a resource finds nothing), Redis (after the search step: its feed append sets a mark
 * naming the workspace), the blob folders (bodies no row named), and the workspace row last.
 */
export const ERASE_STEPS = ['credentials', 'workflows', 'store', 'search', 'redis', 'blobs', 'workspace'] as const;
export type EraseStep = (typeof ERASE_STEPS)[number];

/** The archive's first line (docs/operations.md, "Workspace export and import"). */
export const ARCHIVE_FORMAT = 'cortex-workspace-archive';
export const ARCHIVE_VERSION = 1;
