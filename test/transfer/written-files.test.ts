// Tests the compact list of written files kept during an extraction.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { WrittenFileList } from "../../src/transfer/written-files.js";
import { sha256Of } from "./tree-helpers.js";

describe("WrittenFileList", () => {
  it("gives back every record in the order added, unicode and newline paths and large sizes included", () => {
    const records = [
      { path: "a.txt", size: 0, sha256: sha256Of("") },
      { path: "été/日本語\nname 🚀.bin", size: 12, sha256: sha256Of("twelve bytes") },
      { path: "big.bin", size: 10 * 1024 ** 3 + 1, sha256: sha256Of("big") },
      { path: "a.txt", size: 1, sha256: sha256Of("x") },
    ];
    const list = new WrittenFileList();
    for (const record of records) list.add(record);
    assert.equal(list.length, 4);
    assert.deepEqual(list.toArray(), records);
  });

  it("grows past its first buffers", () => {
    const list = new WrittenFileList();
    const records = Array.from({ length: 5000 }, (_, index) => ({ path: `dir-${index % 7}/${"long-name-".repeat(index % 30)}${index}`, size: index, sha256: sha256Of(String(index)) }));
    for (const record of records) list.add(record);
    assert.deepEqual(list.toArray(), records);
  });

  it("keeps every record whole through many growths, an oversized path included", () => {
    const list = new WrittenFileList();
    const records = Array.from({ length: 40_000 }, (_, index) => ({ path: `d${index % 13}/${"x".repeat(index % 97)}-${index}`, size: index * 3, sha256: sha256Of(String(index)) }));
    records.splice(20_000, 0, { path: "p".repeat(600_000), size: 1, sha256: sha256Of("huge") });
    for (const record of records) list.add(record);
    assert.equal(list.length, records.length);
    assert.deepEqual(list.toArray(), records);
  });

  it("is empty when nothing was added", () => {
    assert.deepEqual(new WrittenFileList().toArray(), []);
  });

  it("refuses a digest that is not 64 characters long", () => {
    assert.throws(() => new WrittenFileList().add({ path: "a", size: 1, sha256: "abc" }), RangeError);
  });
});
