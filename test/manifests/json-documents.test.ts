import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { JsonDocumentSplitter, parseJsonDocuments } from "../../src/manifests/json-documents.js";

const DOCUMENTS = [
  { type: "ADDED", object: { metadata: { annotations: { "a/b": "{not a brace}", quote: 'say "}" and \\ then {' } } } },
  { type: "MODIFIED", object: { spec: { list: [{ x: 1 }, { y: "é ✓" }] } } },
];

describe("JsonDocumentSplitter", () => {
  it("reads indented documents printed one after the other, as kubectl create -o json prints a List's items", () => {
    const text = DOCUMENTS.map((d) => JSON.stringify(d, null, 4)).join("\n");
    assert.deepEqual(parseJsonDocuments(text), DOCUMENTS);
  });

  it("reads one-line documents, as a watch with --output-watch-events prints them", () => {
    assert.deepEqual(parseJsonDocuments(DOCUMENTS.map((d) => `${JSON.stringify(d)}\n`).join("")), DOCUMENTS);
  });

  it("returns a document only once its last chunk is in, for every chunk size, braces and quotes in strings included", () => {
    const text = DOCUMENTS.map((d) => JSON.stringify(d, null, 2)).join("\n");
    for (let size = 1; size <= text.length; size++) {
      const splitter = new JsonDocumentSplitter();
      const got: unknown[] = [];
      for (let at = 0; at < text.length; at += size) got.push(...splitter.push(text.slice(at, at + size)));
      assert.deepEqual(got, DOCUMENTS, `chunks of ${size}`);
      assert.equal(splitter.pending, false);
    }
  });

  it("skips text between documents and says when the stream ended inside one", () => {
    const splitter = new JsonDocumentSplitter();
    assert.deepEqual(splitter.push('Warning: something\n{"a":1}\nnoise {"b":'), [{ a: 1 }]);
    assert.equal(splitter.pending, true);
  });

  it("throws on a document that is balanced but not JSON", () => {
    assert.throws(() => parseJsonDocuments("{a: 1}"), SyntaxError);
  });
});
