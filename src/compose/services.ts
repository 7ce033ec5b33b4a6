import type { Deps } from './deps.js';
import { createBus } from '../kernel/events.js';
import { createAuthService, createResourceEvents, createRecentCredentials } from '../platform/index.js';
import { createHealthService } from './health.js';
import { createInterventionService } from '../interventions/index.js';
import { createJobService } from '../jobs/index.js';
import { createNeuronService } from '../neurons/index.js';
import {
  createPathwayRunService,
  createPathwayService,
  createPathwayHttpService,
  HTTP_NODE_MAX_RESPONSE_BYTES,
} from '../pathways/index.js';
import {
  createChannelBindingService,
  createReceptorFireService,
  createReceptorService,
  createScheduleService,
} from '../receptors/index.js';
import { createSearchService } from '../search/index.js';
import { createSkillService } from '../skills/index.js';
import { createShareService } from '../shares/index.js';
import { createGuard } from '../net/guard.js';
import { createSecretBox } from '../crypto/secrets.js';
import { createConnectionService } from '../connections/index.js';
import { createSecretService } from '../secrets/index.js';
import { createWebhookService, endEvents } from '../webhooks/index.js';
import { HTTP_MAX_TIMEOUT_MS } from '../pathways/walk.js';
import { createRemoteTools } from '../tools/remote.js';
import { createReflexService } from '../reflexes/index.js';
import { createRunService, createFirstTurns } from '../runs/index.js';
import { createModelRegistry } from '../llm/registry.js';
import { createTraceService } from '../traces/index.js';
import { createUsageService } from '../usage/index.js';
import { createBudgetService } from '../usage/index.js';
import { createUsageReconciler } from '../usage/index.js';
import { createUsageCounters } from '../usage/index.js';
import { createBlobStore } from '../blobs/store.js';
import { createTenancyService, createTenancyStore } from '../tenancy/index.js';
import { createEmbedder } from '../embeddings/index.js';
import { createDocumentService } from '../knowledge/index.js';
import { createIngestService } from '../knowledge/index.js';
import { createMemoryService } from '../knowledge/index.js';
import { createCatalogService } from '../knowledge/index.js';
import { createMeetingService } from '../meetings/index.js';
import { createTranscriptionService } from '../meetings/index.js';
import { createVocabularyService } from '../meetings/index.js';
import { createStakeholderMapService } from '../stakeholders/index.js';
import { createEvaluationService } from '../evaluations/index.js';

/**
 * The first stage of the wiring: credentials, traces, jobs and interventions, resource events, receptors
 * and their targets (neurons, pathways), reflexes, skills, the outbound guard and the model registry.
 */
