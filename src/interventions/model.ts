import { randomBytes } from 'node:crypto';
import type { Blob } from '../kernel/store/codec.js';
import { TOTAL_CAP } from '../kernel/store/paging.js';

/** Above this many rows a count stops (it reads TOTAL_CAP + 1: "more than TOTAL_CAP"). */
export const COUNT_CAP = TOTAL_CAP;

export type InterventionStatus = 'pending' | 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled';

/** One way the request reached a person; each delivery has its own public token. */
export interface DeliveryDoc {
  id: string;
  channel: 'api' | 'link';
  token: string;
  status: 'pending' | 'responded' | 'closed';
  createdAt: Date;
  respondedAt: Date | null;
}

/** A request for a person's decision on a run, with its deliveries; `fields` and `payload` stored as blobs. */
export interface InterventionDoc {
  _id: string;
  workspaceId: string;
  brainId: string | null;
  jobId: string;
  traceId: string | null;
  pathwayId: string | null;
  nodeIndex: number;
  /**
   * approval and pause: a pathway's human node; budget: a run stopped by a budget (docs/usage.md), answered
   * by admins only; tool_call: a neuron's tool call waiting for a person (neuron_config.tool_approval).
   */
  kind: 'approval' | 'pause' | 'budget' | 'tool_call';
  title: string;
  prompt: string;
  options: string[];
  status: InterventionStatus;
  action: string | null;
  comment: string | null;
  fields: Blob | null;
  /** What the person decides on (a tool call: its tool, redacted arguments and turn); absent on older records. */
  payload?: Blob | null;
  respondedBy: string | null;
  respondedAt: Date | null;
  expiresAt: Date | null;
  deliveries: DeliveryDoc[];
  createdAt: Date;
  updatedAt: Date;
}

/** An intervention as services see it: the answered `fields` decoded. */
export interface Intervention extends Omit<InterventionDoc, 'fields' | 'payload'> {
  fields: Record<string, unknown> | null;
  payload: Record<string, unknown> | null;
}

/** What an intervention list may filter on (the workspace is the call's own argument). */
export interface InterventionFilter {
  brainId?: string;
  jobId?: string;
  traceId?: string;
  status?: InterventionStatus;
}

/** The outcome an accepted answer records. */
export interface InterventionOutcome {
  status: InterventionStatus;
  action: string;
  comment: string | null;
  fields: Record<string, unknown> | null;
  respondedBy: string | null;
  respondedAt: Date;
  deliveries: DeliveryDoc[];
  updatedAt: Date;
}

const TOKEN_RE = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.[A-Za-z0-9_-]{32,}$/;
/** A delivery token: the intervention's id, a dot, and a secret. */
export const newDeliveryToken = (interventionId: string) =>
  `${interventionId}.${randomBytes(24).toString('base64url')}`;
/** The intervention id a token names, or null for a token of the older form. */
export const tokenKey = (token: string): string | null => TOKEN_RE.exec(token)?.[1] ?? null;

// The interventions area's entry in the kernel's event map (src/kernel/events.ts).
declare module '../kernel/events.js' {
  interface Events {
    /** An intervention was created or answered, once stored (signed webhooks subscribe). Awaited by the change. */
    'intervention.changed': { change: 'created' | 'answered'; intervention: Intervention };
  }
}
