import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import {
  createApi,
  toProblem,
  type Api,
  type ApiProblem,
  type Credential,
  type SessionContext,
  type ResponseOf,
} from './api';

/*
 * Sign-in: an API key or a JWT (both are bearer tokens), checked against GET /v1/session/context and
 * kept in session storage (this tab only; never in a URL, never in local storage). The brain chosen
 * in the header is sent as X-Brain-Id. Roles come from the same session context: the console hides a
 * control the API would refuse, and the API still decides.
 */
const KEY = 'cortex.console.credential';

function stored(): Credential | null {
  try {
    const c = JSON.parse(sessionStorage.getItem(KEY) ?? 'null') as Credential | null;
    return c && typeof c.token === 'string' ? c : null;
  } catch {
    return null;
  }
}

export interface Auth {
  api: Api;
  session: SessionContext;
  credential: Credential;
  isAdmin: boolean;
  setBrain(brainId: string | undefined): void;
  signOut(): void;
}

const AuthContext = createContext<Auth | null>(null);

/** The signed-in session; only rendered below <AuthGate>, so it is always there. */
export function useAuth(): Auth {
  const a = useContext(AuthContext);
  if (!a) throw new Error('useAuth outside <AuthGate>');
  return a;
}

/** Shows the sign-in form until a credential is accepted, then its children with the session. */
export function AuthGate({ children }: { children: ReactNode }) {
  const [credential, setCredential] = useState<Credential | null>(stored);
  const [session, setSession] = useState<SessionContext | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [checking, setChecking] = useState(credential !== null);
  const api = useMemo(() => (credential ? createApi(credential) : null), [credential]);

  useEffect(() => {
    if (!api || !credential) return;
    let live = true;
    setChecking(true);
    api
      .get<ResponseOf<'get', '/v1/session/context'>>('/v1/session/context')
      .then((s) => {
        if (!live) return;
        // A workspace with brains: default to the first, so brain-scoped calls work at once.
        if (!credential.brainId && s.brains.length) {
          const next = { ...credential, brainId: s.brains[0].id };
          sessionStorage.setItem(KEY, JSON.stringify(next));
          setCredential(next);
          return;
        }
        setSession(s);
        setProblem(null);
      })
      .catch((e: unknown) => {
        if (!live) return;
        sessionStorage.removeItem(KEY);
        setCredential(null);
        setSession(null);
        setProblem(toProblem(e));
      })
      .finally(() => live && setChecking(false));
    return () => {
      live = false;
    };
  }, [api, credential]);

  const signIn = useCallback((token: string) => {
    const c = { token: token.trim() };
    sessionStorage.setItem(KEY, JSON.stringify(c));
    setProblem(null);
    setCredential(c);
  }, []);
  const signOut = useCallback(() => {
    sessionStorage.removeItem(KEY);
    setCredential(null);
    setSession(null);
  }, []);
  const setBrain = useCallback(
    (brainId: string | undefined) => {
      if (!credential) return;
      const next = { ...credential, brainId };
      sessionStorage.setItem(KEY, JSON.stringify(next));
      setSession(null);
      setCredential(next);
    },
    [credential],
  );

  const auth = useMemo<Auth | null>(
    () =>
      api && session && credential
        ? {
            api,
            session,
            credential,
            isAdmin: session.roles.includes('workspace_admin') || session.roles.includes('core_admin'),
            setBrain,
            signOut,
          }
        : null,
    [api, session, credential, setBrain, signOut],
  );

  if (auth) return <AuthContext.Provider value={auth}>{children}</AuthContext.Provider>;
  return <SignIn onSubmit={signIn} problem={problem} busy={checking} />;
}

function SignIn({
  onSubmit,
  problem,
  busy,
}: {
  onSubmit(token: string): void;
  problem: ApiProblem | null;
  busy: boolean;
}) {
  const [token, setToken] = useState('');
  return (
    <main className="signin">
      <form
        className="card"
        onSubmit={(e) => {
          e.preventDefault();
          if (token.trim()) onSubmit(token);
        }}
      >
        <h1>Cortex console</h1>
        <p className="muted">
          Sign in with an API key or a JWT. It is kept for this tab only (session storage) and sent as a bearer token to
          this server&apos;s API.
        </p>
        <label htmlFor="token">API key or JWT</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={token}
          onChange={(e) => setToken(e.target.value)}
          autoFocus
        />
        {problem && (
          <p className="error" role="alert">
            {problem.message} ({problem.code})
          </p>
        )}
        <button type="submit" className="primary" disabled={busy || !token.trim()}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