function createCoreServices(deps: Deps) {
  // The event bus (src/kernel/events.ts): where one area reacts to another's change, the one that
  // changes publishes and the other subscribes as it is created (job.status and intervention.changed: webhooks; stimulus:
  // receptor fires; transcript.finalized: stakeholder maps; neuron.* and pathway.*: receptors, and
  // reflexes for neuron.removing; job.restart: the run service answers). Subscribers of one event
  // are called in the order they subscribed, so the stages' order, and the order within each, matter where noted.
  const bus = createBus();
  // Credentials recently verified against the store, shared through Redis (the failed-authentication limiter lets them through).
  const recent = createRecentCredentials(deps.redis, deps.config.REDIS_PREFIX, deps.log);
  const tenancyStore = createTenancyStore(deps.db);
  const auth = createAuthService({
    config: deps.config,
    repo: deps.repos.workspaces,
    recent,
    log: deps.log,
    isDeleted: (ws) => tenancyStore.isDeleted(ws),
  });
  const traces = createTraceService({ repo: deps.repos.traces, streams: deps.streams, log: deps.log });
  const health = createHealthService(deps);
  const interventions = createInterventionService({
    repo: deps.repos.interventions,
    temporal: deps.temporal.client,
    bus,
  });
  // A cancelled run closes its own open interventions (its failure step): the run is their one writer.
  const jobs = createJobService({
    repo: deps.repos.jobs,
    streams: deps.streams,
    temporal: deps.temporal.client,
    config: deps.config,
    log: deps.log,
    bus,
  });
  const schedules = createScheduleService({ temporal: deps.temporal.client, config: deps.config });
  // Every create, update and delete of a resource appends to the workspace's resource event stream.
  const events = createResourceEvents({ streams: deps.streams, log: deps.log, bus });
  const neurons = createNeuronService({
    repo: deps.repos.neurons,
    workspaces: deps.repos.workspaces,
    events,
    bus,
    // The registry is built below; a neuron is only written once the services exist.
    models: { resolve: (id: string) => models.resolve(id) },
  });
  const c = deps.config;
  // The one outbound-HTTP guard (src/net/guard.ts): every user-influenced URL goes through it,
  // when it is saved (checkSaved) and when it is called.
  const guard = createGuard({ allowHosts: c.OUTBOUND_ALLOW_HOSTS });
  // Subscribes to neuron.removing before receptors do: a removed neuron's reflex links go before its receptors.
  const reflexes = createReflexService({
    repo: deps.repos.reflexes,
    workspaces: deps.repos.workspaces,
    neurons,
    events,
    guard,
    integrations: deps.repos.connections.integration,
    bus,
  });
  const skills = createSkillService({ repo: deps.repos.skills, workspaces: deps.repos.workspaces, events });
  const pathways = createPathwayService({
    repo: deps.repos.pathways,
    events,
    bus,
    guard,
    credentials: { policies: deps.repos.secrets.policies, integration: deps.repos.connections.integration },
  });
  // Receptors follow their targets through the bus (neuron.*, pathway.*), and change them (is_active) through these.
  const receptors = createReceptorService({
    repo: deps.repos.receptors,
    schedules,
    workspaces: deps.repos.workspaces,
    reflexes: deps.repos.reflexes,
    events,
    neurons,
    pathways,
    bus,
  });
  const models = createModelRegistry({
    // A bare model name goes to OpenAI-compatible when one is configured, else to the offline model.
    defaultProvider: c.OPENAI_BASE_URL || c.OPENAI_API_KEY ? 'openai' : 'local',
    defaultModel: c.DEFAULT_MODEL,
    openai: { baseURL: c.OPENAI_BASE_URL, apiKey: c.OPENAI_API_KEY },
    anthropic: { apiKey: c.ANTHROPIC_API_KEY, baseURL: c.ANTHROPIC_BASE_URL },
  });
  return {
    bus,
    recent,
    tenancyStore,
    auth,
    traces,
    health,
    interventions,
    jobs,
    schedules,
    events,
    receptors,
    neurons,
    guard,
    reflexes,
    skills,
    pathways,
    models,
  };
}

/** Usage and budgets, secrets, webhooks, connections and pathway HTTP nodes (after the core services). */
function createAccountServices(deps: Deps, core: ReturnType<typeof createCoreServices>) {
  const { jobs, guard, pathways, bus } = core;
  const c = deps.config;
  // The usage counters (Redis) every ledger write adds to; budgets and the usage routes read them (docs/usage.md).
  const usageCounters = createUsageCounters(deps.redis, c.REDIS_PREFIX);
  const usage = createUsageService({ repo: deps.repos.usage, counters: usageCounters });
  const budgets = createBudgetService({ repo: deps.repos.budgets, usage: deps.repos.usage, counters: usageCounters });
  const usageReconciler = createUsageReconciler({
    usage: deps.repos.usage,
    counters: usageCounters,
    budgetRepo: deps.repos.budgets,
    budgets,
    workspaces: deps.repos.workspaces,
    temporal: deps.temporal.client,
    config: c,
    log: deps.log,
  });
  const remote = createRemoteTools({ guard });
  const box = createSecretBox(c);
  // Workspace secrets (`{{ secrets.NAME }}` in HTTP nodes), sealed like connection tokens.
  const secrets = createSecretService({ repo: deps.repos.secrets, box });
  // Signed webhooks (docs/webhooks.md): job and intervention changes become deliveries to the workspace's endpoints.
  const webhooks = createWebhookService({
    repo: deps.repos.webhooks,
    box,
    guard: createGuard({ allowHosts: c.OUTBOUND_ALLOW_HOSTS, timeoutMs: 15_000, maxResponseBytes: 64 * 1024 }),
    temporal: deps.temporal.client,
    config: c,
    log: deps.log,
    bus,
  });
  // A job's end is recorded with its terminal claim (the claim's insert carries the outbox mark):
  // the outbox's follower fans each unannounced end out, whichever process stored it.
  webhooks.addSource({
    name: 'job-ends',
    due: async (limit) =>
      (await jobs.unannouncedEnds(limit)).map((end) => ({
        events: endEvents(end),
        hold: (until) => jobs.holdUnannounced(end.claimId, end.outboxAt, until),
        settle: () => jobs.markAnnounced(end.claimId),
      })),
  });
  // The follower stops with the store connection (shutdown, a test app's close).
  deps.mongo.once('topologyClosed', () => void webhooks.stopFollowing());
  const connections = createConnectionService({
    repo: deps.repos.connections,
    reflexes: deps.repos.reflexes,
    box,
    guard,
    config: c,
    log: deps.log,
  });
  // Pathway http nodes: their own cap on the answer (it is kept in the run's history), the same checks.
  // The socket timeout is the longest a node may set; each call's own timeout_ms aborts it sooner.
  const pathwayHttp = createPathwayHttpService({
    guard: createGuard({
      allowHosts: c.OUTBOUND_ALLOW_HOSTS,
      maxResponseBytes: HTTP_NODE_MAX_RESPONSE_BYTES,
      timeoutMs: HTTP_MAX_TIMEOUT_MS,
    }),
    secrets,
    connections,
    // The job's pathway and pinned version say whose graph it is (an inline graph: the run's caller).
    saverOf: async (call) => {
      const job = await jobs.repoFind(call.jobId);
      if (!job || job.workspaceId !== call.scope.workspaceId) return { userId: null, admin: false, editor: false };
      return pathways.graphSaver(call.scope, job.pathwayId ?? null, job.pathwayVersion ?? null);
    },
  });
  return { usage, budgets, usageReconciler, remote, secrets, webhooks, connections, pathwayHttp };
}

