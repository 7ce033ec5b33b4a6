import { useState, type HTMLAttributes, type ReactNode } from 'react';
import { toProblem, type ApiProblem } from '../api';
import { setQuery, useLocation } from '../router';
import { Pager } from './ui';

/*
 * The pieces every list page repeats: a name search and paging kept in the URL, a table with its
 * loading and empty rows, and the pager under it. A list page names its columns and its empty
 * state; the rest is here. Each cell carries its column's title (`data-label`), which a table
 * with the `cards` class shows beside the value on a narrow screen.
 */

/** The list's URL state: `?search=` and `?offset=` (other filters are the page's own). */
export function useListQuery(param = 'search') {
  const { query } = useLocation();
  const search = query.get(param) ?? '';
  const offset = Number(query.get('offset') ?? 0) || 0;
  return { query, search, offset };
}

/** A search box that puts its text in the URL (and goes back to the first page). */
export function SearchForm({ label = 'Name contains', param = 'search' }: { label?: string; param?: string }) {
  const { search } = useListQuery(param);
  const [text, setText] = useState(search);
  return (
    <form
      className="filters"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        setQuery({ [param]: text.trim(), offset: undefined });
      }}
    >
      <label>
        {label}
        <input type="search" value={text} onChange={(e) => setText(e.target.value)} />
      </label>
      <button type="submit">Search</button>
    </form>
  );
}

export interface Column<T> {
  title: string;
  cell(row: T): ReactNode;
  className?: string;
}

/** A table of rows with a loading row, an empty row, and (with `page`) the pager under it. */
export function ListTable<T>({
  className,
  label,
  columns,
  rows,
  rowKey,
  rowProps,
  loading,
  empty,
  page,
}: {
  className?: string;
  label?: string;
  columns: Column<T>[];
  rows: T[] | null | undefined;
  rowKey(row: T): string;
  rowProps?(row: T): HTMLAttributes<HTMLTableRowElement> & Record<`data-${string}`, string>;
  loading?: boolean;
  empty: ReactNode;
  page?: { offset: number; limit: number; total: number | null | undefined };
}) {
  return (
    <>
      <div className="table-wrap">
        <table className={className} aria-label={label}>
          <thead>
            <tr>
              {columns.map((c) => (
                <th key={c.title}>{c.title}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows?.map((r) => (
              <tr key={rowKey(r)} {...rowProps?.(r)}>
                {columns.map((c) => (
                  <td key={c.title} className={c.className} data-label={c.title || undefined}>
                    {c.cell(r)}
                  </td>
                ))}
              </tr>
            ))}
            {rows && rows.length === 0 && (
              <tr>
                <td colSpan={columns.length} className="muted">
                  {empty}
                </td>
              </tr>
            )}
            {!rows && loading && (
              <tr>
                <td colSpan={columns.length} className="muted">
                  Loading…
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {rows && page && (
        <Pager
          offset={page.offset}
          limit={page.limit}
          total={page.total}
          count={rows.length}
          onPage={(o) => setQuery({ offset: o ? String(o) : undefined })}
        />
      )}
    </>
  );
}

/** One action at a time: `run(f)` shows busy, and the API's refusal as a problem; its result or undefined. */
export function useAction() {
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async <T,>(f: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setProblem(null);
    try {
      return await f();
    } catch (e) {
      setProblem(toProblem(e));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { problem, busy, run };
}

/** Whether the caller may change a resource of this scope (docs/roles.md: brain any member, workspace workspace_admin, core core_admin). */
export function mayChangeScope(roles: readonly string[], scope: string): boolean {
  if (scope === 'brain') return true;
  if (scope === 'workspace') return roles.includes('workspace_admin') || roles.includes('core_admin');
  return scope === 'core' && roles.includes('core_admin');
}
