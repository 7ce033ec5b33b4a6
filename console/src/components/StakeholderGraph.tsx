import { useState } from 'react';
import type { ApiSchema } from '../api';

/*
 * A stakeholder map as a graph, in plain SVG (no graph library: a map is a few dozen people, laid
 * out on a circle). A node's colour is its stance, its size its influence; an edge's colour its
 * polarity (alliance, tension, neither) and its width its strength. Each node is a button: its
 * card (role, organisation, notes, tags and relations) shows under the graph. The same data is in a
 * table beside it for reading without the drawing.
 */
type Map = ApiSchema<'StakeholderMapLive'>;

const STANCE: Record<string, string> = {
  supportive: '#2e7d32',
  neutral: '#757575',
  opposed: '#c62828',
  unknown: '#9e9e9e',
};
const POLARITY: Record<string, string> = { positive: '#2e7d32', neutral: '#9e9e9e', negative: '#c62828' };
const RADIUS: Record<string, number> = { high: 22, medium: 16, low: 11 };

export function StakeholderGraph({ map }: { map: Map }) {
  const [picked, setPicked] = useState<string | null>(null);
  const people = map.stakeholders;
  const size = 520;
  const c = size / 2;
  const ring = people.length === 1 ? 0 : c - 70;
  const at = new Map(
    people.map((p, i) => {
      const a = (2 * Math.PI * i) / people.length - Math.PI / 2;
      return [p.id, { x: c + ring * Math.cos(a), y: c + ring * Math.sin(a) }] as const;
    }),
  );
  const name = new Map(people.map((p) => [p.id, p.name]));
  const chosen = people.find((p) => p.id === picked);
  return (
    <div className="stakeholder-graph">
      <svg
        viewBox={`0 0 ${size} ${size}`}
        role="img"
        aria-label={`Stakeholder map: ${people.length} people, ${map.edges.length} relations`}
        className="sh-svg"
      >
        {map.edges.map((e) => {
          const a = at.get(e.from);
          const b = at.get(e.to);
          if (!a || !b) return null;
          return (
            <line
              key={e.id}
              data-edge={`${e.from}-${e.to}`}
              data-polarity={e.polarity}
              x1={a.x}
              y1={a.y}
              x2={b.x}
              y2={b.y}
              stroke={POLARITY[e.polarity] ?? '#999'}
              strokeWidth={1 + 4 * Math.max(0, Math.min(1, Math.abs(e.strength)))}
              strokeOpacity={0.7}
            >
              <title>{`${name.get(e.from)} – ${name.get(e.to)}: ${e.relation ?? e.polarity}`}</title>
            </line>
          );
        })}
        {people.map((p) => {
          const pos = at.get(p.id)!;
          const r = RADIUS[p.influence ?? 'low'] ?? 11;
          return (
            <g
              key={p.id}
              data-stakeholder={p.name}
              data-stance={p.stance}
              role="button"
              tabIndex={0}
              aria-pressed={picked === p.id}
              aria-label={`${p.name}, ${p.stance}${p.influence ? `, ${p.influence} influence` : ''}`}
              onClick={() => setPicked(picked === p.id ? null : p.id)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' || e.key === ' ') {
                  e.preventDefault();
                  setPicked(picked === p.id ? null : p.id);
                }
              }}
              className="sh-node"
            >
              <circle
                cx={pos.x}
                cy={pos.y}
                r={r}
                fill={STANCE[p.stance] ?? '#999'}
                stroke={picked === p.id ? '#000' : '#fff'}
                strokeWidth={2}
              />
              <text x={pos.x} y={pos.y + r + 14} textAnchor="middle" fontSize={13}>
                {p.name}
              </text>
            </g>
          );
        })}
      </svg>
      <ul className="legend" aria-label="Stance">
        {Object.keys(STANCE).map((s) => (
          <li key={s} className={`stance-${s}`}>
            {s}
          </li>
        ))}
      </ul>
      {chosen && (
        <div className="card" data-card={chosen.name}>
          <h3>{chosen.name}</h3>
          <p>
            {[chosen.role, chosen.organization].filter(Boolean).join(', ') || '—'} · {chosen.stance}
            {chosen.influence ? ` · ${chosen.influence} influence` : ''}
          </p>
          {chosen.notes && <p>{chosen.notes}</p>}
          {chosen.tags.length > 0 && <p className="muted">{chosen.tags.join(', ')}</p>}
          <ul>
            {map.edges
              .filter((e) => e.from === chosen.id || e.to === chosen.id)
              .map((e) => (
                <li key={e.id}>
                  {name.get(e.from === chosen.id ? e.to : e.from)}: {e.relation ?? e.polarity} ({e.polarity})
                </li>
              ))}
          </ul>
        </div>
      )}
      <div className="table-wrap">
        <table aria-label="Stakeholders">
          <thead>
            <tr>
              <th>Name</th>
              <th>Role</th>
              <th>Stance</th>
              <th>Influence</th>
            </tr>
          </thead>
          <tbody>
            {people.map((p) => (
              <tr key={p.id}>
                <td>{p.name}</td>
                <td>{[p.role, p.organization].filter(Boolean).join(', ') || '—'}</td>
                <td>{p.stance}</td>
                <td>{p.influence ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
