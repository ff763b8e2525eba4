// Tests collecting one artifact through the scripted kubectl: the listing, exactly the matched files packed, the safe extraction, the manifest.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import * as tarStream from "tar-stream";
import type { ArtifactSpec } from "../../../src/workflow/artifact-types.js";
import { collectArtifact } from "../../../src/executor/kubernetes/collect-artifact.js";
import { makeTempDir } from "../../transfer/tree-helpers.js";
import { NODE_NAME, POD_NAME } from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";

const POD = { name: POD_NAME, node: NODE_NAME };
const DIST: ArtifactSpec = { name: "dist", paths: ["dist/**/*.js"], when: "success", required: false };
const LISTING = ["/work/dist/a.js", "/work/dist/a.js.map", "/work/dist/sub/b.js", "/work/src/main.c"]
  .map((p) => `${p}\0`)
  .join("");

type Member = { name: string; content?: string; type?: "file" | "symlink"; linkname?: string };

/** A tar as the pod's tar would make it, built with tar-stream. */
async function buildTar(members: readonly Member[]): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const member of members) {
    if (member.type === "symlink") pack.entry({ name: member.name, type: "symlink", linkname: member.linkname });
    else pack.entry({ name: member.name, mode: 0o644 }, member.content ?? "");
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const outs: string[] = [];
after(async () => {
  for (const dir of outs) await rm(dir, { recursive: true, force: true });
});

async function setUp() {
  const outDir = await makeTempDir("artifact-out");
  outs.push(outDir);
  return { ...buildTestContext({ settings: { outDir } }), outDir };
}

const isList = (call: { command: readonly string[] }) => call.command.includes("list-files");
const isPack = (call: { command: readonly string[] }) => call.command.includes("pack-files");

describe("collectArtifact", () => {
  it("lists the patterns' prefix, packs exactly the matched files relative to it, extracts them and writes the manifest", async () => {
    const { ctx, kubectl, outDir } = await setUp();
    kubectl.on("exec", { stdout: LISTING, stderr: "knotless-files-listed\n" }, isList);
    kubectl.on(
      "exec",
      async () => ({
        stdout: await buildTar([
          { name: "a.js", content: "alpha" },
          { name: "sub/b.js", content: "beta" },
        ]),
        stderr: "knotless-files-packed tar=0\n",
      }),
      isPack,
    );
    const report = await collectArtifact(ctx, POD, DIST, 1 << 20);
    assert.equal(report.status, "collected", report.reason);
    assert.deepEqual(kubectl.calls[0]!.command.slice(-3), ["/knotless/helper.sh", "list-files", "/work/dist"]);
    assert.deepEqual(kubectl.calls[1]!.command.slice(-3), ["/knotless/helper.sh", "pack-files", "/work/dist"]);
    assert.equal(kubectl.calls[1]!.stdin, "a.js\nsub/b.js\n");
    const sha = (text: string) => createHash("sha256").update(text).digest("hex");
    assert.deepEqual(report.files, [
      { path: "a.js", size: 5, sha256: sha("alpha") },
      { path: "sub/b.js", size: 4, sha256: sha("beta") },
    ]);
    assert.equal(readFileSync(join(outDir, "artifacts", "dist", "sub", "b.js"), "utf8"), "beta");
    assert.equal(report.manifest, join(outDir, "artifacts", "dist.manifest.json"));
    const manifest = JSON.parse(readFileSync(report.manifest!, "utf8"));
    assert.deepEqual(manifest.files, report.files);
    assert.equal(manifest.root, "/work/dist");
  });

  it("reports an artifact whose patterns match nothing as empty, without packing", async () => {
    const { ctx, kubectl, outDir } = await setUp();
    kubectl.on("exec", { stdout: "/work/src/main.c\0", stderr: "knotless-files-listed\n" }, isList);
    const report = await collectArtifact(ctx, POD, DIST, 1 << 20);
    assert.equal(report.status, "empty");
    assert.match(report.reason ?? "", /no file in the pod matches dist\/\*\*\/\*\.js/);
    assert.equal(kubectl.calls.length, 1);
    assert.equal(existsSync(join(outDir, "artifacts", "dist.manifest.json")), false);
  });

  it("refuses through the outputs' extractor a file the pod swapped for a link leading out, and names it", async () => {
    const { ctx, kubectl, outDir } = await setUp();
    kubectl.on("exec", { stdout: LISTING, stderr: "knotless-files-listed\n" }, isList);
    kubectl.on(
      "exec",
      async () => ({
        stdout: await buildTar([
          { name: "a.js", content: "alpha" },
          { name: "sub/b.js", type: "symlink", linkname: "../../../etc/passwd" },
        ]),
        stderr: "knotless-files-packed tar=0\n",
      }),
      isPack,
    );
    const report = await collectArtifact(ctx, POD, DIST, 1 << 20);
    assert.equal(report.status, "collected");
    assert.deepEqual(
      report.files.map((f) => f.path),
      ["a.js"],
    );
    assert.match(report.reason ?? "", /refused 1: sub\/b\.js \(symlink target/);
    assert.equal(existsSync(join(outDir, "artifacts", "dist", "sub", "b.js")), false);
    assert.equal(JSON.parse(readFileSync(report.manifest!, "utf8")).refused[0].path, "sub/b.js");
  });

  it("fails when the archive holds fewer members than the files asked for", async () => {
    const { ctx, kubectl } = await setUp();
    kubectl.on("exec", { stdout: LISTING, stderr: "knotless-files-listed\n" }, isList);
    kubectl.on(
      "exec",
      async () => ({
        stdout: await buildTar([{ name: "a.js", content: "alpha" }]),
        stderr: "knotless-files-packed tar=0\n",
      }),
      isPack,
    );
    const report = await collectArtifact(ctx, POD, DIST, 1 << 20);
    assert.equal(report.status, "failed");
    assert.match(report.reason ?? "", /1 entries for the 2 files asked for/);
  });

  it("fails, with tar's words, when the pod's tar failed", async () => {
    const { ctx, kubectl } = await setUp();
    kubectl.on("exec", { stdout: LISTING, stderr: "knotless-files-listed\n" }, isList);
    kubectl.on(
      "exec",
      async () => ({
        stdout: await buildTar([{ name: "a.js", content: "alpha" }]),
        stderr: "tar: sub/b.js: Cannot stat: No such file or directory\nknotless-files-packed tar=2\n",
      }),
      isPack,
    );
    const report = await collectArtifact(ctx, POD, DIST, 1 << 20);
    assert.equal(report.status, "failed");
    assert.match(report.reason ?? "", /exited 2: tar: sub\/b\.js: Cannot stat/);
  });

  it("fails when the listing did not finish", async () => {
    const { ctx, kubectl } = await setUp();
    kubectl.on("exec", { stdout: "/work/dist/a.js\0" }, isList);
    const report = await collectArtifact(ctx, POD, DIST, 1 << 20);
    assert.equal(report.status, "failed");
    assert.match(report.reason ?? "", /listing the pod's files failed/);
  });

  it("fails at once, with no exec, for a pattern outside /outputs and /work", async () => {
    const { ctx, kubectl } = await setUp();
    const report = await collectArtifact(ctx, POD, { ...DIST, paths: ["/etc/*"] }, 1 << 20);
    assert.equal(report.status, "failed");
    assert.equal(kubectl.calls.length, 0);
  });
});
