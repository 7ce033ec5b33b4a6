import { useState, type FormEvent } from 'react';
import { toProblem, type ApiProblem, type ApiSchema } from '../api';
import { useAuth } from '../auth';
import { Problem } from './ui';

/*
 * The edits the API allows on a stakeholder map's live graph (docs/stakeholder-maps.md), as patch
 * ops on POST /v1/resources/stakeholder_map/:id/patch: a stakeholder added, changed (by id, so a new
 * name renames) or removed (its relations go with it), and a relation between two of them set
 * (one per pair, whichever direction) or removed. Each patch names the revision the form was filled
 * from (`base_revision`): a change made meanwhile by someone else (or an extraction) is a 409 shown
 * here, not silently overwritten. Any member of the workspace may edit a map (the route has no role
 * of its own), so every credential sees these forms.
 */
type Live = ApiSchema<'StakeholderMapLive'>;
type Op = ApiSchema<'StakeholderMapOp'>;
type Person = Live['stakeholders'][number];

const INFLUENCE = ['', 'low', 'medium', 'high'] as const;
const STANCE = ['unknown', 'supportive', 'neutral', 'opposed'] as const;
const POLARITY = ['positive', 'neutral', 'negative'] as const;

/** Applies ops at the revision the map was read at; the caller reloads the map after. */
function usePatch(map: Live, onChanged: () => void) {
  const { api } = useAuth();
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [busy, setBusy] = useState(false);
  const apply = async (ops: Op[]): Promise<boolean> => {
    setBusy(true);
    setProblem(null);
    try {
      await api.post(`/v1/resources/stakeholder_map/${map.resource_id}/patch`, {
        patch_mode: 'stakeholder_map_live',
        base_revision: map.revision,
        ops,
      });
      onChanged();
      return true;
    } catch (e) {
      setProblem(toProblem(e));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { apply, problem, busy };
}

const blank = { name: '', role: '', organization: '', influence: '', stance: 'unknown', notes: '' };
const formOf = (p: Person | undefined) =>
  p
    ? {
        name: p.name,
        role: p.role ?? '',
        organization: p.organization ?? '',
        influence: p.influence ?? '',
        stance: p.stance,
        notes: p.notes ?? '',
      }
    : blank;

export function StakeholderEdit({ map, onChanged }: { map: Live; onChanged: () => void }) {
  return (
    <div className="stakeholder-edit">
      <h3>Change the map</h3>
      <PersonForm map={map} onChanged={onChanged} />
      {map.stakeholders.length >= 2 && <RelationForm map={map} onChanged={onChanged} />}
    </div>
  );
}

function PersonForm({ map, onChanged }: { map: Live; onChanged: () => void }) {
  const [id, setId] = useState('');
  const [f, setF] = useState(blank);
  const { apply, problem, busy } = usePatch(map, onChanged);
  const pick = (next: string) => {
    setId(next);
    setF(formOf(map.stakeholders.find((p) => p.id === next)));
  };
  const text = (v: string) => (v.trim() ? v.trim() : null);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await apply([
      {
        op: 'upsert_stakeholder',
        ...(id ? { id } : {}),
        name: f.name.trim(),
        role: text(f.role),
        organization: text(f.organization),
        influence: (f.influence || null) as Person['influence'],
        stance: f.stance as Person['stance'],
        notes: text(f.notes),
      },
    ]);
    if (ok && !id) setF(blank);
  };
  const remove = async () => {
    const who = map.stakeholders.find((p) => p.id === id);
    if (!who || !window.confirm(`Remove ${who.name} and their relations from the map?`)) return;
    if (await apply([{ op: 'remove_stakeholder', stakeholder: id }])) pick('');
  };
  return (
    <form className="card settings-form" aria-label="Stakeholder" onSubmit={(e) => void save(e)}>
      <label>
        Stakeholder
        <select value={id} onChange={(e) => pick(e.target.value)}>
          <option value="">new stakeholder…</option>
          {map.stakeholders.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Name
        <input required maxLength={200} value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} />
      </label>
      <label>
        Role
        <input value={f.role} onChange={(e) => setF({ ...f, role: e.target.value })} />
      </label>
      <label>
        Organization
        <input value={f.organization} onChange={(e) => setF({ ...f, organization: e.target.value })} />
      </label>
      <label>
        Influence
        <select value={f.influence} onChange={(e) => setF({ ...f, influence: e.target.value })}>
          {INFLUENCE.map((i) => (
            <option key={i} value={i}>
              {i || '—'}
            </option>
          ))}
        </select>
      </label>
      <label>
        Stance
        <select value={f.stance} onChange={(e) => setF({ ...f, stance: e.target.value })}>
          {STANCE.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </label>
      <label>
        Notes
        <textarea rows={2} value={f.notes} onChange={(e) => setF({ ...f, notes: e.target.value })} />
      </label>
      <Problem problem={problem} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={busy || !f.name.trim()}>
          {id ? 'Save stakeholder' : 'Add stakeholder'}
        </button>
        {id && (
          <button type="button" className="danger" disabled={busy} onClick={() => void remove()}>
            Remove stakeholder
          </button>
        )}
      </div>
    </form>
  );
}

function RelationForm({ map, onChanged }: { map: Live; onChanged: () => void }) {
  const [f, setF] = useState({ from: '', to: '', polarity: 'positive', strength: '0.5', relation: '' });
  const { apply, problem, busy } = usePatch(map, onChanged);
  // One edge per pair, whichever direction was named: the form shows the pair's edge if it has one.
  const edgeOf = (a: string, b: string) =>
    map.edges.find((e) => (e.from === a && e.to === b) || (e.from === b && e.to === a));
  const setPair = (from: string, to: string) => {
    const e = from && to ? edgeOf(from, to) : undefined;
    setF(
      e
        ? { from, to, polarity: e.polarity, strength: String(e.strength), relation: e.relation ?? '' }
        : { ...f, from, to },
    );
  };
  const existing = f.from && f.to ? edgeOf(f.from, f.to) : undefined;
  const save = async (e: FormEvent) => {
    e.preventDefault();
    await apply([
      {
        op: 'set_edge',
        from: f.from,
        to: f.to,
        polarity: f.polarity as (typeof POLARITY)[number],
        strength: Number(f.strength),
        ...(f.relation.trim() ? { relation: f.relation.trim() } : {}),
      },
    ]);
  };
  const remove = async () => {
    if (await apply([{ op: 'remove_edge', from: f.from, to: f.to }])) setF({ ...f, relation: '' });
  };
  const people = (value: string, set: (v: string) => void, label: string) => (
    <label>
      {label}
      <select required value={value} onChange={(e) => set(e.target.value)}>
        <option value="">choose…</option>
        {map.stakeholders.map((p) => (
          <option key={p.id} value={p.id}>
            {p.name}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <form className="card settings-form" aria-label="Relation" onSubmit={(e) => void save(e)}>
      {people(f.from, (v) => setPair(v, f.to), 'Between')}
      {people(f.to, (v) => setPair(f.from, v), 'And')}
      <label>
        Polarity
        <select value={f.polarity} onChange={(e) => setF({ ...f, polarity: e.target.value })}>
          {POLARITY.map((p) => (
            <option key={p} value={p}>
              {p === 'positive' ? 'positive (alliance)' : p === 'negative' ? 'negative (tension)' : p}
            </option>
          ))}
        </select>
      </label>
      <label>
        Strength (0 to 1)
        <input
          type="number"
          min={0}
          max={1}
          step={0.1}
          required
          value={f.strength}
          onChange={(e) => setF({ ...f, strength: e.target.value })}
        />
      </label>
      <label>
        Relation
        <input
          value={f.relation}
          onChange={(e) => setF({ ...f, relation: e.target.value })}
          placeholder="e.g. reports to"
        />
      </label>
      <Problem problem={problem} />
      <div className="buttons">
        <button type="submit" className="primary" disabled={busy || !f.from || !f.to || f.from === f.to}>
          {existing ? 'Save relation' : 'Add relation'}
        </button>
        {existing && (
          <button type="button" className="danger" disabled={busy} onClick={() => void remove()}>
            Remove relation
          </button>
        )}
      </div>
    </form>
  );
}
