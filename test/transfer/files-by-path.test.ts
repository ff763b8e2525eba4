// Tests the read-only view of the written files sorted by path, the one the extraction report gives.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FilesByPath } from "../../src/transfer/files-by-path.js";
import { WrittenFileList } from "../../src/transfer/written-files.js";
import { recordFor, sortedLastOfEachPath, TRICKY_PATHS } from "./path-samples.js";

async function viewOf(
  paths: readonly string[],
): Promise<{ view: FilesByPath; expected: ReturnType<typeof recordFor>[] }> {
  const list = new WrittenFileList();
  const records = paths.map((path, serial) => recordFor(path, serial));
  for (const record of records) list.add(record);
  return { view: await FilesByPath.of(list, 5), expected: sortedLastOfEachPath(records) };
}

describe("FilesByPath", () => {
  it("lists the files by path as JavaScript sorts strings, the last added of each path kept", async () => {
    const { view, expected } = await viewOf(["b", "a/x", "é", "b", "\ue000", "😀", "a/x", "a"]);
    assert.deepEqual([...view], expected);
    assert.deepEqual(
      [...view].map((file) => [file.path, file.size]),
      [
        ["a", 7],
        ["a/x", 6],
        ["b", 3],
        ["é", 2],
        ["😀", 5],
        ["\ue000", 4],
      ],
    );
  });

  it("has the length of the de-duplicated list and gives each file by index", async () => {
    const { view, expected } = await viewOf([...TRICKY_PATHS, ...TRICKY_PATHS.slice(0, 5)]);
    assert.equal(view.length, TRICKY_PATHS.length);
    assert.deepEqual(
      Array.from({ length: view.length }, (_, index) => view.at(index)),
      expected,
    );
  });

  it("counts negative indexes from the end and gives undefined out of range, like an array", async () => {
    const { view, expected } = await viewOf(["c", "a", "b"]);
    assert.deepEqual(view.at(-1), expected.at(-1));
    assert.deepEqual(view.at(-3), expected.at(-3));
    assert.deepEqual(view.at(1.7), expected.at(1.7));
    for (const index of [3, -4, 100, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])
      assert.equal(view.at(index), undefined, `at(${index})`);
    assert.deepEqual(view.at(Number.NaN), expected.at(Number.NaN));
  });

  it("gives a fresh object at each call, so changing one does not change the list", async () => {
    const { view } = await viewOf(["a"]);
    const first = view.at(0);
    assert.ok(first !== undefined);
    assert.notEqual(view.at(0), first);
    (first as { size: number }).size = 99;
    assert.equal(view.at(0)?.size, 0);
  });

  it("is empty for an empty list", async () => {
    const view = await FilesByPath.of(new WrittenFileList(), 5);
    assert.equal(view.length, 0);
    assert.equal(view.at(0), undefined);
    assert.deepEqual([...view], []);
    assert.equal(JSON.stringify(view), "[]");
  });

  it("prints as the array of its files with JSON.stringify", async () => {
    const { view, expected } = await viewOf(["z", "日本語\nname", "a", "z"]);
    assert.deepEqual(view.toJSON(), expected);
    assert.equal(JSON.stringify({ files: view }, null, 2), JSON.stringify({ files: expected }, null, 2));
  });
});
