import type { Db } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { isDuplicateKey } from '../kernel/store/claims.js';
import { uuidFromName } from '../kernel/ids.js';
import type { SecretDoc, SecretMeta, SecretPolicy } from './model.js';
import type { SecretStore } from './store.js';

export const secretIndexes: IndexSpec[] = [
  { collection: 'workspace_secrets', keys: { workspaceId: 1, name: 1 }, unique: true, name: 'ws_name_unique' },
];

const secretKey = (workspaceId: string, name: string) => uuidFromName(`secret:${workspaceId}:${name}`);
const meta = ({ _id: _, sealed: __, ...m }: SecretDoc): SecretMeta => m;

/** The workspace secret store on MongoDB (and FerretDB); every operation is scoped to the workspace in its filter. */
export function createSecretRepo(db: Db): SecretStore {
  const secrets = db.collection<SecretDoc>('workspace_secrets');
  return {
    /** Creates or replaces `name`'s value; the creation time and creator of an existing secret are kept. */
    async put(
      workspaceId: string,
      name: string,
      v: { sealed: string; keyId: string; by: string | null; policy: SecretPolicy },
    ): Promise<{ secret: SecretMeta; created: boolean }> {
      const _id = secretKey(workspaceId, name);
      const now = new Date();
      const upsert = () =>
        secrets.findOneAndUpdate(
          { _id, workspaceId },
          {
            $set: {
              sealed: v.sealed,
              keyId: v.keyId,
              allowedHosts: v.policy.allowedHosts,
              usableBy: v.policy.usableBy,
              updatedAt: now,
            },
            $setOnInsert: { workspaceId, name, createdBy: v.by, createdAt: now },
          },
          { upsert: true, returnDocument: 'after', includeResultMetadata: true },
        );
      // Two first puts of one name race on the key: the loser's upsert fails on it and, tried again, replaces.
      const r = await upsert().catch((e: unknown) => (isDuplicateKey(e) ? upsert() : Promise.reject(e)));
      return { secret: meta(r.value!), created: !r.lastErrorObject?.updatedExisting };
    },
    list: async (workspaceId: string): Promise<SecretMeta[]> =>
      (await secrets.find({ workspaceId }).sort({ name: 1 }).toArray()).map(meta),
    remove: async (workspaceId: string, name: string): Promise<boolean> =>
      (await secrets.deleteOne({ _id: secretKey(workspaceId, name), workspaceId })).deletedCount === 1,
    /** The sealed values of `names` that exist (by key, in parallel). */
    async sealedValues(workspaceId: string, names: string[]): Promise<Map<string, string>> {
      const docs = await Promise.all(
        [...new Set(names)].map((n) => secrets.findOne({ _id: secretKey(workspaceId, n), workspaceId })),
      );
      return new Map(docs.flatMap((d) => (d ? [[d.name, d.sealed] as const] : [])));
    },
    /** The use policies of `names` that exist (a secret stored before policies: admins, any host). */
    async policies(workspaceId: string, names: string[]): Promise<Map<string, SecretPolicy>> {
      const docs = await Promise.all(
        [...new Set(names)].map((n) =>
          secrets.findOne(
            { _id: secretKey(workspaceId, n), workspaceId },
            { projection: { name: 1, allowedHosts: 1, usableBy: 1 } },
          ),
        ),
      );
      return new Map(
        docs.flatMap((d) =>
          d ? [[d.name, { allowedHosts: d.allowedHosts ?? null, usableBy: d.usableBy ?? 'admins' }] as const] : [],
        ),
      );
    },
    /** Key rotation: re-seals every secret not under `keyId` with `reseal`; returns how many changed. */
    async resealAll(keyId: string, reseal: (sealed: string) => string): Promise<number> {
      let changed = 0;
      for await (const d of secrets.find({ keyId: { $ne: keyId } })) {
        const r = await secrets.updateOne(
          { _id: d._id, workspaceId: d.workspaceId, sealed: d.sealed },
          { $set: { sealed: reseal(d.sealed), keyId } },
        );
        changed += r.modifiedCount;
      }
      return changed;
    },
  };
}
