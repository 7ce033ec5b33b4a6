import type { SecretBox } from '../crypto/secrets.js';
import type { SecretMeta, SecretPolicy } from './model.js';
import type { SecretStore } from './store.js';
import { notFound, validationError } from '../kernel/errors.js';
import type { Scope } from '../kernel/scope.js';

/** Secret names are what `{{ secrets.NAME }}` can name: a letter or `_`, then letters, digits or `_`. */
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * Workspace secrets (docs/pathways.md, "Secrets"): admins put, list and delete them; their values are
 * sealed at rest and never returned by any route. Runs read them through `reveal`, for the HTTP node's
 * templated headers, URL and body.
 */
export function createSecretService(d: { repo: SecretStore; box: SecretBox }) {
  const { repo, box } = d;
  const checkName = (name: string) => {
    if (!SECRET_NAME.test(name))
      throw validationError(`name: "${name}" is not a secret name (a letter or _, then letters, digits or _; ≤ 64)`);
  };
  return {
    /** Creates or replaces the secret: its value and its use policy (PUT replaces both). */
    async put(
      scope: Scope,
      name: string,
      value: string,
      policy: SecretPolicy = { allowedHosts: null, usableBy: 'admins' },
    ): Promise<{ secret: SecretMeta; created: boolean }> {
      checkName(name);
      return repo.put(scope.workspaceId, name, {
        sealed: box.seal(value),
        keyId: box.keyId,
        by: scope.userId ?? null,
        policy: {
          allowedHosts: policy.allowedHosts?.length ? [...new Set(policy.allowedHosts)] : null,
          usableBy: policy.usableBy,
        },
      });
    },
    /** The use policies of the named secrets that exist (checked when a graph is saved and when it runs). */
    policies: (workspaceId: string, names: string[]): Promise<Map<string, SecretPolicy>> =>
      repo.policies(workspaceId, names),
    list: (scope: Scope): Promise<SecretMeta[]> => repo.list(scope.workspaceId),
    async remove(scope: Scope, name: string): Promise<void> {
      if (!(await repo.remove(scope.workspaceId, name))) throw notFound('Secret');
    },
    /** The plain values of `names` in the workspace; a name with no secret is left out (the caller reports it). */
    async reveal(workspaceId: string, names: string[]): Promise<Map<string, string>> {
      const sealed = await repo.sealedValues(workspaceId, names);
      return new Map([...sealed].map(([n, s]) => [n, box.open(s)]));
    },
    /** Key rotation: re-seals every secret under the current key. */
    resealAll: (): Promise<number> => repo.resealAll(box.keyId, (s) => box.reseal(s)),
  };
}
export type SecretService = ReturnType<typeof createSecretService>;
