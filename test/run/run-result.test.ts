import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { Lexicons } from "@atproto/lexicon";
import { buildRunResult, buildSkippedStep, RESULT_TYPE, type RunResultInput } from "../../src/run/run-result.js";

const lexicon = JSON.parse(readFileSync(new URL("../../../lexicons/dev/knotless/check.json", import.meta.url), "utf8"));
const lexicons = new Lexicons([lexicon]);

const base: RunResultInput = {
  runId: "42",
  status: "success",
  startedAt: new Date("2026-11-29T10:00:00.000Z"),
  finishedAt: new Date("2026-11-29T10:00:05.500Z"),
  job: {
    namespace: "default",
    name: "knotless-run-42",
    pod: "knotless-run-42-abcde",
    node: "node-1",
    image: "busybox:1.36",
  },
  steps: [
    {
      name: "build",
      status: "success",
      exitCode: 0,
      startedAt: "2026-11-29T10:00:01.000Z",
      finishedAt: "2026-11-29T10:00:02.000Z",
      durationMs: 1000,
      timedOut: false,
    },
  ],
  outputs: [{ path: "ran.txt", size: 3, sha256: "a".repeat(64) }],
  logs: { limitBytes: 64 * 1024 * 1024, keptBytes: 4096, droppedBytes: 0 },
};

