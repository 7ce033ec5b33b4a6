import { randomUUID } from 'node:crypto';
import type { StakeholderMap } from './model.js';
import { conflict, notFound, validationError } from '../kernel/errors.js';
import { uuidFromName } from '../kernel/ids.js';
import type { ExtractBody } from './schemas.js';
import { systemScope, type Scope } from '../kernel/scope.js';
import { answerToOps, extractionMessages, extractionSchema, MAX_TRANSCRIPT_CHARS, parseAnswer } from './extraction.js';
import type { StakeholderExtractInput } from '../temporal/definitions.js';
import type { MapReads, StakeholderMapDeps } from './service-common.js';
import type { MapEditing } from './editing.js';

/** The offline local/* models answer with fixed text: they can never produce an extraction. */
const canExtract = (modelId: string) => !modelId.startsWith('local/');

interface ExtractionRequest {
  jobId: string;
  model: string;
  text: string;
  source: { type: 'text' | 'meeting'; id: string | null };
  occurredAt: Date;
}

/** What extraction is built from: the map deps, the map reads and editing (no state of its own). */
interface ExtractionContext {
  d: StakeholderMapDeps;
  reads: MapReads;
  editing: MapEditing;
}

/** Stores an extraction's input and starts its job (the job id is the workflow id). */
async function startExtraction({ d }: ExtractionContext, scope: Scope, m: StakeholderMap, x: ExtractionRequest) {
  const text = x.text.slice(0, MAX_TRANSCRIPT_CHARS);
  await d.repo.recordExtraction({
    _id: x.jobId,
    workspaceId: m.workspaceId,
    brainId: m.brainId,
    mapId: m._id,
    model: x.model,
    source: x.source,
    text,
    truncated: x.text.length > text.length,
    occurredAt: x.occurredAt,
    userId: scope.userId,
    apiKeyId: scope.apiKeyId,
    createdAt: new Date(),
  });
  const { job } = await d.jobs.create(scope, { id: x.jobId, kind: 'stakeholder_extract', brainId: m.brainId });
  const input: StakeholderExtractInput = {
    jobId: x.jobId,
    workspaceId: m.workspaceId,
    brainId: m.brainId,
    mapId: m._id,
  };
  await d.jobs.startWorkflow(
    job,
    'stakeholderExtract',
    [input],
    `stakeholder extraction into ${m.name} (${x.source.type}${x.source.id ? ` ${x.source.id}` : ''})`,
  );
  return { job_id: x.jobId, resource_id: m._id, status: job.status };
}

const loadExtraction = async ({ d }: ExtractionContext, i: StakeholderExtractInput) => {
  const x = await d.repo.extraction(i.workspaceId, i.jobId);
  if (!x) throw notFound('Extraction');
  return x;
};
const loadMap = async ({ d }: ExtractionContext, i: StakeholderExtractInput) => {
  const m = await d.repo.mapHead(i.workspaceId, i.mapId);
  if (!m) throw notFound('Stakeholder map');
  return m;
};

/** The transcript a request names: its text, or a finalized meeting's (in the caller's workspace and brain). */
async function transcriptOf({ d }: ExtractionContext, scope: Scope, body: ExtractBody) {
  let text = body.text;
  let occurredAt = new Date();
  let brainId: string | undefined;
  if (body.meeting_id) {
    const src = d.meetings ?? null;
    const t = src ? await src.transcript(scope.workspaceId, body.meeting_id.toLowerCase()) : null;
    if (!t || (scope.brainId && t.brainId !== scope.brainId)) throw notFound('Meeting');
    if (text === undefined) {
      if (!t.finalizedAt) throw conflict('The meeting transcript is not finalized yet');
      text = t.text;
    }
    occurredAt = t.finalizedAt ?? occurredAt;
    brainId = t.brainId;
  }
  if (!text?.trim()) throw validationError('text: the transcript is empty');
  return { text, occurredAt, brainId };
}

