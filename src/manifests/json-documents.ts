// Splits kubectl's stream of JSON documents (a watch, or `create -o json` of a List) into parsed values, chunk by chunk.

/**
 * kubectl prints several objects as JSON documents one after the other, indented or on one line each, with nothing
 * between them but white space. This finds where each top-level object ends (braces outside strings) and parses
 * it. Text outside any object (a stray line) is skipped. Push chunks as they arrive; a document split across
 * chunks is returned once its last chunk is in.
 */
export class JsonDocumentSplitter {
  #buffer = "";
  /** Where the scan of #buffer resumes. */
  #at = 0;
  #depth = 0;
  #inString = false;
  #escaped = false;
  /** Start of the document being read, or -1 between documents. */
  #start = -1;

  /** Returns the documents completed by `text`, parsed; a document that is not valid JSON throws SyntaxError. */
  push(text: string): unknown[] {
    this.#buffer += text;
    const documents: unknown[] = [];
    const buffer = this.#buffer;
    for (let i = this.#at; i < buffer.length; i++) {
      const char = buffer.charCodeAt(i);
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (char === BACKSLASH) this.#escaped = true;
        else if (char === QUOTE) this.#inString = false;
        continue;
      }
      if (this.#start < 0) {
        if (char === OPEN) {
          this.#start = i;
          this.#depth = 1;
        }
        continue;
      }
      if (char === QUOTE) this.#inString = true;
      else if (char === OPEN) this.#depth += 1;
      else if (char === CLOSE && --this.#depth === 0) {
        documents.push(JSON.parse(buffer.slice(this.#start, i + 1)));
        this.#start = -1;
      }
    }
    // Keep only the unfinished document (or nothing), so the buffer never grows past one document.
    if (this.#start < 0) {
      this.#buffer = "";
      this.#at = 0;
    } else {
      this.#buffer = buffer.slice(this.#start);
      this.#at = this.#buffer.length;
      this.#start = 0;
    }
    return documents;
  }

  /** Whether a document was begun and not finished (the stream ended inside it). */
  get pending(): boolean {
    return this.#start >= 0;
  }
}

const OPEN = "{".charCodeAt(0);
const CLOSE = "}".charCodeAt(0);
const QUOTE = '"'.charCodeAt(0);
const BACKSLASH = "\\".charCodeAt(0);

/** Parses all of a finished output: every document in it, in order. */
export function parseJsonDocuments(text: string): unknown[] {
  return new JsonDocumentSplitter().push(text);
}
