import { niceMax } from '../chart-axis';
import { useWidth } from '../use-width';

/*
 * The console's charts: plain SVG drawn by React (docs/decisions.md, "Console"). A handful of
 * buckets and bars needs no chart library: the chart is drawn at its card's measured width (labels
 * keep their size from phone to desktop), each bar carries its value (a <title> for pointers, the
 * data table for everyone), and nothing sets inline styles, so the strict CSP stays as it is.
 */

export interface Point {
  /** Short axis label (`14:00`, `03-07`). */
  label: string;
  /** Full bucket name (`2026-03-07 14:00–15:00 UTC`). */
  title: string;
  value: number;
}

const H = 220;
const L = 64;
const B = 26;
const T = 10;

/** Bars over time, with a y axis of three ticks, x labels thinned to fit, and the data as a table. */
export function TimeBars({
  points,
  format,
  label,
}: {
  points: Point[];
  format(v: number): string;
  /** What the chart shows (`Tokens per hour, last 24 hours`): its accessible name and caption. */
  label: string;
}) {
  // Drawn at the card's own width, so labels keep their size from phone to desktop.
  const [box, measured] = useWidth<HTMLElement>();
  const W = Math.max(280, measured || 720);
  const top = niceMax(Math.max(0, ...points.map((p) => p.value)));
  const slot = (W - L - 4) / Math.max(1, points.length);
  const barW = Math.max(2, slot * 0.72);
  const y = (v: number) => T + (H - T - B) * (1 - v / top);
  const every = Math.max(1, Math.ceil(points.length / Math.max(2, Math.floor((W - L) / 56))));
  const total = points.reduce((a, p) => a + p.value, 0);
  const peak = points.reduce<Point | null>((m, p) => (!m || p.value > m.value ? p : m), null);
  return (
    <figure className="chart" ref={box}>
      <svg
        viewBox={`0 0 ${W} ${H}`}
        width={W}
        height={H}
        className="chart-svg"
        role="img"
        aria-label={`${label}: total ${format(total)}${peak && peak.value > 0 ? `, peak ${format(peak.value)} (${peak.title})` : ''}`}
      >
        {[0, 0.5, 1].map((f) => (
          <g key={f} className="chart-grid">
            <line x1={L} x2={W} y1={y(top * f)} y2={y(top * f)} />
            <text x={L - 6} y={y(top * f) + 4} textAnchor="end">
              {format(top * f)}
            </text>
          </g>
        ))}
        {points.map((p, i) => {
          const x = L + 2 + i * slot + (slot - barW) / 2;
          const h = Math.max(p.value > 0 ? 1 : 0, y(0) - y(p.value));
          return (
            <g key={p.title}>
              <rect
                className="chart-bar"
                x={x}
                y={y(0) - h}
                width={barW}
                height={h}
                data-value={p.value}
                data-bucket={p.title}
              >
                <title>{`${p.title}: ${format(p.value)}`}</title>
              </rect>
              {i % every === 0 && (
                <text className="chart-x" x={x + barW / 2} y={H - 8} textAnchor="middle">
                  {p.label}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <details>
          <summary>{label}: data table</summary>
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Period</th>
                  <th>Value</th>
                </tr>
              </thead>
              <tbody>
                {points.map((p) => (
                  <tr key={p.title}>
                    <td>{p.title}</td>
                    <td>{format(p.value)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      </figcaption>
    </figure>
  );
}

export interface Bar {
  key: string;
  label: string;
  title?: string;
  value: number;
  /** Shown after the value (`3 runs`). */
  note?: string;
}

/** Ranked horizontal bars as a list (readable at any width: the label wraps, the bar scales). */
export function BarList({ bars, format, label }: { bars: Bar[]; format(v: number): string; label: string }) {
  const max = Math.max(0, ...bars.map((b) => b.value));
  if (bars.length === 0) return <p className="muted">Nothing in this window.</p>;
  return (
    <ol className="bar-list" aria-label={label}>
      {[...bars]
        .sort((a, b) => b.value - a.value)
        .map((b) => (
          <li key={b.key} data-key={b.key} data-value={b.value}>
            <div className="bar-row">
              <span className="bar-label" title={b.title}>
                {b.label}
              </span>
              <span className="bar-value">
                {format(b.value)}
                {b.note ? <span className="muted"> · {b.note}</span> : null}
              </span>
            </div>
            <svg className="bar-track" viewBox="0 0 100 6" preserveAspectRatio="none" aria-hidden="true">
              <rect x={0} y={0} width={100} height={6} className="bar-bg" />
              <rect x={0} y={0} width={max > 0 ? (b.value / max) * 100 : 0} height={6} className="bar-fill" />
            </svg>
          </li>
        ))}
    </ol>
  );
}
