import { useCallback, useEffect, useRef, useState } from 'react';
import { toProblem, type ApiProblem } from './api';

/**
 * Loads `load()` now and every `everyMs` while `live` (and the tab is visible), keeping the last
 * answer on screen while the next one loads. `reload()` loads at once (after an action).
 */
export function usePoll<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], everyMs = 2000, live = true) {
  const [data, setData] = useState<T | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [loading, setLoading] = useState(true);
  const loadRef = useRef(load);
  loadRef.current = load;
  const [nonce, setNonce] = useState(0);
  const reload = useCallback(() => setNonce((n) => n + 1), []);

  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const d = await loadRef.current(abort.signal);
        if (abort.signal.aborted) return;
        setData(d);
        setProblem(null);
      } catch (e) {
        if (abort.signal.aborted) return;
        setProblem(toProblem(e));
      } finally {
        if (!abort.signal.aborted) setLoading(false);
      }
      if (live && !abort.signal.aborted)
        timer = setTimeout(() => void tick(), document.visibilityState === 'visible' ? everyMs : everyMs * 5);
    };
    void tick();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, nonce, live, everyMs]);

  return { data, problem, loading, reload, setData };
}
