// Tests the sliced sort of a written-files list by path.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { orderByPath } from "../../src/transfer/order-by-path.js";
import { WrittenFileList } from "../../src/transfer/written-files.js";
import { randomPaths, recordFor, sortedLastOfEachPath, TRICKY_PATHS } from "./path-samples.js";

function listOf(paths: readonly string[]): { list: WrittenFileList; records: ReturnType<typeof recordFor>[] } {
  const list = new WrittenFileList();
  const records = paths.map((path, serial) => recordFor(path, serial));
  for (const record of records) list.add(record);
  return { list, records };
}

async function orderedRecords(list: WrittenFileList, sliceMs = 5): Promise<unknown[]> {
  return Array.from(await orderByPath(list, sliceMs), (index) => list.at(index));
}

describe("orderByPath", () => {
  it("orders non-ASCII paths exactly as sorting the decoded strings does", async () => {
    const { list, records } = listOf([...TRICKY_PATHS].reverse());
    assert.deepEqual(await orderedRecords(list), sortedLastOfEachPath(records));
  });

  for (const seed of [1, 2, 3]) {
    it(`keeps the last added record of each path among thousands of repeated paths (seed ${seed})`, async () => {
      const { list, records } = listOf(randomPaths(seed, 5000));
      const expected = sortedLastOfEachPath(records);
      assert.ok(expected.length < records.length / 2, `only ${records.length - expected.length} duplicates`);
      assert.deepEqual(await orderedRecords(list), expected);
    });
  }

  it("orders deep paths that share long prefixes, some of them added twice", async () => {
    const paths = Array.from({ length: 20_000 }, (_, index) => {
      const file = (index * 7919) % 15_000; // 15,000 paths, 5,000 of them twice
      return `src/module-${file % 7}/package-${file % 13}/${"deep/".repeat(file % 4)}file-${file}.txt`;
    });
    const { list, records } = listOf(paths);
    const expected = sortedLastOfEachPath(records);
    assert.equal(expected.length, 15_000);
    assert.deepEqual(await orderedRecords(list), expected);
  });

  it("gives the same order when it yields after every step", async () => {
    const { list, records } = listOf(randomPaths(4, 20_000));
    assert.deepEqual(await orderedRecords(list, 0), sortedLastOfEachPath(records));
  });

  it("gives nothing for an empty list and the one record of a list of one", async () => {
    assert.deepEqual(await orderedRecords(new WrittenFileList()), []);
    assert.deepEqual(await orderedRecords(listOf(["only"]).list), [recordFor("only", 0)]);
  });

  it("lets the event loop run while it orders a long list", async () => {
    const { list } = listOf(
      Array.from({ length: 100_000 }, (_, index) => `dir-${index % 997}/file-${(index * 7919) % 100_000}.txt`),
    );
    let turns = 0;
    let done = false;
    const countTurn = (): void => {
      turns += 1;
      if (!done) setImmediate(countTurn);
    };
    setImmediate(countTurn);
    const order = await orderByPath(list, 1);
    done = true;
    assert.equal(order.length, 100_000);
    assert.ok(turns > 10, `the event loop had ${turns} turns`);
  });
});
