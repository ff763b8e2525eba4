// The in-pod clone's two execs over a scripted kubectl: the probe's answer, the clone's HEAD, and how each failure is judged.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cloneInPod, probeGit } from "../../../src/executor/kubernetes/clone-in-pod.js";
import { CLONE_DONE_TAG, CLONE_FAILED_TAG, GIT_FOUND_TAG } from "../../../src/pod/git-clone-script.js";
import { isInfraError } from "../../support/infra-error.js";
import { NODE_NAME, POD_NAME, UPGRADE_REFUSED, failure, podList, runningPod } from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";

const POD = { name: POD_NAME, node: NODE_NAME };
const SPEC = { url: "git://git.example/repo.git", sha: "b".repeat(40), depth: 1, submodules: false };

describe("the in-pod clone", { concurrency: true }, () => {
  it("reads the probe's tag: git on the image's PATH or not", async () => {
    for (const [stdout, found] of [
      [`${GIT_FOUND_TAG}\n`, true],
      ["", false],
    ] as const) {
      const { ctx, kubectl } = buildTestContext();
      kubectl.on("exec", { stdout });
      assert.equal(await probeGit(ctx, POD), found);
    }
  });

  it("passes the URL and sha as arguments of the clone exec and resolves with the HEAD the pod checked out", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: `${CLONE_DONE_TAG} ${SPEC.sha}\n` });
    assert.equal(await cloneInPod(ctx, POD, SPEC), SPEC.sha);
    const args = kubectl.callsTo("exec")[0]!.args;
    assert.deepEqual(args.slice(-7), ["knotless-clone", SPEC.url, SPEC.sha, "1", "0", "/work", "0"]);
  });

  it("fails a git step that failed as checkout-failed, naming the step, its exit code and git's message", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", {
      stdout: `${CLONE_FAILED_TAG} fetch 128\n`,
      stderr: "fatal: remote error: not our ref\ncommand terminated with exit code 1\n",
      exitCode: 1,
    });
    await assert.rejects(
      cloneInPod(ctx, POD, SPEC),
      isInfraError("checkout-failed", /^git fetch failed in the pod \(exit 128\): fatal: remote error: not our ref$/),
    );
  });

  it("quotes git's whole message when a git step fails, not only its last line", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", {
      stdout: `${CLONE_FAILED_TAG} fetch 128\n`,
      stderr:
        "fatal: unable to access 'https://git.example/repo.git/': Could not resolve host: git.example\nhint: check the URL\ncommand terminated with exit code 1\n",
      exitCode: 1,
    });
    await assert.rejects(
      cloneInPod(ctx, POD, SPEC),
      isInfraError("checkout-failed", /Could not resolve host: git\.example\nhint: check the URL$/),
    );
  });

  it("bounds a long git message to its last 40 lines, marking the cut", async () => {
    const { ctx, kubectl } = buildTestContext();
    const lines = Array.from({ length: 100 }, (_, i) => `remote: line ${i}`);
    kubectl.on("exec", {
      stdout: `${CLONE_FAILED_TAG} fetch 128\n`,
      stderr: `${lines.join("\n")}\ncommand terminated with exit code 1\n`,
      exitCode: 1,
    });
    await assert.rejects(cloneInPod(ctx, POD, SPEC), (error: Error) => {
      assert.match(error.message, /\[\.\.\.\]\nremote: line 60\n/);
      assert.doesNotMatch(error.message, /line 59\n/);
      assert.match(error.message, /remote: line 99$/);
      return true;
    });
  });

  it("retries a clone exec that could not start (the node refusing the upgrade) and judges another exec failure exec-failed", async () => {
    const retried = buildTestContext();
    retried.kubectl.on("exec", [failure(UPGRADE_REFUSED), { stdout: `${CLONE_DONE_TAG} ${SPEC.sha}\n` }]);
    retried.kubectl.on("get pods", podList(runningPod()));
    assert.equal(await cloneInPod(retried.ctx, POD, SPEC), SPEC.sha);
    const cut = buildTestContext();
    cut.kubectl.on("exec", failure("command terminated with exit code 137", 137));
    cut.kubectl.on("get pods", podList(runningPod()));
    await assert.rejects(cloneInPod(cut.ctx, POD, SPEC), isInfraError("exec-failed"));
  });
});
