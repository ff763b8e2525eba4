// `run` with its --out directory on a disk that fills mid-run (a 1 MiB tmpfs the test mounts as root), through the real CLI and the fake kubectl.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createFakeCluster } from "../fixtures/fake-kubectl/harness.js";
import { makeWorkspace, runCli } from "../support/run-cli.js";

describe("run on a full --out disk", () => {
  it("ends failed with a reason that says the disk is full and exit code 3, its Job deleted, instead of running on or hanging", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    // 3 MB of output against a 1 MiB disk: run.log cannot hold it.
    const ws = makeWorkspace("talk\thead -c 3000000 /dev/zero | tr '\\0' x | fold -w 100; sleep 30; echo never\n");
    const out = join(ws.out, "..", "full");
    mkdirSync(out);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", out]);
    t.after(() => execFileSync("umount", ["-l", out]));
    const started = Date.now();
    const run = await runCli(
      [
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--shared-steps",
        ws.sharedSteps,
        "--out",
        join(out, "run"),
        "--transport",
        "kubectl",
        "--kubectl",
        cluster.kubectlPath,
        "--kubeconfig",
        cluster.kubeconfigPath,
      ],
      { env: cluster.env, timeoutMs: 60_000 },
    );
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /disk is full/);
    assert.doesNotMatch(run.stdout, /never/);
    assert.ok(Date.now() - started < 30_000, "the run waited out its step instead of stopping");
    assert.deepEqual(await cluster.jobs(), [], "a Job was left behind");
  });
});
