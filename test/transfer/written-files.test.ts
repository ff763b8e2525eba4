// Tests the compact list of written files kept during an extraction.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { WrittenFileList } from "../../src/transfer/written-files.js";
import { compareStrings, recordFor, TRICKY_PATHS } from "./path-samples.js";
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
    const records = Array.from({ length: 5000 }, (_, index) => ({
      path: `dir-${index % 7}/${"long-name-".repeat(index % 30)}${index}`,
      size: index,
      sha256: sha256Of(String(index)),
    }));
    for (const record of records) list.add(record);
    assert.deepEqual(list.toArray(), records);
  });

  it("keeps every record whole through many growths, an oversized path included", () => {
    const list = new WrittenFileList();
    const records = Array.from({ length: 40_000 }, (_, index) => ({
      path: `d${index % 13}/${"x".repeat(index % 97)}-${index}`,
      size: index * 3,
      sha256: sha256Of(String(index)),
    }));
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

describe("WrittenFileList.comparePaths", () => {
  it("orders two paths as JavaScript compares the strings, where UTF-8 byte order differs included", () => {
    const list = new WrittenFileList();
    TRICKY_PATHS.forEach((path, index) => list.add(recordFor(path, index)));
    for (let left = 0; left < TRICKY_PATHS.length; left += 1) {
      for (let right = 0; right < TRICKY_PATHS.length; right += 1) {
        const expected = compareStrings(TRICKY_PATHS[left] ?? "", TRICKY_PATHS[right] ?? "");
        assert.equal(
          Math.sign(list.comparePaths(left, right)),
          expected,
          `${JSON.stringify(TRICKY_PATHS[left])} vs ${JSON.stringify(TRICKY_PATHS[right])}`,
        );
      }
    }
  });

  it("finds equal paths equal whatever their records hold", () => {
    const list = new WrittenFileList();
    list.add(recordFor("same/日本語", 1));
    list.add(recordFor("same/日本語", 2));
    assert.equal(list.comparePaths(0, 1), 0);
  });
});
