import type { z } from 'zod';
import type { ReceptorRecord as Receptor } from '../../src/receptors/index.js';
import type { ShareTokenDoc } from '../../src/shares/index.js';
import type { PublicReceptor, ShareView } from '../../src/shares/index.js';
import type { ShareAccess } from '../../src/shares/index.js';

/** A share token's settings and use; the token itself only right after create or rotate. */
export function presentShare(
  s: ShareTokenDoc,
  r: Receptor,
  used: { requests: number; tokens: number; maxTokens: number | null },
  fresh?: { token: string; workspace: string },
): z.input<typeof ShareView> {
  return {
    id: s._id,
    receptor_id: s.receptorId,
    receptor_slug: r.slug,
    token_prefix: s.prefix,
    ...(fresh
      ? {
          token: fresh.token,
          share_url: `/share/${encodeURIComponent(fresh.workspace)}/${encodeURIComponent(r.slug)}?t=${encodeURIComponent(fresh.token)}`,
        }
      : {}),
    allow_files: s.allowFiles,
    customization: s.customization,
    expires_at: s.expiresAt?.toISOString() ?? null,
    budget: {
      max_requests: s.budget.maxRequests,
      max_tokens: used.maxTokens,
      used_requests: used.requests,
      used_tokens: used.tokens,
    },
    created_at: s.createdAt.toISOString(),
    rotated_at: s.rotatedAt?.toISOString() ?? null,
  };
}

/** What a person with the link sees of the receptor. */
export function presentPublicReceptor(a: ShareAccess): z.input<typeof PublicReceptor> {
  return {
    receptor: {
      id: a.receptor._id,
      slug: a.receptor.slug,
      target_type: a.receptor.executableTarget.kind,
      is_active: a.receptor.isActive,
      workspace: a.workspaceSlug,
    },
    allow_files: a.share.allowFiles,
    customization: a.share.customization,
  };
}
