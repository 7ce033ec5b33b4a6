/** The platform's tenancy root: workspaces, their brains and their API keys, as stored. */

/** A workspace: the tenant every other record belongs to. */
export interface WorkspaceDoc {
  _id: string;
  slug: string;
  name: string;
  createdAt: Date;
  updatedAt: Date;
}
/** A brain of a workspace. */
export interface BrainDoc {
  _id: string;
  workspaceId: string;
  name: string;
  createdAt: Date;
  updatedAt: Date;
}
/** A workspace's API key: its hash (the secret is never stored), its roles and its use. */
export interface ApiKeyDoc {
  _id: string;
  workspaceId: string;
  name: string;
  hash: string;
  prefix: string;
  roles: string[];
  createdBy: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  /** Per-key request limit set by an admin (null: the platform default). */
  rateLimit?: { points: number; durationS: number } | null;
}

/** A workspace slug: lowercase words and dashes, never shaped like a UUID (ids and slugs share the path segment). */
export const SLUG_RE = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;
