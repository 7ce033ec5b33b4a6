/** The workflow bundle's entry: every workflow type the worker serves, by name. */
export { neuronRun } from './neuron-run.js';
export { pathwayRun } from './pathway-run.js';
export { receptorFire } from './receptor-fire.js';
export { systemJob } from './system-job.js';
export { ingest } from './ingest.js';
export { search } from './search.js';
export { liveTranscription } from './live-transcription.js';
export { transcription } from './transcription.js';
export { stakeholderExtract } from './stakeholder-extract.js';
export { usageReconcile } from './usage-reconcile.js';
export { webhookDelivery } from './webhook-delivery.js';
export { retentionSweep, workspaceErase } from './tenancy/index.js';
export { experimentRun } from './evaluations.js';
