// Tests which pod files an artifact takes: its patterns resolved and checked, what is listed, the archive's root, the match.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ArtifactSpec } from "../../../src/workflow/artifact-types.js";
import {
  matchArtifactFiles,
  selectArtifact,
  type ArtifactSelection,
} from "../../../src/executor/kubernetes/select-artifact.js";
import { artifactWanted } from "../../../src/run/run-artifacts.js";

const spec = (paths: string[], name = "dist"): ArtifactSpec => ({ name, paths, when: "success", required: false });

function plan(paths: string[]): ArtifactSelection {
  const planned = selectArtifact(spec(paths));
  if ("problem" in planned) assert.fail(planned.problem);
  return planned;
}

describe("selectArtifact", () => {
  it("resolves relative patterns under /work and lists only the patterns' fixed prefixes", () => {
    const p = plan(["dist/**/*.js", "./dist/extra/*.css", "/outputs/report.xml"]);
    assert.deepEqual(p.includes, ["/work/dist/**/*.js", "/work/dist/extra/*.css", "/outputs/report.xml"]);
    assert.deepEqual(p.listRoots, ["/outputs/report.xml", "/work/dist"]);
    assert.equal(p.packRoot, "/");
  });

  it("packs relative to the deepest directory above every pattern", () => {
    assert.equal(plan(["dist/**"]).packRoot, "/work/dist");
    assert.equal(plan(["dist/a/*.js", "dist/b/*.js"]).packRoot, "/work/dist");
    assert.equal(plan(["/outputs/report.xml"]).packRoot, "/outputs");
    assert.equal(plan(["*.log"]).packRoot, "/work");
  });

  it("refuses patterns outside /outputs and /work, with .., and unsafe names", () => {
    assert.match(
      (selectArtifact(spec(["/etc/passwd"])) as { problem: string }).problem,
      /not under \/outputs or \/work/,
    );
    assert.match((selectArtifact(spec(["/workspace/x"])) as { problem: string }).problem, /not under/);
    assert.match((selectArtifact(spec(["dist/../../etc/*"])) as { problem: string }).problem, /contains \.\./);
    assert.match((selectArtifact(spec(["dist/**"], "../up")) as { problem: string }).problem, /not a safe file name/);
    assert.match((selectArtifact(spec(["!dist/*.map"])) as { problem: string }).problem, /no pattern that includes/);
  });
});

describe("matchArtifactFiles", () => {
  const listed = [
    "/work/dist/a.js",
    "/work/dist/a.js.map",
    "/work/dist/sub/b.js",
    "/work/dist/.hidden.js",
    "/work/src/main.c",
    "/outputs/report.xml",
    "/work/dist/odd\nname.js",
  ];

  it("takes the files the patterns match, dot files too, relative to the pack root and sorted", () => {
    assert.deepEqual(matchArtifactFiles(plan(["dist/**/*.js"]), listed), {
      files: [".hidden.js", "a.js", "sub/b.js"],
      unpackable: ["/work/dist/odd\nname.js"],
    });
    assert.deepEqual(matchArtifactFiles(plan(["dist/*.js", "/outputs/report.xml"]), listed).files, [
      "outputs/report.xml",
      "work/dist/.hidden.js",
      "work/dist/a.js",
    ]);
  });

  it("leaves out what an exclude pattern (a leading !) matches", () => {
    assert.deepEqual(matchArtifactFiles(plan(["dist/**", "!dist/**/*.map", "!dist/odd*"]), listed).files, [
      ".hidden.js",
      "a.js",
      "sub/b.js",
    ]);
  });

  it("matches nothing when no listed file fits", () => {
    assert.deepEqual(matchArtifactFiles(plan(["build/**"]), listed), { files: [], unpackable: [] });
  });
});

describe("artifactWanted", () => {
  it("collects success artifacts on success, failure artifacts on a failed or timed-out run, always ones but on a cancel", () => {
    const when = (w: ArtifactSpec["when"]) => ({ ...spec(["x"]), when: w });
    assert.deepEqual(
      ["success", "failed", "timeout", "cancelled"].map((s) => artifactWanted(when("success"), s as never)),
      [true, false, false, false],
    );
    assert.deepEqual(
      ["success", "failed", "timeout", "cancelled"].map((s) => artifactWanted(when("failure"), s as never)),
      [false, true, true, false],
    );
    assert.deepEqual(
      ["success", "failed", "timeout", "cancelled"].map((s) => artifactWanted(when("always"), s as never)),
      [true, true, true, false],
    );
  });
});
