import { useEffect, useState, type ReactNode } from 'react';
import type { ApiProblem } from '../api';

/* Small shared pieces: status badges, JSON, times, errors, paging. */

/** A job, intervention or node state as a coloured badge (colour from the class, text for everyone). */
export function Badge({ value }: { value: string }) {
  return <span className={`badge badge-${value.replace(/[^a-z_-]/gi, '')}`}>{value}</span>;
}

/** A value as indented JSON (strings as they are), scrollable, selectable. */
export function Json({ value, label }: { value: unknown; label?: string }) {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return (
    <pre className="json" aria-label={label} tabIndex={0}>
      {text ?? 'undefined'}
    </pre>
  );
}

export function Problem({ problem }: { problem: ApiProblem | null | undefined }) {
  if (!problem) return null;
  return (
    <p className="error" role="alert">
      {problem.message} <code>{problem.code}</code>
    </p>
  );
}

/** "12 s ago" style age, refreshed every few seconds by its parent's renders. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
}

/** Duration between two instants (the second defaulting to now) as "1.2 s", "3 min 4 s". */
export function duration(from: string | null | undefined, to: string | null | undefined, now = Date.now()): string {
  if (!from) return '—';
  const ms = (to ? Date.parse(to) : now) - Date.parse(from);
  if (ms < 0) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  return m < 60 ? `${m} min ${Math.round((ms % 60_000) / 1000)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

export const shortId = (id: string | null | undefined): string => (id ? id.slice(0, 8) : '—');

/** Re-renders its caller every `ms` (live ages and durations). */
export function useTick(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

export function Pager({
  offset,
  limit,
  total,
  count,
  onPage,
}: {
  offset: number;
  limit: number;
  total: number | null | undefined;
  count: number;
  onPage(offset: number): void;
}) {
  const end = offset + count;
  const more = typeof total === 'number' ? end < total : count === limit;
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" disabled={offset === 0} onClick={() => onPage(Math.max(0, offset - limit))}>
        ← Newer
      </button>
      <span className="muted">
        {count ? `${offset + 1}–${end}` : '0'}
        {typeof total === 'number' ? ` of ${total}` : ''}
      </span>
      <button type="button" disabled={!more} onClick={() => onPage(offset + limit)}>
        Older →
      </button>
    </nav>
  );
}

export function Section({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  return (
    <section className="card">
      <header className="card-head">
        <h2>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}
