import type { Db } from 'mongodb';
import type { IndexSpec, StoreBackend } from '../kernel/store/client.js';
import { guardDb } from '../kernel/store/guard.js';
import { budgetIndexes, createBudgetRepo } from '../usage/index.js';
import { createInterventionRepo, interventionIndexes } from '../interventions/index.js';
import { createJobRepo, jobIndexes } from '../jobs/index.js';
import { createPathwayTrailRepo, createPathwayRepo, pathwayIndexes } from '../pathways/index.js';
import { createNeuronRepo, neuronIndexes } from '../neurons/index.js';
import { createReceptorRepo, receptorIndexes } from '../receptors/index.js';
import { createReflexRepo, reflexIndexes } from '../reflexes/index.js';
import { createShareRepo, shareIndexes } from '../shares/index.js';
import { connectionIndexes, createConnectionRepo } from '../connections/index.js';
import { createSkillRepo, skillIndexes } from '../skills/index.js';
import { createKnowledgeRepo, knowledgeIndexes } from '../knowledge/index.js';
import { createSearchSources } from '../search/index.js';
import { createRunRepo, runIndexes } from '../runs/index.js';
import { createStakeholderMapRepo, stakeholderMapIndexes } from '../stakeholders/index.js';
import { createUsageRepo, usageIndexes } from '../usage/index.js';
import { createTraceRepo, traceIndexes } from '../traces/index.js';
import { createWorkspaceRepo, withBrainCache, workspaceIndexes } from '../platform/index.js';
import { createMeetingRepo, meetingIndexes } from '../meetings/index.js';
import { createSecretRepo, secretIndexes } from '../secrets/index.js';
import { createWebhookRepo, webhookIndexes } from '../webhooks/index.js';
import { tenancyIndexes } from '../tenancy/index.js';
import { createEvaluationRepo, evaluationIndexes } from '../evaluations/index.js';

/** Every index the platform's query paths need; created at start-up by ensureIndexes. */
export const allIndexes: IndexSpec[] = [
  ...workspaceIndexes,
  ...traceIndexes,
  ...jobIndexes,
  ...interventionIndexes,
  ...neuronIndexes,
  ...receptorIndexes,
  ...reflexIndexes,
  ...pathwayIndexes,
  ...runIndexes,
  ...usageIndexes,
  ...budgetIndexes,
  ...shareIndexes,
  ...connectionIndexes,
  ...skillIndexes,
  ...knowledgeIndexes,
  ...meetingIndexes,
  ...stakeholderMapIndexes,
  ...secretIndexes,
  ...webhookIndexes,
  ...tenancyIndexes,
  ...evaluationIndexes,
];

export type { StoreBackend } from '../kernel/store/client.js';

/** FerretDB answers buildInfo with a `ferretdbVersion` field; MongoDB does not. */
export async function detectBackend(db: Db): Promise<StoreBackend> {
  const info = await db.admin().command({ buildInfo: 1 });
  return 'ferretdbVersion' in info || 'ferretdb' in info ? 'ferretdb' : 'mongodb';
}

export interface RepoOptions {
  /** Defaults to `ferretdb`: its forms are correct on MongoDB too, only slower there. */
  backend?: StoreBackend;
}

/** All repositories, built over one Db; calls made for an HTTP request are bounded by its deadline (guard.ts). */
export function createRepos(unguarded: Db, options: RepoOptions = {}) {
  const db = guardDb(unguarded);
  const backend: StoreBackend = options.backend ?? 'ferretdb';
  void backend;
  return {
    workspaces: withBrainCache(createWorkspaceRepo(db)),
    traces: createTraceRepo(db, backend),
    jobs: createJobRepo(db),
    pathwayTrails: createPathwayTrailRepo(db),
    interventions: createInterventionRepo(db),
    neurons: createNeuronRepo(db),
    receptors: createReceptorRepo(db),
    reflexes: createReflexRepo(db),
    pathways: createPathwayRepo(db),
    runs: createRunRepo(db),
    usage: createUsageRepo(db),
    budgets: createBudgetRepo(db),
    shares: createShareRepo(db),
    connections: createConnectionRepo(db),
    skills: createSkillRepo(db),
    knowledge: createKnowledgeRepo(db),
    searchSources: createSearchSources(db),
    meetings: createMeetingRepo(db),
    stakeholderMaps: createStakeholderMapRepo(db),
    secrets: createSecretRepo(db),
    webhooks: createWebhookRepo(db),
    evaluations: createEvaluationRepo(db),
  };
}
export type Repos = ReturnType<typeof createRepos>;