type Core = ReturnType<typeof createCoreServices> & ReturnType<typeof createAccountServices>;

/** Runs: neuron and pathway runs, receptor fires and channel bindings. */
function createRunServices(deps: Deps, core: Core) {
  const { jobs, traces, neurons, reflexes, models, usage, budgets, interventions, remote, connections } = core;
  const { pathways, receptors, events, bus } = core;
  const c = deps.config;
  // An invoke's first model turn starts in the API; the run's workflow adopts it (first-turns.ts).
  const firstTurns = createFirstTurns({ redis: deps.redis, prefix: c.REDIS_PREFIX, log: deps.log });
  const runs = createRunService({
    config: c,
    jobs,
    traces,
    neurons,
    reflexes,
    models,
    runLog: deps.repos.runs,
    usage,
    budgets,
    interventions,
    remote,
    connections,
    firstTurns,
    log: deps.log,
    bus,
  });
  const pathwayRuns = createPathwayRunService({
    config: c,
    jobs,
    trails: deps.repos.pathwayTrails,
    traces,
    neurons,
    pathways,
    interventions,
    models,
    usage,
    budgets,
    bus,
  });
  const receptorFires = createReceptorFireService({
    repo: deps.repos.receptors,
    receptors,
    neurons,
    pathways,
    pathwayRuns,
    jobs,
    traces,
    usage,
    events,
    log: deps.log,
    bus,
  });
  const channelBindings = createChannelBindingService({
    repo: deps.repos.receptors,
    receptors,
    fires: receptorFires,
    config: c,
  });
  return { firstTurns, runs, pathwayRuns, receptorFires, channelBindings };
}

/** Knowledge (documents, memories, the catalog and their ingest) over the blob store and the embedder. */
function createKnowledgeServices(deps: Deps, core: Core) {
  const { jobs, usage, models, events, skills } = core;
  const c = deps.config;
  // Knowledge (docs/knowledge.md): bodies in the blob store, text chunked and embedded by `ingest` jobs.
  const blobs = createBlobStore(c);
  const embedder = createEmbedder(c);
  // URL ingest reads up to ASSET_MAX_BYTES through the same guard (another cap, the same checks).
  const ingestGuard = createGuard({
    allowHosts: c.OUTBOUND_ALLOW_HOSTS,
    maxResponseBytes: c.ASSET_MAX_BYTES,
    timeoutMs: 60_000,
  });
  const ingest = createIngestService({
    repo: deps.repos.knowledge,
    blobs,
    embedder,
    jobs,
    usage,
    models,
    config: c,
    events,
  });
  const documents = createDocumentService({
    repo: deps.repos.knowledge,
    workspaces: deps.repos.workspaces,
    blobs,
    ingest,
    events,
    guard: ingestGuard,
    config: c,
    log: deps.log,
  });
  const memories = createMemoryService({
    repo: deps.repos.knowledge,
    workspaces: deps.repos.workspaces,
    blobs,
    ingest,
    events,
    guard: ingestGuard,
    config: c,
    log: deps.log,
  });
  const catalog = createCatalogService({ repo: deps.repos.knowledge, documents, memories, skills, events });
  return { blobs, embedder, ingest, documents, memories, catalog };
}

