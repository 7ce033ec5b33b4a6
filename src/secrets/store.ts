import type { SecretMeta, SecretPolicy } from './model.js';

/**
 * What the secret service asks of its store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter): one secret per (workspace, name), its value sealed. Every operation but key
 * rotation takes the workspace.
 */
export interface SecretStore {
  /** Creates or replaces `name`'s value; the creation time and creator of an existing secret are kept. */
  put(
    workspaceId: string,
    name: string,
    v: { sealed: string; keyId: string; by: string | null; policy: SecretPolicy },
  ): Promise<{ secret: SecretMeta; created: boolean }>;
  /** The workspace's secrets (never their values), by name. */
  list(workspaceId: string): Promise<SecretMeta[]>;
  /** Removes the secret; false when the workspace has none of that name. */
  remove(workspaceId: string, name: string): Promise<boolean>;
  /** The sealed values of `names` that exist. */
  sealedValues(workspaceId: string, names: string[]): Promise<Map<string, string>>;
  /** The use policies of `names` that exist (a secret stored before policies: admins, any host). */
  policies(workspaceId: string, names: string[]): Promise<Map<string, SecretPolicy>>;
  /** Key rotation: re-seals every secret not under `keyId` with `reseal`; returns how many changed. */
  resealAll(keyId: string, reseal: (sealed: string) => string): Promise<number>;
}
