import { validationError } from '../kernel/errors.js';
import { tokenize, type IndexEntry, type SearchType } from './memory-index.js';
import { own } from '../kernel/own.js';

/** The searchable types (the default bundle of the async search), in the API's order (docs/search.md). */
export const SEARCH_TYPES = [
  'assets',
  'artifacts',
  'stakeholder_maps',
  'meetings',
  'action_plans',
  'receptors',
  'pathways',
  'neurons',
  'reflexes',
] as const satisfies readonly SearchType[];
/** Grep and browse also reach memories (matched on content, like artifacts). */
export const LISTABLE_TYPES = [...SEARCH_TYPES, 'memories'] as const satisfies readonly SearchType[];

/** Types whose entries carry no vectors: search on them is lexical whatever the mode (docs/search.md). */
export const KEYWORD_ONLY = new Set<SearchType>(['reflexes']);
/** Types with a visibility (their `scope`: brain, workspace, core). */
export const HAS_VISIBILITY = new Set<SearchType>(['neurons', 'receptors', 'reflexes']);
/** Types with folder paths (path_prefix). */
export const HAS_PATH = new Set<SearchType>(['assets', 'artifacts']);
/** Types whose content (not only name and description) grep matches. */
export const CONTENT_GREP = new Set<SearchType>(['memories', 'artifacts']);

const ALIASES: Record<string, SearchType> = {
  asset: 'assets',
  artifact: 'artifacts',
  stakeholder_map: 'stakeholder_maps',
  'stakeholder-maps': 'stakeholder_maps',
  meeting: 'meetings',
  action_plan: 'action_plans',
  'action-plans': 'action_plans',
  receptor: 'receptors',
  pathway: 'pathways',
  neuron: 'neurons',
  reflex: 'reflexes',
  memory: 'memories',
};

/** A type name as callers write it (plural, singular or dashed) → the type, or a 400 naming the valid ones. */
export function typeOf(name: string, allowed: readonly SearchType[] = LISTABLE_TYPES, field = 'type'): SearchType {
  const n = name.trim().toLowerCase();
  const t = (allowed as readonly string[]).includes(n) ? (n as SearchType) : own(ALIASES, n);
  if (!t || !allowed.includes(t))
    throw validationError(`${field}: unknown type "${name}"; one of ${allowed.join(', ')}`);
  return t;
}

export interface ParsedQuery {
  type: SearchType;
  pattern: string;
  listOnly: boolean;
}

/**
 * `type`, `type/` (list the type), `type/pattern` (search it) or, for search, a bare term (a
 * neuron search). A bare word that names a type lists it, as in grep.
 */
export function parseQuery(
  query: string,
  opts: { bareTerm: 'neurons' | 'type'; allowed?: readonly SearchType[] },
): ParsedQuery {
  const q = query.trim();
  if (!q) throw validationError('query: must not be empty');
  const slash = q.indexOf('/');
  if (slash < 0) {
    if (opts.bareTerm === 'type') return { type: typeOf(q, opts.allowed, 'query'), pattern: '', listOnly: true };
    const n = q.toLowerCase();
    const named = (opts.allowed ?? LISTABLE_TYPES).find((t) => t === n || own(ALIASES, n) === t);
    return named ? { type: named, pattern: '', listOnly: true } : { type: 'neurons', pattern: q, listOnly: false };
  }
  const type = typeOf(q.slice(0, slash), opts.allowed, 'query');
  const pattern = q.slice(slash + 1).trim();
  return { type, pattern, listOnly: pattern === '' };
}

/** `keywords` (a string split on whitespace, or a list) and `grep_keywords` as one list of AND terms. */
export function andTerms(keywords: string | string[] | undefined, grepKeywords: string[] | undefined): string[] {
  const list = typeof keywords === 'string' ? keywords.split(/\s+/) : (keywords ?? []);
  return [...list, ...(grepKeywords ?? [])].map((k) => k.trim().toLowerCase()).filter(Boolean);
}

/** The text a hit is matched on: its title, description and own text (a chunk carries its resource's title). */
export const haystack = (e: IndexEntry): string => `${e.title}\n${e.description}\n${e.text}`.toLowerCase();

/**
 * About `width` characters of `text` around the first of `needles` (case-insensitive), cut at word
 * boundaries, with an ellipsis where it was cut; the start of the text when nothing matches.
 */
export function snippetOf(text: string, needles: string[], width = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (!flat) return '';
  const lower = flat.toLowerCase();
  let at = -1;
  let len = 0;
  for (const n of needles) {
    if (!n) continue;
    const i = lower.indexOf(n.toLowerCase());
    if (i >= 0 && (at < 0 || i < at)) {
      at = i;
      len = n.length;
    }
  }
  if (at < 0 || flat.length <= width)
    return flat.length <= width ? flat : `${flat.slice(0, width).replace(/\s+\S*$/, '')}…`;
  let start = Math.max(0, at - Math.floor((width - len) / 2));
  let end = Math.min(flat.length, start + width);
  start = Math.max(0, end - width);
  if (start > 0) {
    const sp = flat.indexOf(' ', start);
    if (sp >= 0 && sp < at) start = sp + 1;
  }
  if (end < flat.length) {
    const sp = flat.lastIndexOf(' ', end);
    if (sp > at + len) end = sp;
  }
  return `${start > 0 ? '…' : ''}${flat.slice(start, end)}${end < flat.length ? '…' : ''}`;
}

/** The words a snippet should show: the pattern's words, then the AND terms. */
export const needlesOf = (pattern: string, terms: string[]): string[] =>
  [pattern.trim(), ...tokenize(pattern), ...terms].filter((s) => s.length > 0);
