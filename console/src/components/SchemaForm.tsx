import { useEffect, useState } from 'react';
import { kindOf, type JsonSchema } from '../node-schemas';

/*
 * A form generated from a JSON Schema object (a node type's `data`, a pathway's input schema). One
 * control per property, chosen from the property's schema alone:
 *   enum → select · boolean → checkbox · integer/number → number input · string → one-line textarea
 *   array of strings → textarea, one item per line · object with declared properties → a nested
 *   fieldset · anything else (free-form objects, unions, arrays of objects) → a JSON textarea.
 * An emptied control removes its key, so a form never sends "" or null the schema did not ask for;
 * the API's validation stays the judge of the whole value.
 */

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInteger = (s: JsonSchema) => (Array.isArray(s.type) ? s.type.includes('integer') : s.type === 'integer');

/** Whether a property must be filled in: required and without a default the API applies. */
const mustFill = (parent: JsonSchema, key: string) =>
  !!parent.required?.includes(key) && parent.properties?.[key]?.default === undefined;

export interface SchemaFormProps {
  schema: JsonSchema;
  value: Obj;
  onChange(next: Obj): void;
  /** Prefix of the controls' ids (unique on the page). */
  idPrefix: string;
  /** Properties to leave out (shown elsewhere) or, with `only`, the ones to show. */
  omit?: string[];
  only?: string[];
  disabled?: boolean;
}

/** The form of an object schema; a schema without declared properties is one JSON field. */
export function SchemaForm({ schema, value, onChange, idPrefix, omit = [], only, disabled }: SchemaFormProps) {
  const props = schema.properties ?? {};
  const keys = Object.keys(props).filter((k) => !omit.includes(k) && (!only || only.includes(k)));
  if (Object.keys(props).length === 0 && !only)
    return (
      <JsonField
        id={`${idPrefix}-json`}
        label="data (JSON)"
        value={value}
        onChange={(v) => onChange(isObj(v) ? v : {})}
        disabled={disabled}
        description={schema.description ?? 'free-form object'}
      />
    );
  const set = (k: string, v: unknown) => {
    const next = { ...value };
    if (v === undefined) delete next[k];
    else next[k] = v;
    onChange(next);
  };
  return (
    <div className="schema-form">
      {keys.map((k) => (
        <Field
          key={k}
          name={k}
          schema={props[k]}
          required={mustFill(schema, k)}
          value={value[k]}
          onChange={(v) => set(k, v)}
          id={`${idPrefix}-${k}`}
          disabled={disabled}
        />
      ))}
    </div>
  );
}

interface FieldProps {
  name: string;
  schema: JsonSchema;
  required: boolean;
  value: unknown;
  onChange(v: unknown): void;
  id: string;
  disabled?: boolean;
}

function Label({ id, name, required }: { id: string; name: string; required: boolean }) {
  return (
    <label htmlFor={id}>
      {name}
      {required && (
        <span className="req" aria-hidden="true">
          {' '}
          *
        </span>
      )}
    </label>
  );
}

function Help({ id, text }: { id: string; text?: string }) {
  return text ? (
    <small id={`${id}-help`} className="muted">
      {text}
    </small>
  ) : null;
}

