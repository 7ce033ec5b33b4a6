/**
 * The two rules neurons lend to other services: the slug of a name and the role a scope value
 * needs. A leaf (it imports no service), so receptors.ts takes them from here while neurons.ts
 * imports the receptor service's type.
 */
import { forbidden } from '../kernel/errors.js';
import type { NeuronScope } from './schemas.js';
import { hasRole, type Scope } from '../kernel/scope.js';

/**
 * name → slug: accents folded, lowercase, every run of characters outside [a-z0-9] becomes '-',
 * no leading or trailing '-', at most 100 characters. '' means the name had no letter or digit.
 */
export function toNeuronSlug(name: string): string {
  const folded = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase();
  return folded
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 100)
    .replace(/-+$/, '');
}

/** The role a scope value needs: workspace → workspace_admin, core → core_admin, brain → none (neurons and reflexes alike). */
export function assertScopeRole(scope: Scope, target: NeuronScope): void {
  if (target === 'workspace' && !hasRole(scope, 'workspace_admin'))
    throw forbidden('Scope workspace requires role workspace_admin');
  if (target === 'core' && !hasRole(scope, 'core_admin')) throw forbidden('Scope core requires role core_admin');
}
