import type { Db } from 'mongodb';
import type { IndexSpec } from './client.js';
import type { Blob } from './codec.js';
import { findById } from './client.js';

export type InterventionStatus = 'pending' | 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled';

/** One way the request reached a person; each delivery has its own public token. */
export interface DeliveryDoc { id: string; channel: 'api' | 'link'; token: string; status: 'pending' | 'responded' | 'closed'; createdAt: Date; respondedAt: Date | null }

export interface InterventionDoc {
  _id: string; workspaceId: string; brainId: string | null; jobId: string; traceId: string | null; pathwayId: string | null;
  nodeIndex: number;
  /** approval and pause: a pathway's human node; budget: a run stopped by a budget (docs/usage.md), answered by admins only. */
  kind: 'approval' | 'pause' | 'budget'; title: string; prompt: string; options: string[]; status: InterventionStatus;
  action: string | null; comment: string | null; fields: Blob | null; respondedBy: string | null; respondedAt: Date | null;
  expiresAt: Date | null; deliveries: DeliveryDoc[]; createdAt: Date; updatedAt: Date;
}

export const interventionIndexes: IndexSpec[] = [
  { collection: 'interventions', keys: { workspaceId: 1, brainId: 1, createdAt: -1 }, name: 'ws_brain_created' },
  { collection: 'interventions', keys: { workspaceId: 1, status: 1, createdAt: -1 }, name: 'ws_status' },
  { collection: 'interventions', keys: { workspaceId: 1, jobId: 1 }, name: 'ws_job' },
  { collection: 'interventions', keys: { workspaceId: 1, traceId: 1 }, name: 'ws_trace' },
  { collection: 'interventions', keys: { 'deliveries.token': 1 }, name: 'delivery_token' },
];

export function createInterventionRepo(db: Db) {
  const interventions = db.collection<InterventionDoc>('interventions');
  return {
    interventions,
    find: (workspaceId: string, id: string) => findById(interventions, id, { workspaceId }),
    byToken: (token: string) => interventions.findOne({ 'deliveries.token': token }),
  };
}
export type InterventionRepo = ReturnType<typeof createInterventionRepo>;