describe("buildRunResult", () => {
  it("builds a successful result that the dev.knotless.check lexicon accepts", () => {
    const result = buildRunResult(base);
    assert.equal(result.$type, RESULT_TYPE);
    assert.equal(result.exitCode, 0);
    assert.equal(result.durationMs, 5500);
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, result));
  });

  it("carries the failing step's exit code and keeps skipped steps with the same fields", () => {
    const result = buildRunResult({
      ...base,
      status: "failed",
      steps: [{ ...base.steps[0]!, status: "failed", exitCode: 3 }, buildSkippedStep("later")],
    });
    assert.equal(result.exitCode, 3);
    assert.deepEqual(Object.keys(result.steps[0]!).sort(), Object.keys(result.steps[1]!).sort());
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, result));
  });

  it("reports infrastructure failures with exit code -1, the error and its reason", () => {
    const result = buildRunResult({
      ...base,
      status: "failed",
      error: { message: "pod lost", reason: "pod-lost" },
      job: { ...base.job, pod: null, node: null },
    });
    assert.equal(result.exitCode, -1);
    assert.equal(result.error, "pod lost");
    assert.equal(result.errorReason, "pod-lost");
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, result));
  });

  it("uses -1 for a timed-out run, whose step has no exit code", () => {
    const result = buildRunResult({
      ...base,
      status: "timeout",
      steps: [{ ...base.steps[0]!, status: "timeout", exitCode: null, timedOut: true }],
    });
    assert.equal(result.exitCode, -1);
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, result));
  });

  it("reports the output budget's counts as logs, which the lexicon accepts, cut or not", () => {
    const cut = buildRunResult({ ...base, logs: { limitBytes: 1024, keptBytes: 1024, droppedBytes: 300_000_000 } });
    assert.deepEqual(cut.logs, { limitBytes: 1024, keptBytes: 1024, droppedBytes: 300_000_000 });
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, cut));
    assert.deepEqual(Object.keys(buildRunResult(base).logs), ["limitBytes", "keptBytes", "droppedBytes"]);
  });

  it("is rejected by the lexicon when a logs count is negative, not a whole number or missing", () => {
    const result = buildRunResult(base);
    assert.throws(
      () => lexicons.assertValidRecord(RESULT_TYPE, { ...result, logs: { ...result.logs, droppedBytes: -1 } }),
      /droppedBytes/,
    );
    assert.throws(
      () => lexicons.assertValidRecord(RESULT_TYPE, { ...result, logs: { ...result.logs, keptBytes: 1.5 } }),
      /keptBytes/,
    );
    const { limitBytes: _, ...withoutLimit } = result.logs;
    assert.throws(() => lexicons.assertValidRecord(RESULT_TYPE, { ...result, logs: withoutLimit }), /limitBytes/);
  });

  it("is accepted by the lexicon without logs, as records written before the field existed are", () => {
    const { logs: _, ...older } = buildRunResult(base);
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, older));
  });

  it("carries every cache's restore and save and every artifact's files, which the lexicon accepts", () => {
    const result = buildRunResult({
      ...base,
      caches: [
        {
          key: "deps-3f2a",
          restore: { status: "fallback", restoredKey: "deps-19c0", bytes: 1_250_000, ms: 900 },
          save: { status: "saved", bytes: 1_300_000, ms: 1100 },
        },
        {
          key: "tools-1",
          restore: { status: "exact", restoredKey: "tools-1", bytes: 10, ms: 5 },
          save: { status: "skipped", bytes: 0, ms: 0, reason: "exact hit" },
        },
        {
          key: "bad",
          restore: { status: "failed", bytes: 0, ms: 3, reason: "the stored entry is corrupt" },
          save: { status: "exists", bytes: 44, ms: 12 },
        },
      ],
      artifacts: [
        {
          name: "dist",
          status: "collected",
          files: [{ path: "a.js", size: 3, sha256: "b".repeat(64) }],
          manifest: "/out/artifacts/dist.manifest.json",
        },
        { name: "logs", status: "empty", files: [], reason: "no file in the pod matches /work/*.log" },
        { name: "report", status: "skipped", files: [], reason: "when: failure, and the run succeeded" },
      ],
    });
    assert.equal(result.caches.length, 3);
    assert.equal(result.artifacts[0]!.files[0]!.path, "a.js");
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, result));
    assert.deepEqual(buildRunResult(base).caches, []);
    assert.deepEqual(buildRunResult(base).artifacts, []);
  });

  it("is rejected by the lexicon when a cache's bytes are negative or an artifact's file has no sha256", () => {
    const result = buildRunResult({
      ...base,
      caches: [{ key: "k", restore: { status: "miss", bytes: 0, ms: 1 }, save: { status: "saved", bytes: 5, ms: 2 } }],
      artifacts: [{ name: "dist", status: "collected", files: [{ path: "a.js", size: 3, sha256: "b".repeat(64) }] }],
    });
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, result));
    assert.throws(
      () =>
        lexicons.assertValidRecord(RESULT_TYPE, {
          ...result,
          caches: [{ ...result.caches[0]!, save: { status: "saved", bytes: -5, ms: 2 } }],
        }),
      /bytes/,
    );
    assert.throws(
      () =>
        lexicons.assertValidRecord(RESULT_TYPE, {
          ...result,
          artifacts: [{ name: "dist", status: "collected", files: [{ path: "a.js", size: 3 }] }],
        }),
      /sha256/,
    );
  });

  it("is accepted by the lexicon without caches and artifacts, as records written before they existed are", () => {
    const { caches: _c, artifacts: _a, ...older } = buildRunResult(base);
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, older));
  });

  it("records a microvm workflow and a pull request's trigger with Tangled's fields and the changed files counted, which the lexicon accepts", () => {
    const workflow = {
      file: ".tangled/workflows/ci.yml",
      name: "ci.yml",
      engine: "microvm",
      imageFrom: "microvm" as const,
      imageName: "nixos",
      clone: { skip: false, submodules: true, tags: true },
      trigger: {
        event: "pull_request",
        branch: "main",
        prAction: "synchronize",
        prSourceBranch: "feature/x",
        prSourceSha: "def456",
        knot: "knot1.tangled.sh",
        repoDid: "did:plc:abc",
        repoName: "core",
        defaultBranch: "main",
        pipelineId: "at://did:web:s/sh.tangled.pipeline/1",
        changedFileCount: 3,
        matched: true,
        reason: "when[0] matched",
      },
    };
    const result = buildRunResult({ ...base, workflow });
    assert.deepEqual(result.workflow, workflow);
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, result));
    assert.throws(
      () =>
        lexicons.assertValidRecord(RESULT_TYPE, {
          ...result,
          workflow: { ...workflow, trigger: { ...workflow.trigger, changedFileCount: -1 } },
        }),
      /changedFileCount/,
    );
  });

  it("records what the limits clamped in workflow.clamped, which the lexicon accepts, and refuses a clamp without its limit", () => {
    const clamped = [
      { path: "resources.cpu", value: "8", limit: "4", setting: "limits.maxCpu", at: "ci.yml:3:18" },
      { path: "--timeout", value: "2h00m", limit: "1h00m", setting: "limits.maxTimeout" },
    ];
    const workflow = {
      file: "ci.yml",
      name: "ci.yml",
      engine: "kubernetes",
      imageFrom: "workflow" as const,
      clone: { skip: false, submodules: false, tags: false },
      clamped,
    };
    const result = buildRunResult({ ...base, workflow });
    assert.deepEqual(result.workflow?.clamped, clamped);
    assert.doesNotThrow(() => lexicons.assertValidRecord(RESULT_TYPE, result));
    const { limit: _limit, ...withoutLimit } = clamped[0]!;
    assert.throws(
      () => lexicons.assertValidRecord(RESULT_TYPE, { ...result, workflow: { ...workflow, clamped: [withoutLimit] } }),
      /limit/,
    );
  });

  it("is rejected by the lexicon when a field has the wrong type", () => {
    const result = { ...buildRunResult(base), durationMs: "slow" };
    assert.throws(() => lexicons.assertValidRecord(RESULT_TYPE, result), /durationMs/);
  });
});
