/** Share-link look and feel (validated by src/shares/schemas.ts). */
interface ShareCustomization {
  title?: string;
  greeting?: string;
  colors?: { primary?: string; background?: string; text?: string };
  logo_url?: string;
}

/**
 * The live share token of a receptor (one per receptor; docs/shares.md). The token
 * itself is never stored: its SHA-256 is, and the id stays the same across rotations, so the
 * link's budget survives a rotation (a rotation is not a way to reset spending).
 */
export interface ShareTokenDoc {
  _id: string;
  workspaceId: string;
  receptorId: string;
  tokenHash: string;
  prefix: string;
  allowFiles: boolean;
  customization: ShareCustomization;
  expiresAt: Date | null;
  /** Executes the link may start in all; its token limit is a budget (src/usage/budgets.ts, scope share_token). */
  budget: { maxRequests: number | null };
  createdBy: string | null;
  createdAt: Date;
  rotatedAt: Date | null;
  updatedAt: Date;
}

/** A file uploaded through a share link (kept until the knowledge lanes take uploads over). */
export interface ShareUploadDoc {
  _id: string;
  workspaceId: string;
  receptorId: string;
  shareTokenId: string;
  name: string;
  contentType: string;
  size: number;
  data: Buffer;
  createdAt: Date;
}
