import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from 'react';

/*
 * A small history router under /console: pages are paths (/console/runs/<id>), filters are query
 * parameters, so a link or a reload shows the same view. The API answers index.html for every path
 * under /console (api/console.ts).
 */
const BASE = '/console';

export interface Location {
  /** The path below /console, starting with '/'. */
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  const p = window.location.pathname;
  const path = p.startsWith(BASE) ? p.slice(BASE.length) || '/' : p;
  return { path, query: new URLSearchParams(window.location.search) };
}

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((l) => l()));

/** Goes to a console path (`/runs?status=running`); `replace` keeps the history entry (filters). */
export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const url = BASE + (to.startsWith('/') ? to : `/${to}`);
  if (opts.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((l) => l());
  if (!opts.replace) window.scrollTo(0, 0);
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const on = () => setLoc(current());
    listeners.add(on);
    return () => void listeners.delete(on);
  }, []);
  return loc;
}

/** Matches `/runs/:id` against a path: the named segments, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split('/').filter(Boolean);
  const b = path.split('/').filter(Boolean);
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(':')) out[a[i].slice(1)] = decodeURIComponent(b[i]);
    else if (a[i] !== b[i]) return null;
  }
  return out;
}

/** Sets (or removes, for '' and undefined) query parameters of the current view, keeping the others. */
export function setQuery(params: Record<string, string | undefined>): void {
  const { path, query } = current();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === '') query.delete(k);
    else query.set(k, v);
  }
  const s = query.toString();
  navigate(`${path}${s ? `?${s}` : ''}`, { replace: true });
}

/** A real link (keyboard, middle click, copy address) that navigates in place on a plain click. */
export function Link({ to, ...rest }: { to: string } & Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'>) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    rest.onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a {...rest} href={BASE + to} onClick={onClick} />;
}
