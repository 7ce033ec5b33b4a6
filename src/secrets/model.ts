/** Who may use a secret: graphs saved by an admin only, or also by an editor of the pathway. */
type SecretUsableBy = 'admins' | 'editors';
/** A secret's use policy (docs/pathways.md, "Secrets"). */
export interface SecretPolicy {
  allowedHosts: string[] | null;
  usableBy: SecretUsableBy;
}

/**
 * A workspace secret (an API token a pathway's HTTP node sends, `{{ secrets.NAME }}`): the value is
 * sealed (src/crypto/secrets.ts) and no route returns it. `_id` is a name-based UUID of (workspace,
 * name), so one secret is found and replaced by key.
 */
export interface SecretDoc {
  _id: string;
  workspaceId: string;
  name: string;
  sealed: string;
  keyId: string;
  /** The only hosts the secret may be sent to (exact or `*.suffix`); null or absent: any the guard allows. */
  allowedHosts?: string[] | null;
  /** Whose saved graphs may use it; absent (secrets stored before policies): admins. */
  usableBy?: SecretUsableBy;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A secret as services see it: everything but the sealed value. */
export type SecretMeta = Omit<SecretDoc, '_id' | 'sealed'>;
