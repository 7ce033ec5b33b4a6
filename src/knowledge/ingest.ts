import { randomUUID } from 'node:crypto';
import type { BlobStore } from '../blobs/store.js';
import type { Config } from '../kernel/config.js';
import type { Chunk, ChunkedKind, IngestState, Ingestible, KnowledgeDocument, Memory } from './model.js';
import type { KnowledgeStore } from './store.js';
import type { Embedder } from '../embeddings/index.js';
import { notFound } from '../kernel/errors.js';
import { chunkText } from './chunk.js';
import { extractText, isExtractable, sniffContentType } from './extract.js';
import type { ModelRegistry } from '../llm/registry.js';
import type { Scope } from '../kernel/scope.js';
import type { IngestInput } from '../temporal/definitions.js';
import { createProgressCoalescer, type JobService } from '../jobs/index.js';
import type { ResourceEvents } from '../platform/index.js';
import type { UsageService } from '../usage/index.js';

export const newIngestState = (
  version: number,
  jobId: string | null,
  status: IngestState['status'] = 'pending',
): IngestState => ({ status, jobId, version, chunkCount: 0, embeddedCount: 0, embeddingModel: null, error: null });

/** What the ingest service is built from. */
interface IngestDeps {
  repo: KnowledgeStore;
  blobs: BlobStore;
  embedder: Embedder;
  jobs: JobService;
  usage: UsageService;
  models: ModelRegistry;
  config: Config;
  events: ResourceEvents;
}

/** What every group of the ingest service shares: its dependencies and the writers of a job's state. */
function ingestContext(d: IngestDeps) {
  const { repo } = d;
  // A small version's steps take milliseconds: its job's progress is written once, not at each step.
  const progress = createProgressCoalescer((jobId, p: { workspaceId: string; progress: number; step: string }) =>
    d.jobs.transition(p.workspaceId, jobId, { status: 'running', progress: p.progress, currentStep: p.step }),
  );
  return {
    d,
    load: (i: IngestInput) => repo.ingest.load(i.kind, i.workspaceId, i.resourceId),
    // Only the job that owns the resource's current version writes its state; held, so that a
    // concurrent head write (a new version's name or path) and this one cannot undo each other.
    setState: (i: IngestInput, patch: Partial<IngestState>) =>
      repo.ingest.setState(i.kind, i.workspaceId, i.resourceId, i.jobId, patch),
    progress: (i: IngestInput, p: number, step: string) =>
      progress.report(i.jobId, { workspaceId: i.workspaceId, progress: p, step }),
    /** The job ends: no progress of it is written after this. */
    settle: (i: IngestInput) => progress.settle(i.jobId),
  };
}
type IngestContext = ReturnType<typeof ingestContext>;

/**
 * The `ingest` workflow's service (docs/knowledge.md): one job per resource version;
 * extract → chunk → store chunks → embed in batches → finish. Every step is idempotent: chunk
 * ids are `<resource>:<version>:<index>` (written again, never twice), a batch embeds only chunks
 * without a vector of the current model, and the ledger key names the batch and attempt.
 */
export function createIngestService(d: IngestDeps) {
  const ctx = ingestContext(d);
  const steps = createIngestSteps(ctx);
  const modelSteps = createIngestModelSteps(ctx);
  return {
    ...createIngestStarts(ctx), // start, reembed
    ...steps, // prepare, finish, fail
    ...modelSteps, // describe, embed
    ...createChunkAccess(ctx), // chunks, chunk, deleteChunks, embedder
    /**
     * Steps 1 to 3 in one go for a version whose chunks fit one embedding batch and that needs no
     * description (most artifacts and memories): prepare, embed, finish, each as its own step
     * would (every one idempotent, so a retry of the whole is safe). Anything larger answers its
     * preparation, and the workflow goes on step by step (embedding in batches, each retried alone).
     */
    async whole(
      i: IngestInput,
      batch: number,
      attempt: number,
    ): Promise<{ done: Record<string, unknown> } | { prepared: Prepared }> {
      const prepared = await steps.prepare(i, { countLater: true });
      if (prepared.describe || prepared.toEmbed > batch) {
        await ctx.setState(i, { chunkCount: prepared.chunkCount });
        return { prepared };
      }
      if (prepared.toEmbed > 0) await modelSteps.embed(i, 0, prepared.toEmbed, prepared.toEmbed, attempt);
      return { done: await steps.finish(i) };
    },
  };
}

