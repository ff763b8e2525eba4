// The result lists a step's outputs with every secret in their paths masked, the compact list kept compact.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { maskOutputPaths } from "../../src/run/mask-output-paths.js";
import { serializeResult } from "../../src/run/result-file.js";
import { buildRunResult } from "../../src/run/run-result.js";
import { SecretMasker } from "../../src/secrets/mask-stream.js";
import { FilesByPath } from "../../src/transfer/files-by-path.js";
import { WrittenFileList } from "../../src/transfer/written-files.js";

const SHA = "ab".repeat(32);

/** The outputs as the extraction reports them: a compact list sorted by path. */
async function buildList(paths: readonly string[]): Promise<FilesByPath> {
  const list = new WrittenFileList();
  for (const [index, path] of paths.entries()) list.add({ path, size: index, sha256: SHA });
  return FilesByPath.of(list, 5);
}

describe("maskOutputPaths", () => {
  it("masks a secret in an output's path, by at, by iteration and in result.json, and in a refused entry", async () => {
    const masker = new SecretMasker(["tok-s3cr3t-42"]);
    const list = await buildList(["dir/tok-s3cr3t-42.txt", "plain.txt"]);
    const masked = maskOutputPaths(
      list,
      [{ path: "../tok-s3cr3t-42", reason: "path escapes the destination: ../tok-s3cr3t-42" }],
      masker,
    );
    assert.equal(masked.outputs.length, 2);
    assert.deepEqual(masked.outputs.at(0), { path: "dir/***.txt", size: 0, sha256: SHA });
    assert.deepEqual(
      [...masked.outputs].map((file) => file.path),
      ["dir/***.txt", "plain.txt"],
    );
    assert.deepEqual(masked.refusedOutputs, [{ path: "../***", reason: "path escapes the destination: ../***" }]);
    const result = buildRunResult({
      runId: "r1",
      status: "success",
      startedAt: new Date("2026-12-02T01:00:00Z"),
      finishedAt: new Date("2026-12-02T01:01:00Z"),
      job: { namespace: "ci", name: "knotless-run-r1", pod: null, node: null, image: "busybox:1.36" },
      steps: [],
      ...masked,
      logs: { limitBytes: 1024, keptBytes: 0, droppedBytes: 0 },
    });
    const text = [...serializeResult(result)].join("");
    assert.doesNotMatch(text, /s3cr3t/);
    assert.match(text, /"path": "dir\/\*\*\*\.txt"/);
    assert.doesNotMatch(JSON.stringify(result), /s3cr3t/);
  });

  it("gives the lists themselves back when the run has no secret", async () => {
    const list = await buildList(["a"]);
    const refused = [{ path: "../x", reason: "escapes" }];
    const same = maskOutputPaths(list, refused, new SecretMasker([]));
    assert.equal(same.outputs, list);
    assert.equal(same.refusedOutputs, refused);
  });
});
