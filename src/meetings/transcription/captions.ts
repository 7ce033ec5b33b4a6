import type { AudioChunk, TranscriptionSession } from '../model.js';
import { BYTES_PER_MS, msOf } from '../../stt/audio.js';
import type { CaptionOutcome, LiveTranscriptionInput } from '../../temporal/definitions.js';
import { ms, type Billing, type TranscriptionCore, type TranscriptionDeps } from './common.js';

/** New audio needed before another partial caption (ms). */
const PARTIAL_EVERY_MS = 1000;
/** Final caption windows made per caption pass (the workflow calls again while `more`). */
const WINDOWS_PER_PASS = 4;

type Sized = Pick<AudioChunk, 'seq' | 'bytes'>;

/** The index of the chunk that completes a window starting at `k` (at least `windowBytes`), or -1. */
function windowEnd(rows: Sized[], k: number, windowBytes: number): number {
  let bytes = 0;
  for (let j = k; j < rows.length; j++) {
    bytes += rows[j].bytes;
    if (bytes >= windowBytes) return j;
  }
  return -1;
}

/**
 * Live captions, the `liveTranscription` workflow's caption passes: they read the stored audio, so
 * a worker restart loses nothing and no audio enters a Temporal history.
 */
export function createLiveCaptions(d: TranscriptionDeps, core: TranscriptionCore) {
  const { repo, config } = d;
  const { captionKey } = core;

  /**
   * Final captions for up to WINDOWS_PER_PASS complete windows of `rows` (from the session's caption
   * mark); returns where the uncaptioned tail starts, how many windows were made and the session now.
   */
  async function finalWindows(
    i: LiveTranscriptionInput,
    first: TranscriptionSession,
    rows: Sized[],
    o: { hints: string[]; bill: (key: string) => Billing },
  ) {
    let s = first;
    const windowBytes = config.LIVE_CAPTION_WINDOW_MS * BYTES_PER_MS;
    let k = 0;
    let windows = 0;
    for (; windows < WINDOWS_PER_PASS; windows++) {
      const end = windowEnd(rows, k, windowBytes);
      if (end < 0) break;
      const from = rows[k].seq;
      const to = rows[end].seq;
      const { pcm } = await core.audioOf(s, from, to);
      const t = await core.transcribe(
        pcm,
        { locale: s.locale, diarize: false, hints: o.hints, live: true },
        o.bill(`window:${from}`),
      );
      // The window is claimed before its caption is written: a retried pass never captions it twice.
      if (await repo.claimCaptionWindow(s, from, to, s.captionMs + msOf(pcm.length))) {
        await d.streams.append(captionKey(s), {
          type: 'final',
          text: t.text,
          seq_from: from,
          seq_to: to,
          start_ms: ms(s.captionMs),
          end_ms: ms(s.captionMs + msOf(pcm.length)),
        });
      }
      s = await core.load(i);
      k = end + 1;
    }
    return { k, windows, session: s };
  }

  return {
    // ---- the liveTranscription workflow's activities ----
    async liveBegin(i: LiveTranscriptionInput) {
      await d.jobs.transition(i.workspaceId, i.jobId, { status: 'running', currentStep: 'live' });
    },

    /** One caption pass: final captions for every complete window of contiguous audio, then a partial for the rest. */
    async liveCaption(i: LiveTranscriptionInput, partialSeq: number, attempt = 1): Promise<CaptionOutcome> {
      const bill = (key: string): Billing => ({
        key: `${key}:${attempt}`,
        workspaceId: i.workspaceId,
        brainId: i.brainId,
        jobId: i.jobId,
      });
      const first = await core.load(i);
      const hints = await d.vocabulary.hintsFor(i.workspaceId, i.brainId);
      const rows = await repo.chunkSizes(first, first.captionSeq, first.contiguous);
      const { k, windows, session: s } = await finalWindows(i, first, rows, { hints, bill });
      const tail = rows.slice(k);
      const tailBytes = tail.reduce((n, r) => n + r.bytes, 0);
      const lastSeq = tail.at(-1)?.seq ?? -1;
      if (tail.length && lastSeq > partialSeq && tailBytes >= PARTIAL_EVERY_MS * BYTES_PER_MS && s.status === 'live') {
        const { pcm } = await core.audioOf(s, tail[0].seq, lastSeq);
        const t = await core.transcribe(
          pcm,
          { locale: s.locale, diarize: false, hints, live: true },
          bill(`partial:${lastSeq}`),
        );
        await d.streams.append(captionKey(s), {
          type: 'partial',
          text: t.text,
          seq_from: tail[0].seq,
          seq_to: lastSeq,
          start_ms: ms(s.captionMs),
          end_ms: ms(s.captionMs + msOf(pcm.length)),
        });
        partialSeq = lastSeq;
      }
      // A full pass may have left complete windows behind: the workflow calls again at once.
      return { captionSeq: (await core.load(i)).captionSeq, partialSeq, more: windows === WINDOWS_PER_PASS };
    },
  };
}