/** What step 1 found: how many chunks the version has, how many to embed, and whether a memory needs describing. */
export interface Prepared {
  chunkCount: number;
  toEmbed: number;
  describe: boolean;
  gone?: boolean;
}
export type IngestService = ReturnType<typeof createIngestService>;

/** Starting ingest jobs: one for a resource version, or one per stale resource after a change of embedding model. */
function createIngestStarts(ctx: IngestContext) {
  const { d } = ctx;
  const { repo, config } = d;
  return {
    /** Records the ingest job of a resource version and starts its workflow (job id = workflow id). */
    async start(
      scope: Scope,
      ref: { kind: ChunkedKind; id: string; version: number; brainId: string; name: string },
      jobId: string = randomUUID(),
    ): Promise<string> {
      const { job } = await d.jobs.create(scope, { id: jobId, kind: 'ingest', brainId: ref.brainId });
      const input: IngestInput = {
        jobId,
        workspaceId: scope.workspaceId,
        brainId: ref.brainId,
        kind: ref.kind,
        resourceId: ref.id,
        version: ref.version,
        userId: scope.userId,
        apiKeyId: scope.apiKeyId,
        batchSize: config.EMBED_BATCH_SIZE,
      };
      await d.jobs.startWorkflow(job, 'ingest', [input], `ingest ${ref.kind} ${ref.name} v${ref.version}`);
      return jobId;
    },

    /**
     * After a change of embedding model: starts an ingest job for each resource of the workspace
     * whose chunks carry no vector of the current model (skip_embedding ones excepted), at most
     * `limit` per call; `remaining` says whether to call again. Vectors of the old model are
     * replaced chunk by chunk, so search keeps working on the old ones until then.
     */
    async reembed(
      scope: Scope,
      limit = 200,
    ): Promise<{
      model: string;
      started: { kind: ChunkedKind; resource_id: string; job_id: string }[];
      remaining: boolean;
    }> {
      const model = d.embedder.model;
      const seen = await repo.chunks.staleResources(scope.workspaceId, model, 20_000);
      const started: { kind: ChunkedKind; resource_id: string; job_id: string }[] = [];
      let remaining = false;
      for (const [id, kind] of seen) {
        const r = await repo.ingest.load(kind, scope.workspaceId, id);
        if (!r || r.skipEmbedding || r.ingest.status === 'pending' || r.ingest.status === 'running') continue;
        if (started.length >= limit) {
          remaining = true;
          break;
        }
        const jobId = randomUUID();
        const claimed = await repo.ingest.claimJob(kind, scope.workspaceId, id, r.ingest.jobId, jobId);
        if (!claimed) continue;
        await this.start(
          { ...scope, brainId: r.brainId },
          { kind, id, version: r.ingest.version, brainId: r.brainId, name: r.name || kind },
          jobId,
        );
        started.push({ kind, resource_id: id, job_id: jobId });
      }
      return { model, started, remaining };
    },
  };
}