function Field({ name, schema, required, value, onChange, id, disabled }: FieldProps) {
  const kind = kindOf(schema);
  const help = schema.description;
  const described = help ? `${id}-help` : undefined;
  if (kind === 'object')
    return (
      <fieldset className="sf-field sf-object">
        <legend>{name}</legend>
        <Help id={id} text={help} />
        <SchemaForm
          schema={schema}
          value={isObj(value) ? value : {}}
          onChange={(v) => onChange(Object.keys(v).length ? v : undefined)}
          idPrefix={id}
          disabled={disabled}
        />
      </fieldset>
    );
  if (kind === 'json')
    return (
      <JsonField
        id={id}
        label={name}
        required={required}
        value={value}
        onChange={onChange}
        disabled={disabled}
        description={help}
      />
    );
  let control;
  if (kind === 'enum') {
    control = (
      <select
        id={id}
        value={typeof value === 'string' ? value : ''}
        onChange={(e) => onChange(e.target.value || undefined)}
        required={required}
        aria-describedby={described}
        disabled={disabled}
      >
        {!required && (
          <option value="">{schema.default !== undefined ? `default (${String(schema.default)})` : '—'}</option>
        )}
        {(schema.enum as string[]).map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    );
  } else if (kind === 'boolean') {
    return (
      <div className="sf-field sf-check">
        <input
          id={id}
          type="checkbox"
          checked={value === true}
          onChange={(e) => onChange(e.target.checked ? true : schema.default === true ? false : undefined)}
          aria-describedby={described}
          disabled={disabled}
        />
        <Label id={id} name={name} required={required} />
        <Help id={id} text={help} />
      </div>
    );
  } else if (kind === 'number') {
    control = (
      <input
        id={id}
        type="number"
        inputMode={isInteger(schema) ? 'numeric' : 'decimal'}
        step={isInteger(schema) ? 1 : 'any'}
        min={schema.minimum ?? schema.exclusiveMinimum}
        max={schema.maximum !== undefined && schema.maximum < 1e15 ? schema.maximum : undefined}
        placeholder={schema.default !== undefined ? String(schema.default) : undefined}
        value={typeof value === 'number' ? value : ''}
        onChange={(e) => onChange(e.target.value === '' ? undefined : Number(e.target.value))}
        required={required}
        aria-describedby={described}
        disabled={disabled}
      />
    );
  } else if (kind === 'lines') {
    control = (
      <textarea
        id={id}
        rows={3}
        value={Array.isArray(value) ? value.map(String).join('\n') : ''}
        onChange={(e) => {
          const items = e.target.value.split('\n');
          onChange(items.some((s) => s.trim()) ? items : undefined);
        }}
        onBlur={(e) => {
          const items = e.target.value
            .split('\n')
            .map((s) => s.trim())
            .filter(Boolean);
          onChange(items.length ? items : undefined);
        }}
        placeholder="one per line"
        required={required}
        aria-describedby={described}
        disabled={disabled}
      />
    );
  } else {
    control = (
      <textarea
        id={id}
        rows={1}
        className="sf-string"
        spellCheck={false}
        value={typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value)}
        placeholder={schema.default !== undefined ? String(schema.default) : undefined}
        onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}
        required={required}
        aria-describedby={described}
        disabled={disabled}
      />
    );
  }
  return (
    <div className="sf-field">
      <Label id={id} name={name} required={required} />
      {control}
      <Help id={id} text={help} />
    </div>
  );
}

/** A JSON value as text: applied while it parses, flagged (and not applied) while it does not. */
export function JsonField({
  id,
  label,
  value,
  onChange,
  required = false,
  disabled,
  description,
  rows = 4,
}: {
  id: string;
  label: string;
  value: unknown;
  onChange(v: unknown): void;
  required?: boolean;
  disabled?: boolean;
  description?: string;
  rows?: number;
}) {
  const shown = value === undefined ? '' : JSON.stringify(value, null, 2);
  const [text, setText] = useState(shown);
  const [bad, setBad] = useState<string | null>(null);
  // A new value from outside (another node selected, a reload) replaces the text being edited.
  useEffect(() => {
    setText((t) => {
      try {
        if (t.trim() && JSON.stringify(JSON.parse(t)) === JSON.stringify(value)) return t;
      } catch {
        /* replaced below */
      }
      return shown;
    });
    setBad(null);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shown]);
  return (
    <div className="sf-field">
      <Label id={id} name={label} required={required} />
      <textarea
        id={id}
        rows={rows}
        className="code"
        spellCheck={false}
        value={text}
        required={required}
        aria-invalid={bad ? true : undefined}
        aria-describedby={`${id}-help${bad ? ` ${id}-bad` : ''}`}
        disabled={disabled}
        onChange={(e) => {
          const t = e.target.value;
          setText(t);
          if (!t.trim()) {
            setBad(null);
            onChange(undefined);
            return;
          }
          try {
            const v = JSON.parse(t) as unknown;
            setBad(null);
            onChange(v);
          } catch (err) {
            setBad(err instanceof Error ? err.message : 'not valid JSON');
          }
        }}
      />
      <small id={`${id}-help`} className="muted">
        {description ? `${description} · ` : ''}JSON
      </small>
      {bad && (
        <small id={`${id}-bad`} className="error">
          Not valid JSON: {bad}
        </small>
      )}
    </div>
  );
}
