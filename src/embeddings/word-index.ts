/**
 * Word → row lookup over the bytes of a word list (one word per line), without a JavaScript
 * string or Map entry per word. For the offline embedder's 341k words a `Map<string, number>`
 * held ~30 MB of heap in every process that embeds (the API's search index among them); this
 * holds the list's bytes (2.9 MB), one offset per word and an open-addressing table of twice the
 * word count rounded up to a power of two (4 MB): about 8 MB, outside the heap, built without
 * splitting the text into strings. The first occurrence of a repeated word wins, as with a Map
 * filled in order.
 */
export class WordIndex {
  private constructor(
    private readonly bytes: Buffer,
    /** starts[i]..starts[i + 1] - 1 are word i's bytes (the newline excluded). */
    private readonly starts: Uint32Array,
    /** Slot → row + 1 (0 = empty); linear probing from the word's FNV-1a hash. */
    private readonly table: Int32Array,
  ) {}

  /** Words in the list (repeats included: rows keep their position in the list). */
  get size(): number {
    return this.starts.length - 1;
  }

  /**
   * Indexes the lines of `bytes` from byte `from` on; each line is one word, row = its position
   * among those lines. A trailing newline does not add an empty word.
   */
  static build(bytes: Buffer, from = 0): WordIndex {
    const ends: number[] = [];
    for (let i = bytes.indexOf(10, from); i !== -1; i = bytes.indexOf(10, i + 1)) ends.push(i);
    if (from < bytes.length && (ends.length === 0 || ends[ends.length - 1] !== bytes.length - 1))
      ends.push(bytes.length);
    const n = ends.length;
    const starts = new Uint32Array(n + 1);
    starts[0] = from;
    for (let i = 0; i < n; i++) starts[i + 1] = ends[i] + 1;
    let slots = 1;
    while (slots < n * 2) slots *= 2;
    const index = new WordIndex(bytes, starts, new Int32Array(slots));
    for (let row = 0; row < n; row++) index.insert(row);
    return index;
  }

  /** The row of `word`, or undefined when the list does not have it. */
  get(word: string): number | undefined {
    const key = Buffer.from(word, 'utf8');
    const mask = this.table.length - 1;
    for (let slot = fnv1a(key, 0, key.length) & mask; ; slot = (slot + 1) & mask) {
      const entry = this.table[slot];
      if (entry === 0) return undefined;
      if (this.equals(entry - 1, key, 0, key.length)) return entry - 1;
    }
  }

  /** The word at `row` (a repeated word's later rows included). */
  word(row: number): string {
    return this.bytes.toString('utf8', this.starts[row], this.starts[row + 1] - 1);
  }

  private insert(row: number): void {
    const start = this.starts[row];
    const end = this.starts[row + 1] - 1;
    const mask = this.table.length - 1;
    for (let slot = fnv1a(this.bytes, start, end) & mask; ; slot = (slot + 1) & mask) {
      const entry = this.table[slot];
      if (entry === 0) {
        this.table[slot] = row + 1;
        return;
      }
      if (this.equals(entry - 1, this.bytes, start, end)) return; // a repeat: the first row stays
    }
  }

  private equals(row: number, key: Buffer, start: number, end: number): boolean {
    const s = this.starts[row];
    const len = this.starts[row + 1] - 1 - s;
    if (len !== end - start) return false;
    for (let i = 0; i < len; i++) if (this.bytes[s + i] !== key[start + i]) return false;
    return true;
  }
}

/** 32-bit FNV-1a of bytes[start, end). */
function fnv1a(bytes: Buffer, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h >>> 0;
}
