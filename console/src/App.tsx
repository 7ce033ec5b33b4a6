import { lazy, Suspense, useEffect, useState, type ComponentType, type ReactElement } from 'react';
import { useAuth } from './auth';
import { Link, match, navigate, useLocation } from './router';
import Approvals from './pages/Approvals';
import Runs from './pages/Runs';
import Traces from './pages/Traces';
import Pathways from './pages/Pathways';
const Agents = lazy(() => import('./pages/Agents'));
// The command palette (Ctrl/Cmd-K) loads on first use.
const Palette = lazy(() => import('./components/Palette'));

// Pages that draw graphs load React Flow and dagre on demand: the lists stay light.
const Run = lazy(() => import('./pages/Run'));
const Trace = lazy(() => import('./pages/Trace'));
// Pathways, knowledge and usage: the graph pages, the editor and the charts load on demand too.
const Pathway = lazy(() => import('./pages/Pathway'));
const PathwayEditor = lazy(() => import('./pages/PathwayEditor'));
const PathwayDiff = lazy(() => import('./pages/PathwayDiff'));
const Knowledge = lazy(() => import('./pages/Knowledge'));
const Usage = lazy(() => import('./pages/Usage'));
// Agents: the list is light; the agent page (playground, versions) and the editor load on demand.
const Agent = lazy(() => import('./pages/Agent'));
const AgentEditor = lazy(() => import('./pages/AgentEditor'));
const Settings = lazy(() => import('./pages/Settings'));
const Triggers = lazy(() => import('./pages/Triggers'));
const Trigger = lazy(() => import('./pages/Trigger'));
const Tools = lazy(() => import('./pages/Tools'));
const Tool = lazy(() => import('./pages/Tool'));
const Workspace = lazy(() => import('./pages/Workspace'));
const Meeting = lazy(() => import('./pages/Meeting'));
// Evaluations (docs/evaluations.md): datasets, experiments and their comparison, all on demand.
const Datasets = lazy(() => import('./pages/Datasets'));
const Dataset = lazy(() => import('./pages/Dataset'));
const Experiments = lazy(() => import('./pages/Experiments'));
const Experiment = lazy(() => import('./pages/Experiment'));
const ExperimentCompare = lazy(() => import('./pages/ExperimentCompare'));

/**
 * The pages: a path pattern, the component it shows (given the path's named segments) and, for the
 * nav, its title. A page added here is in the nav and routed; nothing else to wire.
 */
const PAGES: { path: string; nav?: string; component: ComponentType<{ params: Record<string, string> }> }[] = [
  { path: '/agents', nav: 'Agents', component: Agents },
  { path: '/agents/new', component: AgentEditor },
  { path: '/agents/:id', component: Agent },
  { path: '/agents/:id/edit', component: AgentEditor },
  { path: '/runs', nav: 'Runs', component: Runs },
  { path: '/runs/:id', component: Run },
  { path: '/approvals', nav: 'Approvals', component: Approvals },
  { path: '/traces', nav: 'Traces', component: Traces },
  { path: '/traces/:id', component: Trace },
  { path: '/pathways', nav: 'Pathways', component: Pathways },
  { path: '/pathways/new', component: PathwayEditor },
  { path: '/pathways/:id', component: Pathway },
  { path: '/pathways/:id/edit', component: PathwayEditor },
  { path: '/pathways/:id/diff', component: PathwayDiff },
  { path: '/tools', nav: 'Tools', component: Tools },
  { path: '/tools/:id', component: Tool },
  { path: '/triggers', nav: 'Triggers', component: Triggers },
  { path: '/triggers/:id', component: Trigger },
  { path: '/datasets', nav: 'Datasets', component: Datasets },
  { path: '/datasets/:id', component: Dataset },
  // One nav entry for both: the datasets page links the experiments list.
  { path: '/experiments', component: Experiments },
  // Before /experiments/:id: the first match wins.
  { path: '/experiments/compare', component: ExperimentCompare },
  { path: '/experiments/:id', component: Experiment },
  { path: '/knowledge', nav: 'Knowledge', component: Knowledge },
  { path: '/usage', nav: 'Usage', component: Usage },
  { path: '/workspace', nav: 'Workspace', component: Workspace },
  { path: '/workspace/meetings/:id', component: Meeting },
  { path: '/settings', nav: 'Settings', component: Settings },
];

function Header({ onFind }: { onFind(): void }) {
  const { session, credential, setBrain, signOut } = useAuth();
  const { path } = useLocation();
  return (
    <header className="top">
      <Link to="/runs" className="brand">
        Cortex
      </Link>
      <nav aria-label="Main">
        {PAGES.filter((p) => p.nav).map((p) => (
          <Link key={p.path} to={p.path} aria-current={path.startsWith(p.path) ? 'page' : undefined}>
            {p.nav}
          </Link>
        ))}
      </nav>
      <div className="who">
        <button type="button" onClick={onFind} aria-keyshortcuts="Control+K Meta+K" title="Ctrl-K">
          Find…
        </button>
        <span className="muted" title={`workspace ${session.workspace.id}`}>
          {session.workspace.name}
        </span>
        {session.brains.length > 0 && (
          <select
            aria-label="Brain"
            value={credential.brainId ?? ''}
            onChange={(e) => setBrain(e.target.value || undefined)}
          >
            {session.brains.map((b) => (
              <option key={b.id} value={b.id}>
                {b.name}
              </option>
            ))}
          </select>
        )}
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </div>
    </header>
  );
}

export function App() {
  const { path } = useLocation();
  const [finding, setFinding] = useState(false);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        setFinding((f) => !f);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  useEffect(() => {
    if (path === '/' || path === '') navigate('/runs', { replace: true });
  }, [path]);
  let page: ReactElement = (
    <section className="card">
      <h1>Not found</h1>
      <p>
        Nothing here. <Link to="/runs">Go to runs</Link>.
      </p>
    </section>
  );
  for (const p of PAGES) {
    const params = match(p.path, path);
    if (params) {
      const C = p.component;
      page = <C key={path} params={params} />;
      break;
    }
  }
  return (
    <>
      <Header onFind={() => setFinding(true)} />
      {finding && (
        <Suspense fallback={null}>
          <Palette onClose={() => setFinding(false)} />
        </Suspense>
      )}
      <main className="page">
        <Suspense fallback={<p className="muted">Loading…</p>}>{page}</Suspense>
      </main>
    </>
  );
}
