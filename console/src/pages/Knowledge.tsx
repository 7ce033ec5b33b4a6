import { useEffect, useRef, useState } from 'react';
import { postForm, toProblem, type ApiProblem, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { ago, Problem, Section, shortId, useTick } from '../components/ui';
import { Link, setQuery, useLocation } from '../router';
import '../pathways.css';
import '../knowledge.css';

/*
 * Knowledge: the brain's assets and artifacts by folder (GET /v1/resources/tree, one folder level
 * per request as it is opened), a resource's versions (GET /v1/{assets|artifacts}/:id/versions),
 * an upload (POST /v1/assets/ingest, multipart: the file streams to the blob store and is chunked
 * and embedded by an ingest job), and one search box over every searchable type: POST /v1/search
 * per type with `explain`, merged by fused score (the scores of one query are comparable across
 * types: every type runs the same legs with the same k and weights), each hit with its lexical
 * rank, vector rank and fused score. The resource shown is in the URL (`?asset=<id>` or
 * `?artifact=<id>`), so a link (the command palette's) opens it.
 */

type Tree = ApiSchema<'ResourceTree'>;
type Row = Tree['items'][number];
type Hit = ApiSchema<'SearchHit'>;
type SearchResult = ApiSchema<'SearchResult'>;

/** The types POST /v1/search takes (`type/pattern`), in the API's order (docs/search.md). */
const SEARCH_TYPES = [
  'assets',
  'artifacts',
  'stakeholder_maps',
  'meetings',
  'action_plans',
  'receptors',
  'pathways',
  'neurons',
  'reflexes',
] as const;

type Picked = { kind: 'asset' | 'artifact'; id: string; name: string };

export default function Knowledge() {
  const { query } = useLocation();
  const assetId = query.get('asset');
  const artifactId = query.get('artifact');
  const fromUrl: Picked | null = assetId
    ? { kind: 'asset', id: assetId, name: '' }
    : artifactId
      ? { kind: 'artifact', id: artifactId, name: '' }
      : null;
  const [picked, setPickedState] = useState<Picked | null>(fromUrl);
  // A link to another resource while the page is open (the palette): the URL decides.
  if (fromUrl && fromUrl.id !== picked?.id) setPickedState(fromUrl);
  const setPicked = (p: Picked) => {
    setPickedState(p);
    setQuery({ asset: p.kind === 'asset' ? p.id : undefined, artifact: p.kind === 'artifact' ? p.id : undefined });
  };
  const [treeVersion, setTreeVersion] = useState(0);
  return (
    <>
      <div className="page-head">
        <h1>Knowledge</h1>
      </div>
      <SearchBox onPick={setPicked} />
      <div className="two kn-layout">
        <Section title="Folders">
          <ul className="kn-tree" aria-label="Assets and artifacts by folder">
            <Folder path="" name="/" open onPick={setPicked} picked={picked} version={treeVersion} />
          </ul>
        </Section>
        <div>
          <Upload
            onDone={(p) => {
              setTreeVersion((v) => v + 1);
              setPicked(p);
            }}
          />
          {picked && <Details key={`${picked.id}-${treeVersion}`} picked={picked} />}
        </div>
      </div>
    </>
  );
}

/** One folder of the tree: its sub-folders and the items right there, loaded when it is opened. */
function Folder({
  path,
  name,
  count,
  open: initiallyOpen = false,
  onPick,
  picked,
  version,
}: {
  path: string;
  name: string;
  count?: number;
  open?: boolean;
  onPick(p: Picked): void;
  picked: Picked | null;
  version: number;
}) {
  const { api } = useAuth();
  const [open, setOpen] = useState(initiallyOpen);
  const [tree, setTree] = useState<Tree | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  useEffect(() => {
    if (!open) return;
    const abort = new AbortController();
    api
      .get<Tree>(`/v1/resources/tree?path_prefix=${encodeURIComponent(path)}&limit=1000`, abort.signal)
      .then((t) => {
        setTree(t);
        setProblem(null);
      })
      .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, path, open, version]);
  const listId = `kn-folder-${path || 'root'}`;
  return (
    <li className="kn-folder" data-path={path}>
      <button
        type="button"
        className="kn-toggle"
        aria-expanded={open}
        aria-controls={listId}
        onClick={() => setOpen(!open)}
      >
        <span aria-hidden="true">{open ? '▾' : '▸'}</span> {name}
        {count !== undefined && <span className="muted"> ({count})</span>}
      </button>
      {open && (
        <ul id={listId}>
          {problem && (
            <li>
              <Problem problem={problem} />
            </li>
          )}
          {!tree && !problem && <li className="muted">Loading…</li>}
          {tree?.folders.map((f) => (
            <Folder
              key={f.path}
              path={f.path}
              name={f.name}
              count={f.item_count}
              onPick={onPick}
              picked={picked}
              version={version}
            />
          ))}
          {tree?.items.map((r: Row) => (
            <li key={r.id} className="kn-item" data-id={r.id} data-kind={r.kind}>
              <button
                type="button"
                aria-pressed={picked?.id === r.id}
                onClick={() => onPick({ kind: r.kind === 'artifact' ? 'artifact' : 'asset', id: r.id, name: r.name })}
              >
                <span className={`kn-kind kn-${r.kind}`}>{r.kind}</span> {r.name}
              </button>
            </li>
          ))}
          {tree && tree.folders.length === 0 && tree.items.length === 0 && <li className="muted">Empty.</li>}
          {tree?.truncated && <li className="muted">Only the first 1,000 resources are shown.</li>}
        </ul>
      )}
    </li>
  );
}

type Version = {
  version: number;
  changes: string[];
  name: string;
  path: string;
  size: number;
  created_at: string;
  content_type: string | null;
};

/** A resource's head facts and its kept versions. */
function Details({ picked }: { picked: Picked }) {
  const { api } = useAuth();
  const now = useTick(10_000);
  const [head, setHead] = useState<Record<string, unknown> | null>(null);
  const [versions, setVersions] = useState<Version[] | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const lane = picked.kind === 'artifact' ? 'artifacts' : 'assets';
  useEffect(() => {
    const abort = new AbortController();
    Promise.all([
      api.get<Record<string, unknown>>(`/v1/${lane}/${picked.id}`, abort.signal),
      api.get<{ versions: Version[] }>(`/v1/${lane}/${picked.id}/versions`, abort.signal),
    ])
      .then(([h, v]) => {
        setHead(h);
        setVersions([...v.versions].sort((a, b) => b.version - a.version));
      })
      .catch((e: unknown) => !abort.signal.aborted && setProblem(toProblem(e)));
    return () => abort.abort();
  }, [api, lane, picked.id]);
  const ingest = head?.ingest as { status?: string } | undefined;
  return (
    <Section title={picked.name || (typeof head?.name === 'string' ? head.name : shortId(picked.id))}>
      <Problem problem={problem} />
      {head && (
        <dl className="facts">
          <dt>Kind</dt>
          <dd>{picked.kind}</dd>
          <dt>Folder</dt>
          <dd>{String(head.path) || '/'}</dd>
          <dt>Type</dt>
          <dd>{String(head.content_type ?? '—')}</dd>
          <dt>Size</dt>
          <dd>{typeof head.size === 'number' ? `${head.size.toLocaleString()} bytes` : '—'}</dd>
          <dt>Ingest</dt>
          <dd>{ingest?.status ?? '—'}</dd>
          <dt>Id</dt>
          <dd>
            <code title={picked.id}>{shortId(picked.id)}</code>
          </dd>
        </dl>
      )}
      <h4>Versions</h4>
      <div className="table-wrap">
        <table className="kn-versions">
          <thead>
            <tr>
              <th>Version</th>
              <th>Changes</th>
              <th>Name</th>
              <th>Size</th>
              <th>When</th>
            </tr>
          </thead>
          <tbody>
            {versions?.map((v) => (
              <tr key={v.version} data-version={v.version}>
                <td>v{v.version}</td>
                <td className="step">{v.changes.join(', ') || '—'}</td>
                <td>{v.name}</td>
                <td>{v.size.toLocaleString()}</td>
                <td title={v.created_at}>{ago(v.created_at, now)}</td>
              </tr>
            ))}
            {!versions && (
              <tr>
                <td colSpan={5} className="muted">
                  Loading…
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </Section>
  );
}

/** Uploads one file as an asset into a folder; the tree reloads and shows it. */
function Upload({ onDone }: { onDone(p: Picked): void }) {
  const { credential } = useAuth();
  const file = useRef<HTMLInputElement>(null);
  const [path, setPath] = useState('');
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [done, setDone] = useState('');
  return (
    <Section title="Upload an asset">
      <form
        className="kn-upload"
        onSubmit={(e) => {
          e.preventDefault();
          const f = file.current?.files?.[0];
          if (!f) return;
          const form = new FormData();
          if (name.trim()) form.set('name', name.trim());
          if (path.trim()) form.set('path', path.trim());
          form.set('file', f, f.name);
          setBusy(true);
          setProblem(null);
          setDone('');
          postForm<{ asset: { id: string; name: string; path: string }; job_id: string | null }>(
            credential,
            '/v1/assets/ingest',
            form,
          )
            .then((r) => {
              setDone(
                `Uploaded ${r.asset.name} to /${r.asset.path}${r.job_id ? `; ingest job ${shortId(r.job_id)} chunks and embeds it` : ''}.`,
              );
              if (file.current) file.current.value = '';
              setName('');
              onDone({ kind: 'asset', id: r.asset.id, name: r.asset.name });
            })
            .catch((err: unknown) => setProblem(toProblem(err)))
            .finally(() => setBusy(false));
        }}
      >
        <label>
          File
          <input ref={file} type="file" required />
        </label>
        <label>
          Folder
          <input
            value={path}
            onChange={(e) => setPath(e.target.value)}
            placeholder="projects/alpha"
            spellCheck={false}
          />
        </label>
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder="the file's name" />
        </label>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Uploading…' : 'Upload'}
        </button>
      </form>
      <Problem problem={problem} />
      {done && (
        <p className="ok" role="status">
          {done}
        </p>
      )}
    </Section>
  );
}

/** Every searchable type at once, with explain; hits merged by fused score. */
function SearchBox({ onPick }: { onPick(p: Picked): void }) {
  const { api } = useAuth();
  const [q, setQ] = useState('');
  const [mode, setMode] = useState<'hybrid' | 'lexical' | 'vector'>('hybrid');
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [failed, setFailed] = useState<{ type: string; problem: ApiProblem }[]>([]);
  const [busy, setBusy] = useState(false);
  const search = async () => {
    const term = q.trim();
    if (!term) return;
    setBusy(true);
    const answers = await Promise.all(
      SEARCH_TYPES.map((type) =>
        api
          .post<SearchResult>('/v1/search', { query: `${type}/${term}`, search_mode: mode, explain: true, limit: 10 })
          .then((r) => ({ type, hits: r.results }))
          .catch((e: unknown) => ({ type, problem: toProblem(e) })),
      ),
    );
    setHits(answers.flatMap((a) => ('hits' in a ? a.hits : [])).sort((a, b) => b.score - a.score));
    setFailed(answers.flatMap((a) => ('problem' in a ? [{ type: a.type, problem: a.problem }] : [])));
    setBusy(false);
  };
  return (
    <Section title="Search">
      <form
        className="filters"
        role="search"
        aria-label="Search every type"
        onSubmit={(e) => {
          e.preventDefault();
          void search();
        }}
      >
        <label className="kn-q">
          Search assets, artifacts, pathways, neurons and more
          <input type="search" value={q} onChange={(e) => setQ(e.target.value)} />
        </label>
        <label>
          Mode
          <select value={mode} onChange={(e) => setMode(e.target.value as typeof mode)}>
            <option value="hybrid">hybrid</option>
            <option value="lexical">lexical</option>
            <option value="vector">vector</option>
          </select>
        </label>
        <button type="submit" className="primary" disabled={busy || !q.trim()}>
          {busy ? 'Searching…' : 'Search'}
        </button>
      </form>
      {failed.map((f) => (
        <p key={f.type} className="error">
          {f.type}: {f.problem.message}
        </p>
      ))}
      {hits && (
        <>
          <p className="muted" role="status">
            {hits.length} hit{hits.length === 1 ? '' : 's'}, ordered by fused score (reciprocal rank fusion).
          </p>
          <ol className="kn-hits">
            {hits.map((h) => (
              <li key={`${h.type}-${h.id}`} data-type={h.type} data-id={h.id}>
                <div className="kn-hit-head">
                  <span className="kn-kind">{h.type}</span> <HitTitle hit={h} onPick={onPick} />
                  {h.path && <span className="muted"> /{h.path}</span>}
                </div>
                {h.snippet && <p className="kn-snippet">{h.snippet}</p>}
                {h.explain && <Explain e={h.explain} />}
              </li>
            ))}
          </ol>
        </>
      )}
    </Section>
  );
}

function HitTitle({ hit, onPick }: { hit: Hit; onPick(p: Picked): void }) {
  if (hit.type === 'assets' || hit.type === 'artifacts')
    return (
      <button
        type="button"
        className="link"
        onClick={() => onPick({ kind: hit.type === 'artifacts' ? 'artifact' : 'asset', id: hit.id, name: hit.title })}
      >
        {hit.title}
      </button>
    );
  if (hit.type === 'pathways') return <Link to={`/pathways/${hit.id}`}>{hit.title}</Link>;
  return <strong>{hit.title}</strong>;
}

function Explain({ e }: { e: NonNullable<Hit['explain']> }) {
  return (
    <dl className="kn-explain" aria-label="Why this hit">
      <div>
        <dt>lexical</dt>
        <dd data-leg="lexical">{e.lexical ? `#${e.lexical.rank} (BM25 ${e.lexical.score.toFixed(3)})` : '—'}</dd>
      </div>
      <div>
        <dt>vector</dt>
        <dd data-leg="vector">{e.vector ? `#${e.vector.rank} (cosine ${e.vector.similarity.toFixed(3)})` : '—'}</dd>
      </div>
      <div>
        <dt>fused</dt>
        <dd data-leg="fused" title={`k ${e.k}, weights lexical ${e.weights.lexical} / vector ${e.weights.vector}`}>
          {e.fused.toFixed(4)}
          {e.kept_by_lexical ? ' (kept by lexical)' : ''}
        </dd>
      </div>
    </dl>
  );
}