/** The workflow's first and last steps (extract and chunk; make the version live) and its failure. */
function createIngestSteps(ctx: IngestContext) {
  const { d, load, setState, progress } = ctx;
  const { repo, config } = d;
  return {
    /** Step 1: extract the text, chunk it and store the chunks of this version. */
    async prepare(i: IngestInput, o: { countLater?: boolean } = {}): Promise<Prepared> {
      const r = await load(i);
      if (!r || r.ingest.jobId !== i.jobId) return { chunkCount: 0, toEmbed: 0, describe: false, gone: true };
      await setState(i, { status: 'running' });
      await progress(i, 5, 'extracting text');
      let extracted: Awaited<ReturnType<typeof textOf>>;
      try {
        extracted = await textOf(ctx, i, r);
      } catch (e) {
        // Deleted while this job read it: nothing to index (finish removes what was written).
        if (!(await load(i))) return { chunkCount: 0, toEmbed: 0, describe: false, gone: true };
        throw e;
      }
      const { text, markdown } = extracted;
      if (text === null) {
        await setState(i, {
          status: 'stored',
          chunkCount: 0,
          error:
            r.size > config.EXTRACT_MAX_BYTES
              ? `larger than EXTRACT_MAX_BYTES (${config.EXTRACT_MAX_BYTES}): stored, not chunked`
              : null,
        });
        return { chunkCount: 0, toEmbed: 0, describe: false };
      }
      await progress(i, 15, 'chunking');
      const parts = await chunkText(text, {
        sizeTokens: config.CHUNK_SIZE_TOKENS,
        overlapTokens: config.CHUNK_OVERLAP_TOKENS,
        markdown,
      });
      const existing = await repo.chunks.textsOf(i.workspaceId, i.resourceId, i.version);
      const path = 'path' in r ? r.path : '';
      const now = new Date();
      const writes = parts
        .filter((p) => existing.get(`${i.resourceId}:${i.version}:${p.index}`) !== p.text)
        .map((p): Chunk => ({
          _id: `${i.resourceId}:${i.version}:${p.index}`,
          workspaceId: i.workspaceId,
          brainId: i.brainId,
          resourceKind: i.kind,
          resourceId: i.resourceId,
          version: i.version,
          index: p.index,
          source: 'body',
          text: p.text,
          tokens: p.tokens,
          path,
          embedding: null,
          createdAt: now,
        }));
      await repo.chunks.write(writes);
      // A re-chunk into fewer parts leaves a tail to remove; a first chunking (nothing stored) has none.
      const tail = [...existing.keys()].some((id) => Number(id.slice(id.lastIndexOf(':') + 1)) >= parts.length);
      if (tail) await repo.chunks.trim(i.workspaceId, i.resourceId, i.version, parts.length);
      // `countLater`: the caller writes the count itself (finish, in the same activity, writes it with the end state).
      if (!o.countLater) await setState(i, { chunkCount: parts.length });
      const describe = i.kind === 'memory' && (r as Memory).titleSource === 'pending';
      return { chunkCount: parts.length, toEmbed: r.skipEmbedding ? 0 : parts.length, describe };
    },

    /** Step 3: the version's chunks are live; older versions' chunks go; the job completes with counts. */
    async finish(i: IngestInput): Promise<Record<string, unknown>> {
      const r = await load(i);
      const current = !!r && r.ingest.jobId === i.jobId;
      if (!r) await repo.chunks.removeVersion(i.workspaceId, i.resourceId, i.version);
      const counts = await repo.chunks.versionCounts(i.resourceId, i.version, d.embedder.model);
      const { chunkCount, embeddedCount: embedded } = counts;
      if (current) {
        // Versions start at 1: the first has none older.
        if (i.version > 1) await repo.chunks.removeOlder(i.workspaceId, i.resourceId, i.version);
        const status = r.ingest.status === 'stored' ? 'stored' : chunkCount ? 'ready' : 'skipped';
        await setState(i, {
          status,
          chunkCount,
          embeddedCount: embedded,
          embeddingModel: embedded ? d.embedder.model : null,
          error: r.ingest.error ?? null,
        });
        await d.events.emit(i.workspaceId, 'updated', {
          kind: i.kind,
          id: i.resourceId,
          brain_id: i.brainId,
          name: r.name,
          version: i.version,
          change: 'chunks',
        });
      }
      const result = {
        resource_id: i.resourceId,
        kind: i.kind,
        version: i.version,
        chunk_count: chunkCount,
        embedded_count: embedded,
        embedding_model: embedded ? d.embedder.model : null,
        ...(current ? {} : { superseded: true }),
      };
      ctx.settle(i);
      await d.jobs.finalize(i.workspaceId, i.jobId, {
        status: 'completed',
        progress: 100,
        currentStep: 'completed',
        result,
      });
      return result;
    },

    async fail(i: IngestInput, reason: string): Promise<void> {
      ctx.settle(i);
      await setState(i, { status: 'failed', error: reason });
      await d.jobs.finalize(i.workspaceId, i.jobId, { status: 'failed', failedReason: reason, currentStep: 'failed' });
    },
  };
}