/** Starting extractions: a request's transcript, or a finalized meeting's (the meeting hook). */
function createExtractionStarts(ctx: ExtractionContext) {
  const { d, reads } = ctx;
  return {
    /** POST /v1/stakeholder-map/extract: a transcript (text, or a meeting's) into a map, as a job. */
    async extract(scope: Scope, body: ExtractBody) {
      // An unknown model, or one that cannot answer with schema-shaped JSON, is a 400 now, not a failed job later.
      const model = d.models.resolve(body.model ?? d.config.DEFAULT_MODEL).id;
      if (!canExtract(model))
        throw validationError(
          `model: ${model} cannot answer with structured JSON; name an openai/… or anthropic/… model (or set DEFAULT_MODEL)`,
        );
      const { text, occurredAt, brainId } = await transcriptOf(ctx, scope, body);
      const m = body.resource_id ? await reads.get(scope, body.resource_id) : await reads.ensureDefault(scope, brainId);
      return startExtraction(ctx, scope, m, {
        jobId: randomUUID(),
        model,
        text,
        source: body.meeting_id ? { type: 'meeting', id: body.meeting_id.toLowerCase() } : { type: 'text', id: null },
        occurredAt,
      });
    },

    /**
     * The meeting hook (docs/stakeholder-maps.md): the meetings family calls this when a meeting's
     * transcript is finalized. One extraction per meeting and finalization (a name-derived job id),
     * into the default map of the meeting's brain, with DEFAULT_MODEL.
     */
    async extractFromMeeting(
      workspaceId: string,
      meeting: { id: string; brainId: string; text: string; finalizedAt: Date },
    ) {
      const model = d.models.resolve(d.config.DEFAULT_MODEL).id;
      // Nothing to do without a model that can answer (a fresh machine on local/echo): no job that can only fail.
      if (!canExtract(model) || !meeting.text.trim()) return null;
      const scope = systemScope(workspaceId, meeting.brainId);
      const m = await reads.ensureDefault(scope, meeting.brainId);
      const jobId = uuidFromName(
        `stakeholder-extract:${workspaceId}:${meeting.id}:${meeting.finalizedAt.toISOString()}`,
      );
      return startExtraction(ctx, scope, m, {
        jobId,
        model,
        text: meeting.text,
        source: { type: 'meeting', id: meeting.id },
        occurredAt: meeting.finalizedAt,
      });
    },
  };
}

/** The `stakeholder_extract` job's activity steps: plan (ask the model), apply (commit the ops), fail. */
function createExtractionSteps(ctx: ExtractionContext) {
  const { d, reads, editing } = ctx;
  const { repo } = d;
  return {
    /** Activity step 1: ask the model (structured JSON), check the answer, store it as ops. Idempotent: stored ops are reused. */
    async extractPlan(i: StakeholderExtractInput, attempt: number): Promise<{ ops: number }> {
      const x = await loadExtraction(ctx, i);
      if (x.ops) return { ops: x.ops.length };
      await d.jobs.transition(i.workspaceId, i.jobId, {
        status: 'running',
        progress: 10,
        currentStep: 'asking the model',
      });
      const m = await loadMap(ctx, i);
      const model = d.models.resolve(x.model);
      const res = await model.provider.chat({
        model: model.model,
        messages: extractionMessages((await reads.live(m)).graph, x.text),
        responseFormat: 'json',
        jsonSchema: { name: 'stakeholder_map_extraction', schema: extractionSchema() },
        temperature: 0,
        maxTokens: 4000,
      });
      await d.usage.record({
        key: `${i.jobId}:extract:${attempt}`,
        workspaceId: i.workspaceId,
        kind: 'chat',
        modelId: model.id,
        usage: res.usage,
        attribution: {
          brainId: i.brainId,
          userId: x.userId,
          apiKeyId: x.apiKeyId,
          jobId: i.jobId,
          traceId: null,
          receptorId: null,
          neuronId: null,
          pathwayId: null,
        },
      });
      const ops = answerToOps(parseAnswer(res.text), x.occurredAt.toISOString());
      await repo.setExtractionOps(x, ops);
      await d.jobs.transition(i.workspaceId, i.jobId, {
        status: 'running',
        progress: 70,
        currentStep: `applying ${ops.length} changes`,
      });
      return { ops: ops.length };
    },

    /** Activity step 2: the stored ops become one revision of the live graph (once, by the job's key); the job completes. */
    async extractApply(i: StakeholderExtractInput): Promise<Record<string, unknown>> {
      const x = await loadExtraction(ctx, i);
      const ops = x.ops ?? [];
      const m = await loadMap(ctx, i);
      const applied = ops.length
        ? await editing.commit(m, ops, { by: x.userId ?? x.apiKeyId, source: x.source, opKey: `extract:${i.jobId}` })
        : null;
      const revision = applied?.revision ?? (await reads.live(m)).revision;
      await repo.setExtractionApplied(x, revision);
      const result = {
        resource_id: m._id,
        revision,
        source: x.source,
        model: x.model,
        transcript_truncated: x.truncated,
        op_count: ops.length,
        changes: applied?.changes ?? null,
      };
      await d.jobs.finalize(i.workspaceId, i.jobId, {
        status: 'completed',
        progress: 100,
        currentStep: 'completed',
        result,
      });
      return result;
    },

    async extractFail(i: StakeholderExtractInput, reason: string): Promise<void> {
      await d.jobs.finalize(i.workspaceId, i.jobId, { status: 'failed', failedReason: reason, currentStep: 'failed' });
    },
  };
}

/** Transcripts (text, or a finalized meeting's) into a map's live graph, as `stakeholder_extract` jobs. */
export function createStakeholderExtraction(d: StakeholderMapDeps, reads: MapReads, editing: MapEditing) {
  const ctx: ExtractionContext = { d, reads, editing };
  return {
    ...createExtractionStarts(ctx), // extract, extractFromMeeting
    ...createExtractionSteps(ctx), // extractPlan, extractApply, extractFail
  };
}
