import type { PathwayRecord as Pathway } from '../../src/pathways/index.js';
import type { Scope } from '../../src/kernel/scope.js';
import type { Services } from '../../src/compose/services.js';
import { toNeuronSlug } from '../../src/neurons/index.js';

/** At most this many neurons and this many pathways are listed (pages of 200). */
const LIST_MAX = 1_000;
const PAGE = 200;

interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: 'cortex';
}
const modelObject = (id: string, createdAt: Date): ModelObject => ({
  id,
  object: 'model',
  created: Math.floor(createdAt.getTime() / 1000),
  owned_by: 'cortex',
});

/**
 * What the caller may name as `model`: the active neurons it can invoke (of its brain when it sends
 * X-Brain-Id, with the workspace and core neurons visible there; else of the whole workspace) by
 * slug, or by id where two listed neurons share a slug; then, in a brain, its active pathways as
 * `pathway:<slug>`, or `pathway:<id>` where two pathways of the brain share a slug (pathway names
 * are free text and need not be unique).
 */
export async function listModels(
  services: Pick<Services, 'neurons' | 'pathways'>,
  scope: Scope,
): Promise<ModelObject[]> {
  const neurons = [];
  for (let cursor: string | undefined; neurons.length < LIST_MAX;) {
    const page = await services.neurons.list(scope, {
      limit: PAGE,
      offset: 0,
      cursor,
      sortBy: 'name',
      sortDirection: 'asc',
    });
    neurons.push(...page.items.map((v) => v.doc));
    if (!page.hasMore || !page.nextCursor) break;
    cursor = page.nextCursor;
  }
  const active = neurons.filter((n) => n.isActive);
  const seen = new Map<string, number>();
  for (const n of active) seen.set(n.name, (seen.get(n.name) ?? 0) + 1);
  const models = active.map((n) => modelObject(seen.get(n.name) === 1 ? n.name : n._id, n.createdAt));
  if (!scope.brainId) return models;
  const pathways: Pathway[] = [];
  for (let cursor: string | undefined; pathways.length < LIST_MAX;) {
    const page = await services.pathways.list(scope, {
      limit: PAGE,
      offset: 0,
      cursor,
      sortBy: 'name',
      sortDirection: 'asc',
    });
    pathways.push(...page.items);
    if (!page.hasMore || !page.nextCursor) break;
    cursor = page.nextCursor;
  }
  // A slug is named only when no other pathway of the brain (active or not) has it: resolution would refuse it.
  const slugOf = (p: Pathway) => p.slug ?? toNeuronSlug(p.name);
  const slugs = new Map<string, number>();
  for (const p of pathways) slugs.set(slugOf(p), (slugs.get(slugOf(p)) ?? 0) + 1);
  for (const p of pathways)
    if (p.isActive) {
      const slug = slugOf(p);
      models.push(modelObject(`pathway:${slug && slugs.get(slug) === 1 ? slug : p._id}`, p.createdAt));
    }
  return models;
}
