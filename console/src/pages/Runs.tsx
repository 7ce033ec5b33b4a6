import { useEffect, useState } from 'react';
import { qs, type Job, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { Link, setQuery, useLocation } from '../router';
import { ListTable } from '../components/ListTable';
import { ago, Badge, duration, Problem, shortId, useTick } from '../components/ui';
import { usePoll } from '../use-poll';

/*
 * The jobs list (GET /v1/jobs), live: polled every 2 s, filtered by the API's own filters (status,
 * pathway, receptor, neuron: one at a time besides status, as the list's indexes serve them) and
 * paged by offset. Filters live in the URL, so a reload or a shared link shows the same list.
 */
const LIMIT = 20;
const STATES = ['pending', 'running', 'waiting', 'paused', 'completed', 'failed'] as const;

type Named = { id: string; name: string };

/** Pathways, neurons and receptors of the brain by id, for names and the filter menus. */
export function useTargets(): Record<'pathway' | 'neuron' | 'receptor', Named[]> {
  const { api } = useAuth();
  const [t, setT] = useState<Record<'pathway' | 'neuron' | 'receptor', Named[]>>({
    pathway: [],
    neuron: [],
    receptor: [],
  });
  useEffect(() => {
    const abort = new AbortController();
    const list = async <K extends string>(path: string, key: K, name: (x: Record<string, unknown>) => string) => {
      try {
        const body = await api.get<Record<K, Record<string, unknown>[]>>(path, abort.signal);
        return body[key].map((x) => ({ id: String(x.id), name: name(x) }));
      } catch {
        return []; // a list the caller may not read leaves its menu empty
      }
    };
    void Promise.all([
      list('/v1/pathways?limit=200', 'pathways', (x) => String(x.name)),
      list('/v1/neurons?limit=200', 'neurons', (x) => String(x.name)),
      list('/v1/receptors?limit=200', 'receptors', (x) => String(x.slug ?? x.name ?? x.id)),
    ]).then(([pathway, neuron, receptor]) => !abort.signal.aborted && setT({ pathway, neuron, receptor }));
    return () => abort.abort();
  }, [api]);
  return t;
}

/** What a job runs, by name when the brain's lists know it. */
export function targetOf(job: Job, targets: ReturnType<typeof useTargets>): { label: string; title: string } {
  const find = (kind: keyof typeof targets, id: string) => targets[kind].find((x) => x.id === id)?.name;
  if (job.pathway_id)
    return {
      label: `${find('pathway', job.pathway_id) ?? shortId(job.pathway_id)}${job.pathway_version ? ` v${job.pathway_version}` : ''}`,
      title: `pathway ${job.pathway_id}`,
    };
  if (job.neuron_id)
    return { label: find('neuron', job.neuron_id) ?? shortId(job.neuron_id), title: `neuron ${job.neuron_id}` };
  if (job.receptor_id)
    return {
      label: find('receptor', job.receptor_id) ?? shortId(job.receptor_id),
      title: `receptor ${job.receptor_id}`,
    };
  return { label: '—', title: '' };
}

export default function Runs() {
  const { api } = useAuth();
  const { query } = useLocation();
  const targets = useTargets();
  const now = useTick(1000);
  const filters = {
    status: query.get('status') ?? undefined,
    pathway_id: query.get('pathway_id') ?? undefined,
    neuron_id: query.get('neuron_id') ?? undefined,
    receptor_id: query.get('receptor_id') ?? undefined,
  };
  const offset = Number(query.get('offset') ?? 0) || 0;
  const key = JSON.stringify({ filters, offset });
  const { data, problem, loading } = usePoll(
    (signal) => api.get<ResponseOf<'get', '/v1/jobs'>>(`/v1/jobs${qs({ ...filters, limit: LIMIT, offset })}`, signal),
    [api, key],
  );
  // One target filter at a time (the list is indexed per filter): choosing one clears the others.
  const target = filters.pathway_id
    ? `pathway:${filters.pathway_id}`
    : filters.neuron_id
      ? `neuron:${filters.neuron_id}`
      : filters.receptor_id
        ? `receptor:${filters.receptor_id}`
        : '';

  return (
    <>
      <div className="page-head">
        <h1>Runs</h1>
        <form className="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
          <label>
            Status
            <select
              value={filters.status ?? ''}
              onChange={(e) => setQuery({ status: e.target.value, offset: undefined })}
            >
              <option value="">any</option>
              {STATES.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>
          </label>
          <label>
            Target
            <select
              value={target}
              onChange={(e) => {
                const [kind, id] = e.target.value.split(':');
                setQuery({
                  pathway_id: kind === 'pathway' ? id : undefined,
                  neuron_id: kind === 'neuron' ? id : undefined,
                  receptor_id: kind === 'receptor' ? id : undefined,
                  offset: undefined,
                });
              }}
            >
              <option value="">any</option>
              {(['pathway', 'neuron', 'receptor'] as const).map((kind) => (
                <optgroup key={kind} label={`${kind}s`}>
                  {targets[kind].map((t) => (
                    <option key={t.id} value={`${kind}:${t.id}`}>
                      {t.name}
                    </option>
                  ))}
                  {target.startsWith(`${kind}:`) && !targets[kind].some((t) => target === `${kind}:${t.id}`) && (
                    <option value={target}>{target.slice(kind.length + 1)}</option>
                  )}
                </optgroup>
              ))}
            </select>
          </label>
        </form>
      </div>
      <Problem problem={problem} />
      <ListTable
        className="runs cards"
        label="Runs"
        rows={data?.jobs}
        rowKey={(j) => j.job_id}
        rowProps={(j) => ({ 'data-job-id': j.job_id })}
        loading={loading}
        empty={`No runs${target || filters.status ? ' match these filters' : ' yet'}.`}
        page={data ? { offset, limit: LIMIT, total: data.total } : undefined}
        columns={[
          {
            title: 'Status',
            cell: (j) => (
              <Link to={`/runs/${j.job_id}`} aria-label={`Run ${j.job_id}, ${j.status}`}>
                <Badge value={j.status} />
              </Link>
            ),
          },
          {
            title: 'Progress',
            cell: (j) => (
              <>
                <progress max={100} value={j.progress} aria-label={`${j.progress}%`} /> {Math.round(j.progress)}%
              </>
            ),
          },
          { title: 'Current step', className: 'step', cell: (j) => j.current_step ?? '—' },
          { title: 'Kind', cell: (j) => j.kind },
          {
            title: 'Target',
            cell: (j) => {
              const t = targetOf(j, targets);
              return <span title={t.title}>{t.label}</span>;
            },
          },
          {
            title: 'Started',
            cell: (j) => <span title={j.created_at}>{ago(j.processed_at ?? j.created_at, now)}</span>,
          },
          { title: 'Duration', cell: (j) => duration(j.processed_at ?? j.created_at, j.finished_at, now) },
        ]}
      />
    </>
  );
}