/** The steps that call a model and record its usage: a memory's title and description, and the vectors. */
function createIngestModelSteps(ctx: IngestContext) {
  const { d, load, progress } = ctx;
  const { repo, config } = d;
  return {
    /** Memories without a caller's name and description get them from the configured model (recorded as such). */
    async describe(i: IngestInput, attempt: number): Promise<void> {
      const m = (await load(i)) as Memory | null;
      if (!m || m.titleSource !== 'pending') return;
      await progress(i, 20, 'describing');
      const first = await repo.chunks.range(i.workspaceId, i.resourceId, i.version, 0, 3);
      const text = first
        .map((c) => c.text)
        .join('\n\n')
        .slice(0, 6000);
      const derived = {
        name:
          text
            .split('\n')
            .find((l) => l.trim())
            ?.trim()
            .slice(0, 80) || m.name,
        description: text.replace(/\s+/g, ' ').slice(0, 200),
      };
      let out = derived;
      let source: Memory['titleSource'] = 'derived';
      const modelId = config.DEFAULT_MODEL;
      try {
        const model = d.models.resolve(modelId);
        const res = await model.provider.chat({
          model: model.model,
          responseFormat: 'json',
          maxTokens: 300,
          messages: [
            {
              role: 'system',
              content:
                'Give the following text a short title (at most 8 words) and a one-sentence description. Answer with JSON only: {"title": "...", "description": "..."}',
            },
            { role: 'user', content: text },
          ],
        });
        await d.usage.record({
          key: `${i.jobId}:describe:${attempt}`,
          workspaceId: i.workspaceId,
          kind: 'chat',
          modelId: model.id,
          usage: res.usage,
          attribution: {
            brainId: i.brainId,
            userId: i.userId,
            apiKeyId: i.apiKeyId,
            jobId: i.jobId,
            traceId: null,
            receptorId: null,
            neuronId: null,
            pathwayId: null,
          },
        });
        const parsed = JSON.parse(res.text.replace(/^```(?:json)?\s*|\s*```$/g, '')) as {
          title?: unknown;
          description?: unknown;
        };
        if (typeof parsed.title === 'string' && parsed.title.trim() && typeof parsed.description === 'string') {
          out = { name: parsed.title.trim().slice(0, 200), description: parsed.description.trim().slice(0, 1000) };
          source = 'model';
        }
      } catch {
        /* the model's answer was not usable JSON: the text's own first line and opening stand in, recorded as derived */
      }
      const keep = { name: m.name === '' ? out.name : m.name, description: m.description ?? out.description };
      await repo.memories.setHead(
        i.workspaceId,
        m._id,
        { ...keep, titleSource: source, titleModel: source === 'model' ? modelId : null, updatedAt: new Date() },
        { titleSource: 'pending' },
      );
    },

    /** Step 2: embeds chunks [from, to) that have no vector of the current model; returns how many it embedded. */
    async embed(i: IngestInput, from: number, to: number, total: number, attempt: number): Promise<number> {
      const model = d.embedder.model;
      const rows = await repo.chunks.range(i.workspaceId, i.resourceId, i.version, from, to);
      const need = rows.filter((c) => c.embedding?.model !== model);
      if (need.length) {
        const out = await d.embedder.embed(need.map((c) => c.text));
        // The ledger row first (keyed by batch and attempt): once the provider has answered, the
        // call is billed, even if storing the vectors fails and the retried activity calls again.
        // The offline embedder is no provider call (nothing billed; its counts are words): no row.
        if (!out.model.startsWith('local/')) {
          await d.usage.record({
            key: `${i.jobId}:embed:${from}:${attempt}`,
            workspaceId: i.workspaceId,
            kind: 'embedding',
            modelId: out.model,
            usage: { inputTokens: out.tokens, outputTokens: 0, totalTokens: out.tokens },
            attribution: {
              brainId: i.brainId,
              userId: i.userId,
              apiKeyId: i.apiKeyId,
              jobId: i.jobId,
              traceId: null,
              receptorId: null,
              neuronId: null,
              pathwayId: null,
            },
          });
        }
        await repo.chunks.setVectors(
          need.map((c, k) => ({ id: c._id, model: out.model, dimension: out.dimension, vector: out.vectors[k] })),
        );
      }
      await progress(i, 25 + Math.round((70 * to) / Math.max(1, total)), `embedding ${to}/${total} chunks`);
      return need.length;
    },
  };
}

