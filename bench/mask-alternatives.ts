// The search algorithms the masker could use, timed on the same output, so the choice in form-matcher.ts can be re-checked.
import { FormMatcher } from "../src/secrets/form-matcher.js";
import type { OutputPool } from "./mask-output.js";

export interface AlternativeTiming {
  readonly name: string;
  readonly mbps: number;
  /** Matches found in one pass over the pool (the leftmost-longest ones, except where the name says otherwise). */
  readonly matches: number;
}

type Search = (text: string) => number;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}

/** One RegExp alternation of the escaped forms, longest first: leftmost-longest, as the masker needs. */
function buildRegExpSearch(forms: readonly string[]): Search {
  const pattern = new RegExp(
    [...forms]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
      .join("|"),
    "g",
  );
  return (text) => {
    let matches = 0;
    pattern.lastIndex = 0;
    while (pattern.exec(text)) matches += 1;
    return matches;
  };
}

/** indexOf per form: every occurrence of every form (overlaps not resolved, so a lower bound on its cost). */
function buildIndexOfSearch(forms: readonly string[]): Search {
  return (text) => {
    let matches = 0;
    for (const form of forms)
      for (let at = text.indexOf(form); at >= 0; at = text.indexOf(form, at + form.length)) matches += 1;
    return matches;
  };
}

/** An Aho-Corasick automaton as a dense table over character classes; counts match ends (a lower bound on its cost). */
function buildAhoCorasickSearch(forms: readonly string[]): Search {
  const classes = new Uint16Array(65536);
  let width = 1;
  for (const form of forms)
    for (let i = 0; i < form.length; i++) if (classes[form.charCodeAt(i)] === 0) classes[form.charCodeAt(i)] = width++;
  const goto: Int32Array[] = [new Int32Array(width).fill(-1)];
  const output: number[] = [0];
  for (const form of forms) {
    let state = 0;
    for (let i = 0; i < form.length; i++) {
      const c = classes[form.charCodeAt(i)]!;
      if (goto[state]![c]! < 0) {
        goto[state]![c] = goto.length;
        goto.push(new Int32Array(width).fill(-1));
        output.push(0);
      }
      state = goto[state]![c]!;
    }
    output[state] = 1;
  }
  const delta = new Int32Array(goto.length * width);
  const fail = new Int32Array(goto.length);
  const queue: number[] = [];
  for (let c = 0; c < width; c++) {
    const next = goto[0]![c]!;
    delta[c] = Math.max(next, 0);
    if (next > 0) queue.push(next);
  }
  for (let head = 0; head < queue.length; head++) {
    const state = queue[head]!;
    output[state] = Math.max(output[state]!, output[fail[state]!]!);
    for (let c = 0; c < width; c++) {
      const next = goto[state]![c]!;
      if (next > 0) {
        fail[next] = delta[fail[state]! * width + c]!;
        delta[state * width + c] = next;
        queue.push(next);
      } else delta[state * width + c] = delta[fail[state]! * width + c]!;
    }
  }
  const accepting = Uint8Array.from(output);
  return (text) => {
    let state = 0;
    let matches = 0;
    for (let i = 0; i < text.length; i++) {
      state = delta[state * width + classes[text.charCodeAt(i)]!]!;
      if (accepting[state] === 1) {
        matches += 1;
        state = 0;
      }
    }
    return matches;
  };
}

/** The masker's own search: the trigram skip with trie verification, leftmost-longest. */
function buildFormMatcherSearch(forms: readonly string[]): Search {
  const matcher = new FormMatcher(forms);
  return (text) => {
    let matches = 0;
    for (let at = matcher.find(text, 0, true); at >= 0; at = matcher.find(text, matcher.matchEnd, true)) matches += 1;
    return matches;
  };
}

/** Times each search over `total` bytes of the pool's 64 KiB texts, after one untimed pass. */
export function measureAlternatives(pool: OutputPool, forms: readonly string[], total: number): AlternativeTiming[] {
  const searches: Array<[string, Search]> = [
    ["RegExp alternation, longest first", buildRegExpSearch(forms)],
    ["indexOf per form (all occurrences)", buildIndexOfSearch(forms)],
    ["Aho-Corasick DFA (match ends)", buildAhoCorasickSearch(forms)],
    ["trigram skip + trie (the masker's)", buildFormMatcherSearch(forms)],
  ];
  return searches.map(([name, search]) => {
    let matches = 0;
    for (const text of pool.texts) matches += search(text);
    let bytes = 0;
    const started = process.hrtime.bigint();
    while (bytes < total) {
      for (let i = 0; i < pool.texts.length; i++) {
        search(pool.texts[i]!);
        bytes += pool.reads[i]!.length;
      }
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return { name, mbps: bytes / 1e6 / seconds, matches };
  });
}
