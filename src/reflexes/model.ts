import type { Blob } from '../kernel/store/codec.js';

/** One integration and the tools of it the reflex exposes. */
export interface ReflexToolSet {
  integrationId: string;
  tools: string[];
}

/** A reusable bundle of tools attached to neurons (docs/tools.md). `metadata` is client JSON (a blob). */
export interface ReflexDoc {
  _id: string;
  workspaceId: string;
  brainId: string | null;
  name: string;
  type: 'sensory' | 'effector';
  description: string;
  tools: ReflexToolSet[];
  metadata: Blob;
  isActive: boolean;
  scope: 'brain' | 'workspace' | 'core';
  /**
   * Who last saved the reflex's tools and metadata (which name the integration and where its token
   * goes) and whether they were a workspace admin then: a connection token is sent to a server or
   * URL the metadata chose only under their privilege (src/expressions/credentials.ts). Absent on
   * reflexes saved before: nobody, not an admin.
   */
  savedBy?: string | null;
  savedByAdmin?: boolean;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A neuron–reflex assignment; the natural `_id` (`neuronId:reflexId`) makes a second assignment a duplicate key. */
export interface NeuronReflexDoc {
  _id: string;
  workspaceId: string;
  neuronId: string;
  reflexId: string;
  createdBy: string | null;
  createdAt: Date;
}

/** A reflex as the repository returns it: the metadata decoded. */
export type Reflex = Omit<ReflexDoc, 'metadata'> & { metadata: Record<string, unknown> };
/** The fields an update may set. */
export type ReflexChange = Partial<
  Pick<
    Reflex,
    'name' | 'description' | 'tools' | 'metadata' | 'isActive' | 'scope' | 'updatedAt' | 'savedBy' | 'savedByAdmin'
  >
>;
/** What a list shows: the workspace's reflexes, visible in `brainId` when given, of `type`, matching `search`. */
export interface ReflexListWhere {
  brainId?: string;
  type?: ReflexDoc['type'];
  search?: string;
}
