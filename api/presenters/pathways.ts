import type { z } from 'zod';
import type {
  PathwayRecord as PathwayRow,
  PathwayParticipantDoc,
  PathwayVersionRecord as PathwayVersionRow,
  PathwayVersionSummaryRecord as PathwayVersionSummaryRow,
  CompileResult,
  ValidationResult,
  CheckRoleResult,
  Participant,
  Pathway,
  PathwayCompilation,
  PathwayList,
  PathwayValidation,
  PathwayVersion,
  PathwayVersionList,
  PathwayVersionSummary,
  PathwayPage,
  RoleCheck,
} from '../../src/pathways/index.js';
import { toNeuronSlug } from '../../src/neurons/index.js';
import { presentPage } from './page.js';

type Json = Record<string, unknown>;

/** Wire shape of a pathway head; every field is listed so a new DB field never leaks. `version` is the tip shown. */
export function presentPathway(p: PathwayRow): z.input<typeof Pathway> {
  return {
    id: p._id,
    workspace_id: p.workspaceId,
    brain_id: p.brainId,
    name: p.name,
    // A pathway stored before slugs has its slug filled in at the API's start; it is the name's slug.
    slug: p.slug ?? toNeuronSlug(p.name),
    description: p.description ?? '',
    pathway_graph: p.graph as Json,
    pathway_data: p.design as Json | null,
    is_active: p.isActive,
    latest_version: p.latestVersion,
    version: p.latestVersion,
    // `?? null`: FerretDB 1.x may return a stored null as a missing field.
    created_by: p.createdBy ?? null,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}

/** A list page: `{ pathways, total, limit, offset, has_more }`. */
export const presentPathwayPage = (p: PathwayPage): z.input<typeof PathwayList> => ({
  pathways: p.items.map(presentPathway),
  ...presentPage(p),
});

/** One line of the version history. */
function presentPathwayVersionSummary(v: PathwayVersionSummaryRow): z.input<typeof PathwayVersionSummary> {
  return {
    version: v.version,
    created_at: v.createdAt.toISOString(),
    created_by: v.createdBy ?? null,
    note: v.note ?? null,
    node_count: v.nodeCount ?? 0,
    saved_by: v.savedBy ?? null,
    saved_by_admin: v.savedByAdmin ?? false,
  };
}

/** The kept history, newest first. */
export const presentPathwayHistory = (h: {
  doc: PathwayRow;
  versions: PathwayVersionSummaryRow[];
}): z.input<typeof PathwayVersionList> => ({
  pathway_id: h.doc._id,
  latest_version: h.doc.latestVersion,
  versions: h.versions.map(presentPathwayVersionSummary),
});

/** One kept version with its graph. */
export const presentPathwayVersion = (v: {
  doc: PathwayRow;
  entry: PathwayVersionRow;
}): z.input<typeof PathwayVersion> => ({
  ...presentPathwayVersionSummary(v.entry),
  pathway_id: v.doc._id,
  latest_version: v.doc.latestVersion,
  name: v.entry.name,
  description: v.entry.description ?? '',
  pathway_graph: v.entry.graph as Json,
});

/** `{ valid, errors?, warnings? }`: each list only when it has entries. */
export const presentValidation = (r: ValidationResult): z.input<typeof PathwayValidation> => ({
  valid: r.valid,
  ...(r.errors.length > 0 && { errors: r.errors }),
  ...(r.warnings.length > 0 && { warnings: r.warnings }),
});

/** `{ compiled, preview?, errors?, warnings? }`: each list only when it has entries. */
export const presentCompilation = (
  r: CompileResult & { preview?: { input: Json } },
): z.input<typeof PathwayCompilation> => ({
  compiled: r.compiled,
  ...(r.preview && { preview: r.preview }),
  ...(r.errors.length > 0 && { errors: r.errors }),
  ...(r.warnings.length > 0 && { warnings: r.warnings }),
});

/** Wire shape of a pathway participant. */
export function presentParticipant(p: PathwayParticipantDoc): z.input<typeof Participant> {
  return {
    id: p._id,
    pathway_id: p.pathwayId,
    user_id: p.userId,
    role: p.role,
    added_by: p.addedBy ?? null,
    created_at: p.createdAt.toISOString(),
  };
}

/** `{ user_id, role, required_role, allowed }`. */
export const presentRoleCheck = (r: RoleCheck): z.input<typeof CheckRoleResult> => ({
  user_id: r.userId,
  role: r.role,
  required_role: r.requiredRole,
  allowed: r.allowed,
});
