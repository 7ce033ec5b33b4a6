import { useEffect, useState } from 'react';
import type { ApiSchema } from './api';
import { useAuth } from './auth';

/**
 * Whether the signed-in caller may change a pathway (docs/roles.md: pathway role `editor` or more;
 * workspace admins act as owners of every pathway). The console asks the API: the session's roles,
 * then the pathway's participant check for the caller's user. `null` while asking. The console only
 * hides controls with it; the API refuses a save from anyone else (403) whatever the page shows.
 */
export function useCanEdit(pathwayId: string | null | undefined): boolean | null {
  const { api, session, isAdmin } = useAuth();
  const [can, setCan] = useState<boolean | null>(isAdmin ? true : null);
  useEffect(() => {
    if (isAdmin) return setCan(true);
    if (!pathwayId || !session.user_id) return setCan(false);
    const abort = new AbortController();
    setCan(null);
    api
      .get<ApiSchema<'PathwayCheckRole'>>(
        `/v1/pathways/${pathwayId}/participants/check-role?user_id=${encodeURIComponent(session.user_id)}&role=editor`,
        abort.signal,
      )
      .then((r) => setCan(r.allowed))
      .catch(() => !abort.signal.aborted && setCan(false));
    return () => abort.abort();
  }, [api, isAdmin, pathwayId, session.user_id]);
  return can;
}