/** A resource's chunks, read and removed (the document and memory services go through these). */
function createChunkAccess(ctx: IngestContext) {
  const { d } = ctx;
  const { repo } = d;
  return {
    /** Chunks of a resource's live version (the newest ingested), in order, paged by (index, _id). */
    async chunks(
      workspaceId: string,
      resourceId: string,
      q: { limit: number; offset: number; cursor?: string; source?: string },
    ) {
      return repo.chunks.page(workspaceId, resourceId, q.source, q);
    },
    chunk: (workspaceId: string, chunkId: string) => repo.chunks.get(workspaceId, chunkId),
    deleteChunks: (workspaceId: string, resourceId: string, source?: string): Promise<number> =>
      repo.chunks.removeFor(workspaceId, resourceId, source),
    embedder: d.embedder,
  };
}

/** The text of a resource version: an artifact's content of that version, else the body in the blob store. */
async function textOf(
  ctx: IngestContext,
  i: IngestInput,
  r: Ingestible,
): Promise<{ text: string | null; contentType: string | null; markdown: boolean }> {
  const { d } = ctx;
  const { repo, config } = d;
  if (i.kind === 'artifact') {
    const v = await repo.documents.version(i.workspaceId, r._id, i.version);
    const doc = r as KnowledgeDocument;
    const text = v?.content ?? (doc.version === i.version ? (doc.content ?? '') : null);
    if (text === null) throw notFound(`Artifact version ${i.version}`);
    return { text, contentType: doc.contentType, markdown: /markdown/.test(doc.contentType ?? '') };
  }
  if (!r.blobKey) return { text: null, contentType: r.contentType, markdown: false };
  if (r.size > config.EXTRACT_MAX_BYTES) return { text: null, contentType: r.contentType, markdown: false };
  const body = await d.blobs.read(r.blobKey, config.EXTRACT_MAX_BYTES);
  // The full body may say more than the head did (a Word document is a zip to the head).
  let type = r.contentType ?? 'application/octet-stream';
  if (type === 'application/zip' || type === 'application/octet-stream') {
    type = await sniffContentType(body, { name: 'fileName' in r ? (r.fileName ?? undefined) : undefined });
    if (type !== r.contentType) await repo.ingest.setContentType(i.kind, i.workspaceId, r._id, type);
  }
  if (!isExtractable(type)) return { text: null, contentType: type, markdown: false };
  return { text: await extractText(body, type), contentType: type, markdown: type === 'text/markdown' };
}
