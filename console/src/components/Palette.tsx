import { useEffect, useMemo, useRef, useState } from 'react';
import { qs, type ApiSchema, type ResponseOf } from '../api';
import { useAuth } from '../auth';
import { navigate } from '../router';

/*
 * The command palette (Ctrl-K or Cmd-K, loaded on first use): jumps to an agent, a pathway, a trace,
 * a run, a knowledge resource (asset or artifact) or a trigger (receptor) by name or id. When it opens
 * it reads the brain's agents, pathways, assets, artifacts and receptors and the latest runs (each
 * list once per opening, 200 at most); a resource is also found by its folder, a trigger by its slug
 * or the name of what it runs; a run is found by its id or its target's name;
 * traces are searched by the API as you type (GET /v1/traces?search=: title or id). A run
 * older than the latest 200 is not found (no route searches runs by id without a 404 for a miss). Up and Down choose, Enter goes, Escape closes.
 */
/** The fields of an asset or artifact row the palette matches on. */
interface Doc {
  id: string;
  name: string;
  path: string;
}

interface Hit {
  kind: 'agent' | 'pathway' | 'trace' | 'run' | 'asset' | 'artifact' | 'trigger';
  label: string;
  detail: string;
  to: string;
}

export default function Palette({ onClose }: { onClose(): void }) {
  const { api, credential } = useAuth();
  const [q, setQ] = useState('');
  const [sel, setSel] = useState(0);
  const [base, setBase] = useState<{
    neurons: ApiSchema<'NeuronList'>['neurons'];
    pathways: ApiSchema<'PathwayList'>['pathways'];
    jobs: ResponseOf<'get', '/v1/jobs'>['jobs'];
    assets: Doc[];
    artifacts: Doc[];
    receptors: ResponseOf<'get', '/v1/receptors'>['receptors'];
  } | null>(null);
  const [traces, setTraces] = useState<ResponseOf<'get', '/v1/traces'>['traces']>([]);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    input.current?.focus();
    const abort = new AbortController();
    const brain = Boolean(credential.brainId);
    void Promise.all([
      brain
        ? api.get<ApiSchema<'NeuronList'>>(`/v1/neurons${qs({ limit: 200, sortBy: 'updated_at' })}`, abort.signal)
        : Promise.resolve({ neurons: [] }),
      api.get<ApiSchema<'PathwayList'>>(`/v1/pathways${qs({ limit: 200, sortBy: 'updated_at' })}`, abort.signal),
      api.get<ResponseOf<'get', '/v1/jobs'>>(`/v1/jobs${qs({ limit: 200 })}`, abort.signal),
      api.get<{ assets: Doc[] }>(`/v1/assets${qs({ limit: 200 })}`, abort.signal),
      api.get<{ artifacts: Doc[] }>(`/v1/artifacts${qs({ limit: 200 })}`, abort.signal),
      brain
        ? api.get<ResponseOf<'get', '/v1/receptors'>>(
            `/v1/receptors${qs({ limit: 200, sortBy: 'updated_at' })}`,
            abort.signal,
          )
        : Promise.resolve({ receptors: [] }),
    ])
      .then(([n, p, j, as, ar, r]) =>
        setBase({
          neurons: n.neurons,
          pathways: p.pathways,
          jobs: j.jobs,
          assets: as.assets,
          artifacts: ar.artifacts,
          receptors: r.receptors,
        }),
      )
      .catch(() => undefined);
    return () => abort.abort();
  }, [api, credential.brainId]);

  const text = q.trim().toLowerCase();
  useEffect(() => {
    if (!text) return setTraces([]);
    const abort = new AbortController();
    const t = setTimeout(() => {
      api
        .get<ResponseOf<'get', '/v1/traces'>>(`/v1/traces${qs({ search: text, limit: 8 })}`, abort.signal)
        .then((r) => setTraces(r.traces))
        .catch(() => undefined);
    }, 150);
    return () => {
      clearTimeout(t);
      abort.abort();
    };
  }, [api, text]);

  const hits = useMemo(() => {
    if (!base || !text) return [] as Hit[];
    const has = (...xs: (string | null | undefined)[]) => xs.some((x) => x?.toLowerCase().includes(text));
    const names = new Map<string, string>([
      ...base.neurons.map((n) => [n.id, n.name] as const),
      ...base.pathways.map((p) => [p.id, p.name] as const),
    ]);
    const out: Hit[] = [];
    for (const n of base.neurons)
      if (has(n.name, n.id)) out.push({ kind: 'agent', label: n.name, detail: n.id, to: `/agents/${n.id}` });
    for (const p of base.pathways)
      if (has(p.name, p.id)) out.push({ kind: 'pathway', label: p.name, detail: p.id, to: `/pathways/${p.id}` });
    for (const [kind, docs] of [
      ['asset', base.assets],
      ['artifact', base.artifacts],
    ] as const)
      for (const d of docs)
        if (has(d.name, d.path, d.id))
          out.push({
            kind,
            label: d.path ? `${d.path}/${d.name}` : d.name,
            detail: d.id,
            to: `/knowledge?${kind}=${d.id}`,
          });
    for (const r of base.receptors) {
      const target = names.get(r.executable_target.id ?? '') ?? null;
      if (has(r.slug, r.id, target))
        out.push({
          kind: 'trigger',
          label: target ? `${r.slug} → ${target}` : r.slug,
          detail: r.id,
          to: `/triggers/${r.id}`,
        });
    }
    for (const t of traces)
      out.push({
        kind: 'trace',
        label: t.title || `Trace ${t.trace_id.slice(0, 8)}`,
        detail: t.trace_id,
        to: `/traces/${t.trace_id}`,
      });
    for (const j of base.jobs) {
      const target = names.get(j.neuron_id ?? j.pathway_id ?? '') ?? null;
      if (has(j.job_id, target))
        out.push({
          kind: 'run',
          label: `${target ?? j.kind} · ${j.status}`,
          detail: j.job_id,
          to: `/runs/${j.job_id}`,
        });
    }
    return out.slice(0, 30);
  }, [base, traces, text]);

  const all = hits;
  const go = (h: Hit | undefined) => {
    if (!h) return;
    onClose();
    navigate(h.to);
  };
  return (
    <div className="palette-backdrop" onMouseDown={onClose}>
      <div
        className="palette card"
        role="dialog"
        aria-modal="true"
        aria-label="Go to"
        onMouseDown={(e) => e.stopPropagation()}
      >
        <input
          ref={input}
          type="search"
          role="combobox"
          aria-expanded={all.length > 0}
          aria-controls="palette-list"
          aria-label="Agent, pathway, trace, run, resource or trigger: name or id"
          placeholder="Agent, pathway, trace, run, resource or trigger: name or id"
          value={q}
          onChange={(e) => {
            setQ(e.target.value);
            setSel(0);
          }}
          onKeyDown={(e) => {
            if (e.key === 'Escape') onClose();
            else if (e.key === 'ArrowDown') {
              e.preventDefault();
              setSel((s) => Math.min(all.length - 1, s + 1));
            } else if (e.key === 'ArrowUp') {
              e.preventDefault();
              setSel((s) => Math.max(0, s - 1));
            } else if (e.key === 'Enter') {
              e.preventDefault();
              go(all[sel]);
            }
          }}
        />
        <ul id="palette-list" role="listbox" aria-label="Results">
          {all.map((h, i) => (
            <li
              key={`${h.kind}:${h.detail}`}
              role="option"
              aria-selected={i === sel}
              data-kind={h.kind}
              onMouseEnter={() => setSel(i)}
              onClick={() => go(h)}
            >
              <span className="badge">{h.kind}</span> {h.label}{' '}
              <code className="muted small">{h.detail.slice(0, 8)}</code>
            </li>
          ))}
          {text && base && all.length === 0 && <li className="muted">Nothing found.</li>}
          {!base && <li className="muted">Loading…</li>}
        </ul>
      </div>
    </div>
  );
}
