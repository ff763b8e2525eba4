// Finds the leftmost-longest occurrence of a set of strings in text, fast, and says when more text could change it.
//
// Why this algorithm: `npm run bench -- --only mask` times the alternatives on the same output (20 secrets, 104
// forms of 24 to 140 characters, step-like text in 64 KiB pieces, 2-core machine at load 1): one alternation RegExp
// of the escaped forms, longest first, 136 MB/s; indexOf per form, 96 MB/s; an Aho-Corasick automaton as a dense
// table over character classes, 281 MB/s; this search, 2,465 MB/s (a first exploration with other secrets gave
// 180-220, 85-105, 130-340 and 2,500-3,400; a trie walk from every position, 90-110 MB/s). Secrets are long and
// rare, so the fastest search looks at as few characters as it can: the Wu-Manber shift over trigrams reads about
// three characters per window of the shortest form's length and jumps; only a window whose last trigram occurs in
// some form is verified, by a walk of the forms' trie, which also gives leftmost-longest and tells when the text
// ends inside a form. With a form shorter than MIN_SKIP_LENGTH (a secret of 1 to 3 characters) there is nothing to
// jump and every position is walked (about 100 MB/s). Worst case, output made of near-copies of a secret (every
// window verified, each walk long) costs up to the longest form's length per character: 59 MB/s for "aaa…" against
// a secret of 39 "a" and a "b".

/** Shortest form length at which the trigram skip is used. */
export const MIN_SKIP_LENGTH = 4;

/** `matchEnd` after `find` returned a start from which more text could still make (or lengthen) a match. */
export const UNDECIDED = -2;

const NONE = -1;
const HASH_BITS = 16;
const HASH_MASK = (1 << HASH_BITS) - 1;

/** The trigram hash of text[i-2..i]; the same function builds the shift table and reads the text. */
function hashTrigram(text: string, i: number): number {
  return (text.charCodeAt(i - 2) * 961 + text.charCodeAt(i - 1) * 31 + text.charCodeAt(i)) & HASH_MASK;
}

/**
 * A compiled set of non-empty strings ("forms"). Masking semantics: scanning left to right, at each position the
 * longest form that starts there is taken, and scanning resumes after it (leftmost-longest, no overlaps).
 */
export class FormMatcher {
  readonly longest: number;
  readonly shortest: number;
  /** Child of the root for each UTF-16 code unit (0: none). */
  readonly #root = new Int32Array(65536);
  /** Node n's children are edges edgeStart[n] to edgeStart[n + 1], sorted by code unit. */
  readonly #edgeStart: Int32Array;
  readonly #edgeChar: Uint16Array;
  readonly #edgeNode: Int32Array;
  readonly #terminal: Uint8Array;
  /** Wu-Manber shift per trigram hash, when every form is at least MIN_SKIP_LENGTH long. */
  readonly #shift: Uint8Array | undefined;
  #matchEnd = NONE;

  constructor(forms: readonly string[]) {
    if (forms.length === 0 || forms.some((form) => form === "")) throw new Error("FormMatcher needs non-empty forms");
    this.longest = Math.max(...forms.map((form) => form.length));
    this.shortest = Math.min(...forms.map((form) => form.length));
    const trie = buildTrie(forms);
    for (const [code, node] of trie.children[0]!) this.#root[code] = node;
    const edgeCount = trie.children.reduce((sum, kids) => sum + kids.size, 0);
    this.#edgeStart = new Int32Array(trie.children.length + 1);
    this.#edgeChar = new Uint16Array(edgeCount);
    this.#edgeNode = new Int32Array(edgeCount);
    let edge = 0;
    trie.children.forEach((kids, node) => {
      this.#edgeStart[node] = edge;
      for (const [code, child] of [...kids].sort((a, b) => a[0] - b[0])) {
        this.#edgeChar[edge] = code;
        this.#edgeNode[edge] = child;
        edge += 1;
      }
    });
    this.#edgeStart[trie.children.length] = edge;
    this.#terminal = trie.terminal;
    this.#shift = this.shortest >= MIN_SKIP_LENGTH ? buildShiftTable(forms, this.shortest) : undefined;
  }

