// Reading the pipeline record and workflow a ReserveSeat carries: the trigger for each kind, the clone URL Tangled's way, manual inputs, and clear refusals.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  PipelineRecordError,
  readKnotBase,
  readOfferedPipeline,
  readOfferedWorkflow,
} from "../../src/mill/pipeline-record.js";

const REPO = { knot: "knot.example.org", did: "did:plc:owner", repo: "core", defaultBranch: "main" };

describe("pipeline record", () => {
  it("reads a push: ref, new sha, the pipeline's AT URI and the clone URL https://<knot>/<did>/<repo>", () => {
    const read = readOfferedPipeline(
      JSON.stringify({
        triggerMetadata: { kind: "push", repo: REPO, push: { ref: "refs/heads/main", oldSha: "0", newSha: "abc" } },
      }),
      "spindle.example",
      "3kx",
    );
    assert.deepEqual(read, {
      trigger: {
        event: "push",
        knot: "knot.example.org",
        repoDid: "did:plc:owner",
        repoName: "core",
        defaultBranch: "main",
        repo: "did:plc:owner/core",
        pipelineId: "at://did:web:spindle.example/sh.tangled.pipeline/3kx",
        ref: "refs/heads/main",
        sha: "abc",
      },
      cloneUrl: "https://knot.example.org/did:plc:owner/core",
      sha: "abc",
      inputs: [],
    });
  });

  it("reads the knot as spindle does: a bare host https, localhost:PORT http, an http(s):// knot with its scheme and port", () => {
    assert.equal(readKnotBase("knot.example.org"), "https://knot.example.org");
    assert.equal(readKnotBase("localhost:5555"), "http://localhost:5555");
    assert.equal(readKnotBase("http://10.88.0.1:8080"), "http://10.88.0.1:8080");
    assert.equal(readKnotBase("https://Knot.Example.org/"), "https://knot.example.org");
    assert.equal(readKnotBase("wss://knot.example.org"), "https://knot.example.org");
    assert.throws(() => readKnotBase("ftp://knot.example.org"), PipelineRecordError);
    assert.throws(() => readKnotBase("https://user:pw@knot.example.org"), /not a host name or an http/);
    const read = readOfferedPipeline(
      JSON.stringify({
        triggerMetadata: {
          kind: "push",
          repo: { ...REPO, knot: "http://10.88.0.1:8080", repoDid: "did:plc:repo" },
          push: { ref: "refs/heads/main", newSha: "abc" },
        },
      }),
      "k",
      "r",
    );
    assert.equal(read.cloneUrl, "http://10.88.0.1:8080/did:plc:repo");
  });

  it("clones by the repository's own DID when the record has one, and reads a pull request's branches and source sha", () => {
    const read = readOfferedPipeline(
      JSON.stringify({
        triggerMetadata: {
          kind: "pull_request",
          repo: { ...REPO, repoDid: "did:plc:repo" },
          pullRequest: { sourceBranch: "feature", targetBranch: "main", sourceSha: "def", action: "opened" },
        },
      }),
      "k",
      "r",
    );
    assert.equal(read.cloneUrl, "https://knot.example.org/did:plc:repo");
    assert.deepEqual(
      [
        read.trigger.event,
        read.trigger.branch,
        read.trigger.prSourceBranch,
        read.trigger.prSourceSha,
        read.trigger.prAction,
        read.sha,
      ],
      ["pull_request", "main", "feature", "def", "opened", "def"],
    );
  });

  it("gives a manual trigger's inputs as TANGLED_INPUT_<KEY> with the key upper-cased, as spindle sets them", () => {
    const read = readOfferedPipeline(
      JSON.stringify({
        triggerMetadata: {
          kind: "manual",
          repo: REPO,
          manual: {
            sha: "abc",
            inputs: [
              { key: "target", value: "prod" },
              { key: "bad key", value: "x" },
            ],
          },
        },
      }),
      "k",
      "r",
    );
    assert.deepEqual(read.inputs, [{ name: "TANGLED_INPUT_TARGET", value: "prod" }]);
  });

  it("refuses a record without trigger metadata, or not JSON, naming what is wrong", () => {
    assert.throws(
      () => readOfferedPipeline("{}", "k", "r"),
      (error: unknown) =>
        error instanceof PipelineRecordError && error.message === "the pipeline record has no trigger metadata",
    );
    assert.throws(() => readOfferedPipeline("{", "k", "r"), /not JSON/);
    assert.throws(
      () => readOfferedPipeline(JSON.stringify({ triggerMetadata: { kind: "tag" } }), "k", "r"),
      /not push, pull_request or manual/,
    );
  });

  it("reads a workflow's name, engine, raw text and clone settings, defaulting what is absent", () => {
    assert.deepEqual(
      readOfferedWorkflow(
        JSON.stringify({ name: "ci.yml", engine: "nixery", raw: "steps: []\n", clone: { depth: 5, submodules: true } }),
      ),
      {
        name: "ci.yml",
        engine: "nixery",
        raw: "steps: []\n",
        clone: { skip: false, depth: 5, submodules: true, tags: false },
      },
    );
    assert.throws(() => readOfferedWorkflow(JSON.stringify({ name: "ci.yml" })), /has no raw text/);
  });
});
