import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildRunVariables } from "../../src/settings/run-variables.js";
import { buildTangledVariables } from "../../src/settings/tangled-variables.js";

const REPO = {
  knot: "knot1.tangled.sh",
  repoDid: "did:plc:abc",
  repoName: "core",
  defaultBranch: "master",
  pipelineId: "at://did:web:spindle/sh.tangled.pipeline/3k",
};

describe("Tangled's run variables", () => {
  it("fills a push's as spindle does: pipeline, repository, ref, its short name and type, the sha twice", () => {
    assert.deepEqual(
      Object.fromEntries(
        buildTangledVariables({ event: "push", ref: "refs/tags/v1.2.0", sha: "abc123", ...REPO }).map((v) => [
          v.name,
          v.value,
        ]),
      ),
      {
        TANGLED_PIPELINE_ID: "at://did:web:spindle/sh.tangled.pipeline/3k",
        TANGLED_PIPELINE_KIND: "push",
        TANGLED_REPO_KNOT: "knot1.tangled.sh",
        TANGLED_REPO_DID: "did:plc:abc",
        TANGLED_REPO_NAME: "core",
        TANGLED_REPO_DEFAULT_BRANCH: "master",
        TANGLED_REPO_URL: "https://knot1.tangled.sh/did:plc:abc/core",
        TANGLED_REF: "refs/tags/v1.2.0",
        TANGLED_REF_NAME: "v1.2.0",
        TANGLED_REF_TYPE: "tag",
        TANGLED_SHA: "abc123",
        TANGLED_COMMIT_SHA: "abc123",
      },
    );
  });

  it("fills a pull request's from its source branch and sha, with its target branch and action", () => {
    const vars = Object.fromEntries(
      buildTangledVariables({
        event: "pull_request",
        branch: "main",
        prSourceBranch: "feature/x",
        prSourceSha: "def456",
        sha: "ignored",
        prAction: "synchronize",
        repoUrl: "https://tangled.org/@me/core",
      }).map((v) => [v.name, v.value]),
    );
    assert.deepEqual(vars, {
      TANGLED_PIPELINE_KIND: "pull_request",
      TANGLED_REPO_URL: "https://tangled.org/@me/core",
      TANGLED_REF: "refs/heads/feature/x",
      TANGLED_REF_NAME: "feature/x",
      TANGLED_REF_TYPE: "branch",
      TANGLED_SHA: "def456",
      TANGLED_COMMIT_SHA: "def456",
      TANGLED_PR_SOURCE_BRANCH: "feature/x",
      TANGLED_PR_TARGET_BRANCH: "main",
      TANGLED_PR_SOURCE_SHA: "def456",
      TANGLED_PR_ACTION: "synchronize",
    });
  });

  it("leaves out what the trigger does not give, and sets none without a trigger", () => {
    assert.deepEqual(buildTangledVariables({ event: "manual" }), [{ name: "TANGLED_PIPELINE_KIND", value: "manual" }]);
    assert.deepEqual(buildTangledVariables(undefined), []);
  });

  it("come after ours, so CI and KNOTLESS_* keep their places", () => {
    const names = buildRunVariables({
      runId: "r1",
      workflowName: "ci.yml",
      trigger: { event: "push", branch: "main", sha: "s" },
    }).map((v) => v.name);
    assert.deepEqual(names, [
      "CI",
      "KNOTLESS_RUN_ID",
      "KNOTLESS_WORKFLOW",
      "KNOTLESS_EVENT",
      "KNOTLESS_REF",
      "KNOTLESS_REF_NAME",
      "KNOTLESS_SHA",
      "KNOTLESS_OUTPUTS",
      "TANGLED_PIPELINE_KIND",
      "TANGLED_REF",
      "TANGLED_REF_NAME",
      "TANGLED_REF_TYPE",
      "TANGLED_SHA",
      "TANGLED_COMMIT_SHA",
    ]);
  });
});
