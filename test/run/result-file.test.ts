import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { buildRunResult } from "../../src/run/run-result.js";
import { serializeResult, writeResultFile } from "../../src/run/result-file.js";
import type { RunResult } from "../../src/run/run-result.js";
import { FilesByPath } from "../../src/transfer/files-by-path.js";
import { WrittenFileList } from "../../src/transfer/written-files.js";

function resultWith(outputCount: number): RunResult {
  return buildRunResult({
    runId: "r1",
    status: "success",
    startedAt: new Date("2026-11-29T10:00:00Z"),
    finishedAt: new Date("2026-11-29T10:01:00Z"),
    job: { namespace: "ci", name: "knotless-run-r1", pod: "knotless-run-r1-abcde", node: "n1", image: "busybox:1.36" },
    steps: [
      {
        name: "a",
        status: "success",
        exitCode: 0,
        startedAt: "2026-11-29T10:00:10Z",
        finishedAt: "2026-11-29T10:00:20Z",
        durationMs: 10_000,
        timedOut: false,
      },
    ],
    outputs: Array.from({ length: outputCount }, (_, i) => ({
      path: `dir "${i}"/f\n${i}.txt`,
      size: i,
      sha256: "ab".repeat(32),
    })),
    refusedOutputs: [{ path: "../x", reason: "path escapes the destination" }],
    logs: { limitBytes: 64 * 1024 * 1024, keptBytes: 120, droppedBytes: 0 },
  });
}

/** The same result with its outputs as the extraction reports them: a compact list sorted by path. */
async function withCompactOutputs(result: RunResult): Promise<RunResult> {
  const list = new WrittenFileList();
  for (const output of result.outputs) list.add(output);
  return { ...result, outputs: await FilesByPath.of(list, 5) };
}

describe("the result file", () => {
  for (const count of [0, 1, 255, 256, 257, 1000]) {
    it(`has exactly the bytes of JSON.stringify(result, null, 2) with ${count} outputs`, () => {
      const result = resultWith(count);
      assert.equal([...serializeResult(result)].join(""), `${JSON.stringify(result, null, 2)}\n`);
    });

    it(`has the bytes of the same result with an array when its ${count} outputs are a compact list`, async () => {
      const compact = await withCompactOutputs(resultWith(count));
      const asArray = { ...compact, outputs: [...compact.outputs] };
      const bytes = [...serializeResult(compact)].join("");
      assert.equal(bytes, `${JSON.stringify(asArray, null, 2)}\n`);
      assert.equal(bytes, `${JSON.stringify(compact, null, 2)}\n`);
    });
  }

  it("is written in pieces no larger than a batch of entries", () => {
    const pieces = [...serializeResult(resultWith(10_000))];
    assert.ok(pieces.length > 10_000 / 256, `${pieces.length} pieces`);
    assert.ok(Math.max(...pieces.map((piece) => piece.length)) < 64 * 1024);
  });

  it("reads back as the result it was written from", async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "result-file-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const result = resultWith(3000);
    await writeResultFile(join(dir, "result.json"), result);
    assert.deepEqual(JSON.parse(await readFile(join(dir, "result.json"), "utf8")), JSON.parse(JSON.stringify(result)));
  });
});
