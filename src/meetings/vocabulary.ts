import type { Redis } from '../kernel/redis.js';
import type { MeetingStore } from './store.js';
import type { WorkspaceRepo } from '../platform/index.js';
import { forbidden, notFound, validationError } from '../kernel/errors.js';
import type { Scope } from '../kernel/scope.js';
import { own } from '../kernel/own.js';

/** Terms every workspace's speech gets as hints: the platform's own words and meeting vocabulary. */
const CORE = [
  'Cortex',
  'neuron',
  'pathway',
  'receptor',
  'reflex',
  'engram',
  'brain',
  'workspace',
  'agenda',
  'action item',
  'follow-up',
  'decision',
  'stakeholder',
  'transcript',
  'summary',
  'deadline',
  'owner',
];
/** Static vocabulary per vertical (GET /v1/voice/stt-vocabulary/defaults); `general` adds nothing. */
const VERTICALS: Record<string, string[]> = {
  general: [],
  sales: [
    'pipeline',
    'forecast',
    'quota',
    'renewal',
    'churn',
    'upsell',
    'discovery call',
    'procurement',
    'MSA',
    'ARR',
    'MRR',
    'CRM',
  ],
  engineering: [
    'deployment',
    'rollback',
    'incident',
    'postmortem',
    'Kubernetes',
    'latency',
    'SLO',
    'pull request',
    'sprint',
    'backlog',
    'Temporal',
    'Redis',
  ],
  legal: [
    'indemnification',
    'liability',
    'counterparty',
    'NDA',
    'jurisdiction',
    'governing law',
    'redline',
    'clause',
    'amendment',
  ],
  healthcare: ['patient', 'diagnosis', 'prescription', 'HIPAA', 'triage', 'referral', 'dosage', 'EHR'],
};
const DEFAULT_VERTICAL = 'general';
const CACHE_TTL_S = 24 * 3600;
const MAX_TERMS = 1000;

/** Case-insensitive de-duplication, first spelling wins. */
function dedupe(terms: string[]): string[] {
  const seen = new Set<string>();
  return terms
    .map((t) => t.trim())
    .filter((t) => t && !seen.has(t.toLowerCase()) && seen.add(t.toLowerCase()))
    .slice(0, MAX_TERMS);
}

/**
 * Speech vocabulary (docs/meetings.md, "Vocabulary"): core + vertical (static) + the workspace's and the
 * brain's saved terms, merged and cached in Redis per workspace and brain by prewarm; every
 * transcription reads the merged list (computing it when the cache is cold) and passes it to the
 * provider as hints.
 */
export function createVocabularyService(d: {
  repo: MeetingStore;
  workspaces: WorkspaceRepo;
  redis: Redis;
  prefix: string;
}) {
  const cacheKey = (workspaceId: string, brainId: string | null) =>
    `${d.prefix}stt-vocab:${workspaceId}:${brainId ?? '-'}`;
  const vertical = (id: string | undefined) => {
    const v = id ?? DEFAULT_VERTICAL;
    if (!own(VERTICALS, v)) throw validationError(`vertical_id: one of ${Object.keys(VERTICALS).join(', ')}`);
    return v;
  };
  const saved = (workspaceId: string, brainId: string | null) => d.repo.savedTerms(workspaceId, brainId);

  async function merged(workspaceId: string, brainId: string | null, verticalId: string) {
    const parts = {
      core: CORE,
      vertical: VERTICALS[verticalId],
      workspace: await saved(workspaceId, null),
      brain: brainId ? await saved(workspaceId, brainId) : [],
    };
    return { parts, terms: dedupe([...parts.core, ...parts.vertical, ...parts.workspace, ...parts.brain]) };
  }

  return {
    defaults(verticalId?: string) {
      const v = vertical(verticalId);
      return {
        vertical_id: v,
        core: CORE,
        vertical: VERTICALS[v],
        merged_static: dedupe([...CORE, ...VERTICALS[v]]),
        verticals: Object.keys(VERTICALS),
      };
    },

    /** workspace_id must be the credential's (403) and brain_id a brain of it (404); `terms` replaces the saved ones of that level. */
    async prewarm(
      scope: Scope,
      b: { workspace_id: string; brain_id?: string; vertical_id?: string; terms?: string[] },
    ) {
      if (b.workspace_id !== scope.workspaceId) throw forbidden('workspace_id is not the workspace of this credential');
      const brainId = b.brain_id ?? null;
      if (brainId && !(await d.workspaces.findBrain(scope.workspaceId, brainId))) throw notFound('Brain');
      const v = vertical(b.vertical_id);
      if (b.terms) {
        await d.repo.saveTerms(scope.workspaceId, brainId, dedupe(b.terms));
      }
      const { parts, terms } = await merged(scope.workspaceId, brainId, v);
      await d.redis.set(
        cacheKey(scope.workspaceId, brainId),
        JSON.stringify({ vertical_id: v, terms }),
        'EX',
        CACHE_TTL_S,
      );
      return {
        workspace_id: scope.workspaceId,
        brain_id: brainId,
        vertical_id: v,
        term_count: terms.length,
        counts: {
          core: parts.core.length,
          vertical: parts.vertical.length,
          workspace: parts.workspace.length,
          brain: parts.brain.length,
        },
        cached_until: new Date(Date.now() + CACHE_TTL_S * 1000).toISOString(),
      };
    },

    /** The hints a transcription of this workspace and brain passes to its provider (the prewarmed list, else computed). */
    async hintsFor(workspaceId: string, brainId: string | null): Promise<string[]> {
      const hit = await d.redis.get(cacheKey(workspaceId, brainId));
      if (hit) return (JSON.parse(hit) as { terms: string[] }).terms;
      return (await merged(workspaceId, brainId, DEFAULT_VERTICAL)).terms;
    },
  };
}
export type VocabularyService = ReturnType<typeof createVocabularyService>;
