// Masks secrets in streamed step output: every form of every secret becomes `***`, even when split across writes.
import { FormMatcher, UNDECIDED } from "./form-matcher.js";
import { buildSecretForms } from "./secret-forms.js";

/** What every occurrence of a secret form is replaced with. */
export const MASK = "***";

/**
 * One output stream's masking state. Text goes in decoded (the runner decodes UTF-8 with a StringDecoder first, so
 * a write never ends inside a character). `write` returns at once everything that cannot be the start of a secret
 * form and holds back only the trailing part that could be (at most the longest form's length minus one), until
 * more text decides it or `end` is called. Nothing is ever flushed on a timer: half a secret is never written.
 */
export interface MaskStream {
  /** Returns the masked text that is decided so far, possibly empty. */
  write(text: string): string;
  /** Returns the masked rest that was held back. The stream takes no more writes. */
  end(): string;
  /** How many characters are held back now. */
  readonly heldLength: number;
}

/** The secrets of a run, compiled once; a stream per step and output stream. */
export class SecretMasker {
  readonly #matcher: FormMatcher | undefined;

  constructor(values: readonly string[]) {
    const forms = buildSecretForms(values);
    this.#matcher = forms.length === 0 ? undefined : new FormMatcher(forms);
  }

  /** True when there is nothing to mask: streams pass text through untouched. */
  get isEmpty(): boolean {
    return this.#matcher === undefined;
  }

  /** The length of the longest form: a stream never holds back more than this minus one character. */
  get longestFormLength(): number {
    return this.#matcher?.longest ?? 0;
  }

  createStream(): MaskStream {
    return this.#matcher === undefined ? new PassThroughStream() : new MatchingStream(this.#matcher);
  }

  /** Masks a whole text at once (what a stream gives for it, written in one piece and ended). */
  maskText(text: string): string {
    const stream = this.createStream();
    return stream.write(text) + stream.end();
  }
}

class PassThroughStream implements MaskStream {
  #ended = false;
  readonly heldLength = 0;

  write(text: string): string {
    if (this.#ended) throw new Error("MaskStream.write after end");
    return text;
  }

  end(): string {
    this.#ended = true;
    return "";
  }
}

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

class MatchingStream implements MaskStream {
  readonly #matcher: FormMatcher;
  #held = "";
  #ended = false;

  constructor(matcher: FormMatcher) {
    this.#matcher = matcher;
  }

  get heldLength(): number {
    return this.#held.length;
  }

  write(text: string): string {
    if (this.#ended) throw new Error("MaskStream.write after end");
    const held = this.#held;
    if (held === "") return this.#maskFrom(text, 0, "", false);
    // Decide the held part on a short head (held + the next longest-form-length characters), so that a 64 KiB
    // write is not copied into a new string to join it to a few held characters.
    const head = held + text.slice(0, this.#matcher.longest);
    if (head.length === held.length + text.length) return this.#maskFrom(head, 0, "", false);
    let out = "";
    let cursor = 0;
    while (cursor < held.length) {
      const start = this.#matcher.find(head, cursor, false);
      if (start < 0 || start >= held.length) break;
      // A form starting in the held part ends within the head (it is at most `longest` long), so it is decided.
      if (this.#matcher.matchEnd === UNDECIDED) return this.#maskFrom(held + text, 0, "", false);
      out += head.slice(cursor, start) + MASK;
      cursor = this.#matcher.matchEnd;
    }
    if (cursor < held.length) {
      out += held.slice(cursor);
      cursor = held.length;
    }
    return this.#maskFrom(text, cursor - held.length, out, false);
  }

  end(): string {
    if (this.#ended) return "";
    this.#ended = true;
    const held = this.#held;
    this.#held = "";
    return held === "" ? "" : this.#maskFrom(held, 0, "", true);
  }

  /** Appends the masked, decided part of text[from..] to `out`, keeps the undecided tail and returns `out`. */
  #maskFrom(text: string, from: number, out: string, final: boolean): string {
    let cursor = from;
    for (;;) {
      const start = this.#matcher.find(text, cursor, final);
      if (start < 0) break;
      const end = this.#matcher.matchEnd;
      if (end === UNDECIDED) return this.#hold(text, cursor, start, out);
      out += text.slice(cursor, start) + MASK;
      cursor = end;
    }
    // Nothing undecided; a write that ends in the first half of a surrogate pair keeps it for the second half.
    if (!final && cursor < text.length && isHighSurrogate(text.charCodeAt(text.length - 1)))
      return this.#hold(text, cursor, text.length - 1, out);
    this.#held = "";
    return cursor === 0 ? out + text : out + text.slice(cursor);
  }

  #hold(text: string, cursor: number, at: number, out: string): string {
    // Never split a surrogate pair between what is written and what is held.
    const split = at > cursor && isHighSurrogate(text.charCodeAt(at - 1)) ? at - 1 : at;
    this.#held = text.slice(split);
    return out + text.slice(cursor, split);
  }
}
