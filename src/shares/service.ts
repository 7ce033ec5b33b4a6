import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { JobRepo, Admission } from '../jobs/index.js';
import type { ReceptorFireService, ReceptorRecord as Receptor, ReceptorService } from '../receptors/index.js';
import type { ShareTokenDoc } from './model.js';
import type { ShareStore } from './store.js';
import type { TraceRecord as Trace, TraceRepo } from '../traces/index.js';
import type { WorkspaceRepo, RecentCredentials } from '../platform/index.js';
import { AppError, conflict, forbidden, notFound, validationError } from '../kernel/errors.js';
import type { PublicExecuteBody, ShareCreateBody, ShareRotateBody } from './schemas.js';
import type { Scope } from '../kernel/scope.js';
import type { BudgetService } from '../usage/index.js';

const TOKEN_PREFIX = 'cxs_';
const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');
const invalidToken = (why = 'invalid') => new AppError('AUTH_REQUIRED', 401, `Share token ${why}`);

/** What a share request resolved to: the link, its receptor, and the scope its calls run in. */
export interface ShareAccess {
  share: ShareTokenDoc;
  receptor: Receptor;
  workspaceSlug: string;
  scope: Scope;
}

/** What the share service's deps are (the factory's argument), and so what its parts share. */
interface ShareContext {
  repo: ShareStore;
  jobs: JobRepo;
  traces: TraceRepo;
  /** A run start's place in the workspace's share of runs (JobService.admitRun). */
  admitRun: (workspaceId: string) => Promise<Admission>;
  budgets: BudgetService;
  workspaces: WorkspaceRepo;
  receptors: ReceptorService;
  fires: ReceptorFireService;
  recent: RecentCredentials;
}

/** Requests are the jobs the link started; its token limit is its lifetime budget (src/usage/budgets.ts). */
async function usedOf(ctx: ShareContext, s: ShareTokenDoc) {
  const [requests, tokens] = await Promise.all([
    ctx.jobs.countForShare(s.workspaceId, s._id),
    ctx.budgets.shareTokens(s.workspaceId, s._id),
  ]);
  return { requests, tokens: tokens.used, maxTokens: tokens.maxTokens };
}

async function managed({ receptors }: ShareContext, scope: Scope, workspaceSegment: string, slugOrId: string) {
  await receptors.checkWorkspace(scope, workspaceSegment);
  const r = await receptors.lookup(scope, slugOrId);
  return r;
}