/** The areas built last: meetings and speech, stakeholder maps, share links, search, tenancy and evaluations. */
function createAreaServices(
  deps: Deps,
  core: Core & ReturnType<typeof createRunServices> & ReturnType<typeof createKnowledgeServices>,
) {
  const { blobs, jobs, documents, usage, models, events, budgets, receptors, receptorFires, recent } = core;
  const { embedder, tenancyStore, neurons, pathways, pathwayRuns, traces, webhooks, bus } = core;
  const c = deps.config;
  // Meetings and speech (docs/meetings.md): chunks and attachments in the blob store, transcripts as artifacts.
  const meetings = createMeetingService({ repo: deps.repos.meetings, workspaces: deps.repos.workspaces, events });
  const vocabulary = createVocabularyService({
    repo: deps.repos.meetings,
    workspaces: deps.repos.workspaces,
    redis: deps.redis,
    prefix: c.REDIS_PREFIX,
  });
  const transcription = createTranscriptionService({
    repo: deps.repos.meetings,
    workspaces: deps.repos.workspaces,
    blobs,
    jobs,
    meetings,
    documents,
    vocabulary,
    streams: deps.streams,
    temporal: deps.temporal.client,
    config: c,
    log: deps.log,
    usage,
    bus,
  });
  // Stakeholder maps (docs/stakeholder-maps.md): extraction reads finalized meetings' transcripts.
  const stakeholderMaps = createStakeholderMapService({
    repo: deps.repos.stakeholderMaps,
    workspaces: deps.repos.workspaces,
    jobs,
    usage,
    models,
    events,
    config: c,
    meetings,
    bus,
  });
  const shares = createShareService({
    repo: deps.repos.shares,
    jobs: deps.repos.jobs,
    traces: deps.repos.traces,
    admitRun: jobs.admitRun,
    budgets,
    workspaces: deps.repos.workspaces,
    receptors,
    fires: receptorFires,
    recent,
  });
  const search = createSearchService({
    sources: deps.repos.searchSources,
    redis: deps.redis,
    streams: deps.streams,
    embedder,
    jobs,
    usage,
    config: c,
    log: deps.log,
  });
  // Retention, storage report, workspace deletion, export and import (src/tenancy, docs/operations.md).
  const tenancy = createTenancyService({
    store: tenancyStore,
    redis: deps.redis,
    streams: deps.streams,
    blobs,
    temporal: deps.temporal.client,
    config: c,
    log: deps.log,
    workspaceIds: () => deps.repos.workspaces.workspaceIds(),
    registerSchedules: (ws) => receptors.reconcileSchedules(ws),
  });
  // Evaluations (docs/evaluations.md): datasets, and experiments whose items run as child jobs.
  const evaluations = createEvaluationService({
    store: deps.repos.evaluations,
    neurons,
    pathways,
    pathwayRuns,
    jobs,
    usage,
    runContext: (jobId) => deps.repos.runs.context(jobId),
    traceMessages: (scope, traceId, newest) => traces.messages(scope, traceId, undefined, newest),
    webhooks,
    temporal: deps.temporal.client,
    taskQueue: c.TEMPORAL_TASK_QUEUE,
    log: deps.log,
  });
  return { evaluations, tenancy, search, stakeholderMaps, meetings, vocabulary, transcription, shares };
}

/** Builds every service from the one dependency bag; the API and the worker share it. */
export function createServices(deps: Deps) {
  const core0 = createCoreServices(deps);
  const core = { ...core0, ...createAccountServices(deps, core0) };
  const runStage = { ...core, ...createRunServices(deps, core) };
  const knowledge = { ...runStage, ...createKnowledgeServices(deps, core) };
  // The stages' wiring parts (the bus, the recent-credential cache, the tenancy store) stay inside.
  const {
    bus: _bus,
    recent: _recent,
    tenancyStore: _tenancyStore,
    ...services
  } = {
    ...knowledge,
    ...createAreaServices(deps, knowledge),
  };
  return {
    ...services,
    workspaces: deps.repos.workspaces,
    streams: deps.streams,
    redis: deps.redis,
    config: deps.config,
  };
}
export type Services = ReturnType<typeof createServices>;
