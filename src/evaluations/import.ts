import { validationError } from '../kernel/errors.js';
import type { NewItem } from './store.js';

/**
 * Dataset imports (docs/evaluations.md): JSONL, one `{ input, expected?, metadata? }` per line, or
 * CSV (RFC 4180: quoted fields, doubled quotes, CRLF or LF) with a header row naming an `input`
 * column, optionally `expected`, and any other columns as metadata. A cell that holds JSON (an
 * object, an array, a number) is read as that value. Errors name the line.
 */

const ITEM_KEYS = new Set(['input', 'expected', 'metadata']);

export function parseJsonl(text: string, max: number): NewItem[] {
  const out: NewItem[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (!line) continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      throw validationError(`content: line ${i + 1} is not JSON`);
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, 'input'))
      throw validationError(`content: line ${i + 1} must be an object with "input"`);
    const o = v as Record<string, unknown>;
    const unknown = Object.keys(o).filter((k) => !ITEM_KEYS.has(k));
    if (unknown.length) throw validationError(`content: line ${i + 1} has unknown key "${unknown[0]}"`);
    const md = o.metadata;
    if (md !== undefined && (typeof md !== 'object' || md === null || Array.isArray(md)))
      throw validationError(`content: line ${i + 1}: metadata must be an object`);
    out.push({
      input: o.input,
      ...(o.expected !== undefined ? { expected: o.expected } : {}),
      ...(md !== undefined ? { metadata: md as Record<string, unknown> } : {}),
    });
    if (out.length > max) throw validationError(`content: more than ${max} items`);
  }
  if (!out.length) throw validationError('content: no items');
  return out;
}

/** The rows of a CSV text (fields as strings). */
export function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  const endField = () => {
    row.push(field);
    field = '';
  };
  const endRow = () => {
    endField();
    if (!(row.length === 1 && row[0] === '')) rows.push(row);
    row = [];
  };
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else field += c;
      i++;
      continue;
    }
    if (c === '"' && field === '') quoted = true;
    else if (c === ',') endField();
    else if (c === '\n') endRow();
    else if (c === '\r') {
      if (text[i + 1] !== '\n') endRow();
    } else field += c;
    i++;
  }
  if (quoted) throw validationError('content: a quoted CSV field is not closed');
  if (field !== '' || row.length) endRow();
  return rows;
}

/** A CSV cell as a value: JSON objects, arrays, numbers, true/false/null as such; anything else the text. */
function cell(s: string): unknown {
  const t = s.trim();
  if (/^[[{]/.test(t) || /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(t) || /^(true|false|null)$/.test(t)) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      return s;
    }
  }
  return s;
}

export function parseCsv(text: string, max: number): NewItem[] {
  const rows = csvRows(text.replace(/^\uFEFF/, ''));
  if (rows.length < 2) throw validationError('content: a header row and at least one item row are needed');
  const header = rows[0].map((h) => h.trim());
  const at = header.indexOf('input');
  if (at < 0) throw validationError('content: the header has no "input" column');
  if (rows.length - 1 > max) throw validationError(`content: more than ${max} items`);
  const exp = header.indexOf('expected');
  return rows.slice(1).map((r, n) => {
    if (r.length !== header.length)
      throw validationError(`content: row ${n + 2} has ${r.length} fields, the header ${header.length}`);
    const metadata: Record<string, unknown> = {};
    header.forEach((h, i) => {
      if (i !== at && i !== exp && h) Object.defineProperty(metadata, h, { value: cell(r[i]), enumerable: true });
    });
    return {
      input: cell(r[at]),
      ...(exp >= 0 && r[exp] !== '' ? { expected: cell(r[exp]) } : {}),
      ...(Object.keys(metadata).length ? { metadata } : {}),
    };
  });
}
