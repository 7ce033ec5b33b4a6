import { useEffect, useRef, useState } from 'react';
import { toProblem, type Api, type ApiProblem, type StreamEntry } from './api';
import { applyEntry, emptyRun, type Entry, type RunView } from './run-state';

/** Calls `fn` once per frame at most (or every 250 ms in a hidden tab, where frames stop). */
function frameBatcher(fn: () => void): () => void {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    const run = () => {
      queued = false;
      fn();
    };
    if (document.visibilityState === 'visible') requestAnimationFrame(run);
    else setTimeout(run, 250);
  };
}

export interface JobStream {
  view: RunView;
  entries: StreamEntry<Entry>[];
  /** Bumped whenever the view changed (the view itself changes in place). */
  version: number;
  /** following: connected and reading; ended: the terminal entry came, or the job had ended (204). */
  phase: 'connecting' | 'following' | 'ended' | 'failed';
  problem: ApiProblem | null;
}

/**
 * Follows a job's stream (GET /v1/jobs/:id/stream) through the client's fetch reader: the bearer
 * token in a header (an EventSource cannot send one), resumed after a cut from the last entry id, and
 * folded into a RunView as entries arrive. Stops after the terminal entry or when the page leaves.
 */
export function useJobStream(api: Api, jobId: string): JobStream {
  const viewRef = useRef<RunView>(emptyRun());
  const entriesRef = useRef<StreamEntry<Entry>[]>([]);
  const [version, setVersion] = useState(0);
  const [phase, setPhase] = useState<JobStream['phase']>('connecting');
  const [problem, setProblem] = useState<ApiProblem | null>(null);

  useEffect(() => {
    viewRef.current = emptyRun();
    entriesRef.current = [];
    setVersion((v) => v + 1);
    setPhase('connecting');
    setProblem(null);
    const abort = new AbortController();
    const bump = frameBatcher(() => setVersion((v) => v + 1));
    (async () => {
      const stream = api.jobs.stream(jobId, { signal: abort.signal, onConnect: () => setPhase('following') });
      for await (const entry of stream) {
        const e = entry as StreamEntry<Entry>;
        if (e.data.type === 'stream_reset') entriesRef.current = [];
        entriesRef.current.push(e);
        applyEntry(viewRef.current, e.data);
        bump();
      }
      setPhase('ended');
    })().catch((err: unknown) => {
      if (abort.signal.aborted) return;
      setProblem(toProblem(err));
      setPhase('failed');
    });
    return () => abort.abort();
  }, [api, jobId]);

  return { view: viewRef.current, entries: entriesRef.current, version, phase, problem };
}