const newToken = () => `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;

/**
 * Whether a trace is one of the link's conversations (docs/shares.md): the trace records the link
 * that created it (`shareId`). A trace that records none (stored before traces recorded their
 * link), or that does not exist yet (the link's run has not written it), is the link's only when
 * a job the link started ran on it, and, when it exists, it belongs to the link's receptor.
 */
async function isConversation(
  ctx: ShareContext,
  a: ShareAccess,
  traceId: string,
  known?: Trace | null,
): Promise<boolean> {
  const t = known !== undefined ? known : await ctx.traces.get(a.share.workspaceId, traceId);
  if (t?.shareId) return t.shareId === a.share._id;
  if (t && t.receptorId !== a.receptor._id) return false;
  return ctx.jobs.ranOnTraceForShare(a.share.workspaceId, t?.traceId ?? traceId, a.share._id);
}

/** Managing a receptor's link: its usage, create, read, revoke, rotate. */
function createShareManagement(ctx: ShareContext) {
  const { repo, receptors } = ctx;
  return {
    usedOf: (s: ShareTokenDoc) => usedOf(ctx, s),

    /** POST …/share: 409 when the receptor already has a live token (rotate it instead). */
    async create(scope: Scope, workspaceSegment: string, slugOrId: string, body: ShareCreateBody) {
      const r = await managed(ctx, scope, workspaceSegment, slugOrId);
      await receptors.assertCanChange(scope, r);
      const token = newToken();
      const now = new Date();
      const doc: ShareTokenDoc = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        receptorId: r._id,
        tokenHash: hashOf(token),
        prefix: token.slice(0, 10),
        allowFiles: body.allow_files,
        customization: body.customization,
        expiresAt: body.expires_at ? new Date(body.expires_at) : null,
        budget: { maxRequests: body.budget?.max_requests ?? null },
        createdBy: scope.userId ?? scope.apiKeyId,
        createdAt: now,
        rotatedAt: null,
        updatedAt: now,
      };
      if (doc.expiresAt && doc.expiresAt.getTime() <= Date.now())
        throw validationError('expires_at must be in the future');
      if (!(await repo.create(doc)))
        throw conflict('This receptor already has a share token: rotate it (POST …/share/rotate) or revoke it first');
      await ctx.budgets.setShareTokens(scope.workspaceId, doc._id, body.budget?.max_tokens ?? null, doc.createdBy);
      ctx.recent.remember('share', doc.tokenHash);
      return { doc, receptor: r, token };
    },

    async get(scope: Scope, workspaceSegment: string, slugOrId: string) {
      const r = await managed(ctx, scope, workspaceSegment, slugOrId);
      const doc = await repo.forReceptor(scope.workspaceId, r._id);
      if (!doc) throw notFound('Share token');
      return { doc, receptor: r };
    },

    /** DELETE …/share: the token stops working at once. */
    async revoke(scope: Scope, workspaceSegment: string, slugOrId: string): Promise<void> {
      const r = await managed(ctx, scope, workspaceSegment, slugOrId);
      await receptors.assertCanChange(scope, r);
      const cur = await repo.forReceptor(scope.workspaceId, r._id);
      const removed = await repo.removeForReceptor(scope.workspaceId, r._id);
      if (!cur || !removed) throw notFound('Share token');
      ctx.recent.forget('share', cur.tokenHash);
      await ctx.budgets.dropFor(scope.workspaceId, 'share_token', cur._id);
    },

    /** POST …/share/rotate: a new token (settings may change in the same call); the old one stops working at once. */
    async rotate(scope: Scope, workspaceSegment: string, slugOrId: string, body: ShareRotateBody) {
      const r = await managed(ctx, scope, workspaceSegment, slugOrId);
      await receptors.assertCanChange(scope, r);
      const cur = await repo.forReceptor(scope.workspaceId, r._id);
      if (!cur) throw notFound('Share token');
      const token = newToken();
      const now = new Date();
      const set: Partial<ShareTokenDoc> = {
        tokenHash: hashOf(token),
        prefix: token.slice(0, 10),
        rotatedAt: now,
        updatedAt: now,
      };
      if (body.allow_files !== undefined) set.allowFiles = body.allow_files;
      if (body.customization !== undefined) set.customization = body.customization;
      if (body.expires_at !== undefined) {
        set.expiresAt = body.expires_at ? new Date(body.expires_at) : null;
        if (set.expiresAt && set.expiresAt.getTime() <= Date.now())
          throw validationError('expires_at must be in the future');
      }
      if (body.budget !== undefined) set.budget = { maxRequests: body.budget.max_requests ?? null };
      await repo.update(scope.workspaceId, cur._id, set);
      ctx.recent.forget('share', cur.tokenHash);
      ctx.recent.remember('share', hashOf(token));
      if (body.budget !== undefined)
        await ctx.budgets.setShareTokens(
          scope.workspaceId,
          cur._id,
          body.budget.max_tokens ?? null,
          scope.userId ?? scope.apiKeyId,
        );
      return { doc: { ...cur, ...set }, receptor: r, token };
    },
  };
}

/** A request through a link: its token resolved, and what the link may name. */
function createShareAccess(ctx: ShareContext) {
  const { repo, receptors } = ctx;
  return {
    /** Whether a share token was recently seen valid by any API process (docs/decisions.md, "Auth, scoping and roles"). */
    recentlyValid: (token: string | undefined): Promise<boolean> =>
      token ? ctx.recent.seen('share', hashOf(token)) : Promise.resolve(false),

    /**
     * Resolves a share token (401 when missing, wrong, revoked, rotated away or expired) to its
     * receptor and the scope its calls run in. A valid JWT of the same workspace attributes the
     * calls to its user.
     */
    async authenticate(token: string | undefined, user: Scope | null): Promise<ShareAccess> {
      if (!token) throw invalidToken('required: send ?t= (or share_token in the body)');
      const hash = hashOf(token);
      const share = token.startsWith(TOKEN_PREFIX) ? await repo.byHash(hash) : null;
      // The lookup is by hash; the comparison of what was found is constant-time all the same.
      if (!share || !timingSafeEqual(Buffer.from(share.tokenHash, 'hex'), Buffer.from(hash, 'hex'))) {
        ctx.recent.forget('share', hash);
        throw invalidToken('is invalid, revoked or rotated');
      }
      if (share.expiresAt && share.expiresAt.getTime() <= Date.now()) {
        ctx.recent.forget('share', hash);
        throw invalidToken('has expired');
      }
      ctx.recent.remember('share', hash);
      const receptor = await receptors.lookup(
        { workspaceId: share.workspaceId, userId: null, apiKeyId: null, roles: [], credential: 'share' },
        share.receptorId,
      );
      const ws = await ctx.workspaces.findWorkspace(share.workspaceId);
      const sameWs = user && user.workspaceId === share.workspaceId;
      return {
        share,
        receptor,
        workspaceSlug: ws?.slug ?? share.workspaceId,
        scope: {
          workspaceId: share.workspaceId,
          brainId: receptor.brainId,
          userId: sameWs ? user.userId : null,
          apiKeyId: null,
          roles: [],
          credential: 'share',
          receptorId: receptor._id,
          shareTokenId: share._id,
        },
      };
    },

    /**
     * A trace named through a link must be one of the link's conversations (isConversation): any
     * other trace of the workspace is a 404, the same answer as a trace that does not exist.
     */
    async assertConversation(a: ShareAccess, traceId: string, known?: Trace | null): Promise<void> {
      if (!(await isConversation(ctx, a, traceId, known))) throw notFound('Trace');
    },

    /** Trace and job reads through a link name the link's receptor (workspace + receptor, or receptor_id); anything else is a 403. */
    checkNames(a: ShareAccess, q: { workspace?: string; receptor?: string; receptor_id?: string }): void {
      if (q.receptor_id) {
        if (q.receptor_id.toLowerCase() !== a.receptor._id) throw forbidden('This share token is for another receptor');
        return;
      }
      if (!q.workspace || !q.receptor)
        throw validationError('Send workspace and receptor, or receptor_id, with the share token');
      if (q.workspace !== a.workspaceSlug && q.workspace !== a.share.workspaceId)
        throw forbidden('This share token is for another workspace');
      if (q.receptor !== a.receptor.slug && q.receptor.toLowerCase() !== a.receptor._id)
        throw forbidden('This share token is for another receptor');
    },

    /** The route's receptor (by workspace + slug, or by id) must be the link's (403 otherwise). */
    checkReceptor(a: ShareAccess, ref: { workspace?: string; slug?: string; id?: string }): void {
      if (ref.id !== undefined && ref.id.toLowerCase() !== a.receptor._id)
        throw forbidden('This share token is for another receptor');
      if (ref.workspace !== undefined && ref.workspace !== a.workspaceSlug && ref.workspace !== a.share.workspaceId)
        throw forbidden('This share token is for another workspace');
      if (ref.slug !== undefined && ref.slug !== a.receptor.slug && ref.slug.toLowerCase() !== a.receptor._id)
        throw forbidden('This share token is for another receptor');
    },
  };
}

/** What a link runs: its receptor fired with the message, files uploaded through it. */
function createSharePublic(ctx: ShareContext) {
  const { repo, fires } = ctx;
  return {
    /**
     * Public execute: fires the link's receptor with the message, within the link's request limit
     * and the budgets with the fail policy that cover it (402 BUDGET_EXCEEDED once spent). Budgets
     * are checked again before every model turn of the run (src/usage/budgets.ts).
     */
    async execute(a: ShareAccess, body: PublicExecuteBody) {
      const max = a.share.budget.maxRequests;
      if (max !== null) {
        // Counted up to the limit only (an index range of at most `max` entries, whatever the link's history).
        const requests = await ctx.jobs.countForShare(a.share.workspaceId, a.share._id, max);
        if (requests >= max)
          throw new AppError(
            'BUDGET_EXCEEDED',
            402,
            `This share link has used its budget (${requests} of ${max} requests)`,
          );
      }
      await ctx.budgets.refuseIfSpent(a.share.workspaceId, { receptorId: a.receptor._id, shareTokenId: a.share._id });
      const why = await fires.notFireable(a.receptor);
      if (why) throw validationError(`This link cannot run now: ${why}`);
      // trace_id continues one of the link's own conversations, whatever the receptor's target (404 otherwise).
      if (body.trace_id && !(await isConversation(ctx, a, body.trace_id))) throw notFound('trace_id: Trace');
      let attachments: { id: string; name: string; content_type: string; size: number; text?: string }[] = [];
      if (body.asset_ids?.length) {
        const files = await repo.uploadsOf(a.share.workspaceId, a.share._id, body.asset_ids);
        if (files.length !== new Set(body.asset_ids).size)
          throw validationError('asset_ids: a file was not uploaded through this link');
        attachments = files.map((f) => ({
          id: f._id,
          name: f.name,
          content_type: f.contentType,
          size: f.size,
          ...(/^(text\/|application\/json)/.test(f.contentType)
            ? { text: f.data.toString('utf8').slice(0, 50_000) }
            : {}),
        }));
      }
      const message = attachments.length
        ? `${body.message}\n\n${attachments.map((f) => (f.text !== undefined ? `--- ${f.name} ---\n${f.text}` : `[attached: ${f.name} (${f.content_type}, ${f.size} bytes)]`)).join('\n\n')}`
        : body.message;
      // The workspace's share of runs (429 past it, nothing stored); once stored, the job counts itself.
      const admitted = await ctx.admitRun(a.share.workspaceId);
      return fires
        .launch(a.receptor, {
          source: 'share',
          scope: a.scope,
          trigger: {
            payload: { message },
            data: attachments.length ? { attachments: attachments.map(({ text: _t, ...f }) => f) } : undefined,
            traceId: body.trace_id,
          },
          queued: admitted.queued,
        })
        .finally(admitted.release);
    },

    /** A file uploaded through the link (allow_files must be on). */
    async upload(a: ShareAccess, file: { name: string; contentType: string; data: Buffer }) {
      if (!a.share.allowFiles) throw forbidden('This share link does not accept files');
      const doc = {
        _id: randomUUID(),
        workspaceId: a.share.workspaceId,
        receptorId: a.receptor._id,
        shareTokenId: a.share._id,
        name: file.name,
        contentType: file.contentType,
        size: file.data.length,
        data: file.data,
        createdAt: new Date(),
      };
      await repo.addUpload(doc);
      return doc;
    },
  };
}

/**
 * Share links (docs/shares.md): one live token per
 * receptor, random, stored as a SHA-256, shown whole only when created or rotated. Every request
 * looks the hash up, so a revoke or a rotation takes effect at once on every API instance.
 */
export function createShareService(d: ShareContext) {
  return {
    ...createShareManagement(d), // usedOf, create, get, revoke, rotate
    ...createShareAccess(d), // recentlyValid, authenticate, assertConversation, checkNames, checkReceptor
    ...createSharePublic(d), // execute, upload
  };
}
