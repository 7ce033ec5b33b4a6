import type { Db } from 'mongodb';
import type { IndexSpec } from './client.js';
import { guardDb } from './guard.js';
import { budgetIndexes, createBudgetRepo } from './budgets.js';
import { createInterventionRepo, interventionIndexes } from './interventions.js';
import { createJobRepo, jobIndexes } from './jobs.js';
import { createNeuronRepo, neuronIndexes } from './neurons.js';
import { createPathwayRepo, pathwayIndexes } from './pathways.js';
import { createReceptorRepo, receptorIndexes } from './receptors.js';
import { createReflexRepo, reflexIndexes } from './reflexes.js';
import { createShareRepo, shareIndexes } from './shares.js';
import { connectionIndexes, createConnectionRepo } from './connections.js';
import { createSkillRepo, skillIndexes } from './skills.js';
import { createKnowledgeRepo, knowledgeIndexes } from './knowledge.js';
import { createRunRepo, runIndexes } from './runs.js';
import { createStakeholderMapRepo, stakeholderMapIndexes } from './stakeholder-maps.js';
import { createUsageRepo, usageIndexes } from './usage.js';
import { createTraceRepo, traceIndexes } from './traces.js';
import { createWorkspaceRepo, workspaceIndexes } from './workspaces.js';
import { createMeetingRepo, meetingIndexes } from './meetings.js';

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
];

/** All repositories, built over one Db; calls made for an HTTP request are bounded by its deadline (guard.ts). */
export function createRepos(unguarded: Db) {
  const db = guardDb(unguarded);
  return {
    workspaces: createWorkspaceRepo(db),
    traces: createTraceRepo(db),
    jobs: createJobRepo(db),
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
    meetings: createMeetingRepo(db),
    stakeholderMaps: createStakeholderMapRepo(db),
  };
}
export type Repos = ReturnType<typeof createRepos>;
