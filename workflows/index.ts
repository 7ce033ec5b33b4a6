/** The workflow bundle's entry: every workflow type the worker serves, by name. */
export { neuronRun } from './runs/neuron-run.js';
export { pathwayRun } from './pathways/pathway-run.js';
export { receptorFire } from './receptors/receptor-fire.js';
export { systemJob } from './receptors/system-job.js';
export { ingest } from './knowledge/ingest.js';
export { search } from './search/search.js';
export { liveTranscription } from './meetings/live-transcription.js';
export { transcription } from './meetings/transcription.js';
export { stakeholderExtract } from './stakeholders/stakeholder-extract.js';
export { usageReconcile } from './usage/usage-reconcile.js';
export { webhookDelivery } from './webhooks/webhook-delivery.js';
export { retentionSweep, workspaceErase } from './tenancy/index.js';
export { experimentRun } from './evaluations/experiment-run.js';