  /** The end of the match `find` last returned, or UNDECIDED. */
  get matchEnd(): number {
    return this.#matchEnd;
  }

  /**
   * Returns the first position at or after `from` where a decision is needed, or -1 when there is none: either a
   * form starts there (the longest one ends at `matchEnd`), or, unless `final`, the text from there to its end is
   * a proper prefix of some form, or a form that a longer one could extend (`matchEnd` is UNDECIDED). With `final`
   * the text is known to end where it ends.
   */
  find(text: string, from: number, final: boolean): number {
    const shift = this.#shift;
    if (shift === undefined) return this.#findAtEveryPosition(text, from, final);
    const len = text.length;
    const m = this.shortest;
    let i = from + m - 1;
    while (i < len) {
      const jump = shift[hashTrigram(text, i)]!;
      if (jump !== 0) {
        i += jump;
        continue;
      }
      const start = i - m + 1;
      const end = this.#walk(text, start, final);
      if (end !== NONE) {
        this.#matchEnd = end;
        return start;
      }
      i += 1;
    }
    // Starts whose window passes the end: no form fits, but one may begin there.
    if (final) return NONE;
    for (let start = Math.max(from, len - m + 1); start < len; start++) {
      if (this.#walk(text, start, false) === UNDECIDED) {
        this.#matchEnd = UNDECIDED;
        return start;
      }
    }
    return NONE;
  }

  #findAtEveryPosition(text: string, from: number, final: boolean): number {
    for (let start = from; start < text.length; start++) {
      const end = this.#walk(text, start, final);
      if (end !== NONE) {
        this.#matchEnd = end;
        return start;
      }
    }
    return NONE;
  }

  /** The end of the longest form starting at `start`, NONE, or UNDECIDED when the text ends inside the trie. */
  #walk(text: string, start: number, final: boolean): number {
    const len = text.length;
    let node = this.#root[text.charCodeAt(start)]!;
    if (node === 0) return NONE;
    let at = start + 1;
    let end = this.#terminal[node] === 1 ? at : NONE;
    for (;;) {
      if (at === len) return !final && this.#edgeStart[node + 1]! > this.#edgeStart[node]! ? UNDECIDED : end;
      const next = this.#findChild(node, text.charCodeAt(at));
      if (next === 0) return end;
      node = next;
      at += 1;
      if (this.#terminal[node] === 1) end = at;
    }
  }

  #findChild(node: number, code: number): number {
    const stop = this.#edgeStart[node + 1]!;
    for (let edge = this.#edgeStart[node]!; edge < stop; edge++) {
      const char = this.#edgeChar[edge]!;
      if (char === code) return this.#edgeNode[edge]!;
      if (char > code) return 0;
    }
    return 0;
  }
}

/** The forms' trie: children per node (node 0 is the root) and which nodes end a form. */
function buildTrie(forms: readonly string[]): { children: Array<Map<number, number>>; terminal: Uint8Array } {
  const children: Array<Map<number, number>> = [new Map()];
  const ends: number[] = [];
  for (const form of forms) {
    let node = 0;
    for (let i = 0; i < form.length; i++) {
      const code = form.charCodeAt(i);
      let child = children[node]!.get(code);
      if (child === undefined) {
        child = children.length;
        children.push(new Map());
        children[node]!.set(code, child);
      }
      node = child;
    }
    ends.push(node);
  }
  const terminal = new Uint8Array(children.length);
  for (const node of ends) terminal[node] = 1;
  return { children, terminal };
}

/**
 * Wu-Manber's table: for a window of m characters ending at i, how far the window can move so that it skips no
 * start of a form. A trigram at position p (2 <= p < m) of a form's first m characters allows m - 1 - p; any
 * other trigram allows m - 2 (a form starting at i - 1 or i has no trigram ending at i).
 */
function buildShiftTable(forms: readonly string[], m: number): Uint8Array {
  const shift = new Uint8Array(HASH_MASK + 1).fill(Math.min(255, m - 2));
  for (const form of forms) {
    for (let p = 2; p < m; p++) {
      const hash = hashTrigram(form, p);
      shift[hash] = Math.min(shift[hash]!, m - 1 - p);
    }
  }
  return shift;
}
