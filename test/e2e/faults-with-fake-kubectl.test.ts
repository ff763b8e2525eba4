// The core's promises under injected faults, through the library API and the fake kubectl.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createFakeCluster, type FakeCluster, type Faults } from "../fixtures/fake-kubectl/harness.js";
import { HOST_TAR, runWithKubectl } from "../support/run-library.js";
import { makeTestTempDir } from "../support/temp-dir.js";

async function clusterWith(t: { after: (fn: () => Promise<void>) => void }, faults: Faults): Promise<FakeCluster> {
  const cluster = await createFakeCluster();
  t.after(() => cluster.cleanup());
  await cluster.setFaults(faults);
  return cluster;
}

const COUNT_STEP =
  "count\ti=1; while [ $i -le 400 ]; do echo line $i; i=$((i+1)); done; sleep 1; echo done >&2; exit 7";
const EXPECTED_COUNT = Array.from({ length: 400 }, (_, i) => `line ${i + 1}\n`).join("");

describe("faults injected by the fake kubectl", { concurrency: 2 }, () => {
  for (const mode of ["silent", "error"] as const) {
    it(`resumes a ${mode}ly cut stream with no output lost or repeated and the step's true exit code`, async (t) => {
      const cluster = await clusterWith(t, {
        execCuts: [
          { match: "helper.sh run", afterBytes: 700, mode, times: 1 },
          { match: "helper.sh follow", afterBytes: 900, mode, times: 1 },
        ],
      });
      const run = await runWithKubectl({
        kubectlPath: cluster.kubectlPath,
        env: cluster.env,
        steps: COUNT_STEP,
        runId: `cut-${mode}`,
      });
      assert.equal(run.result.steps[0]!.exitCode, 7);
      assert.equal(run.result.steps[0]!.status, "failed");
      assert.equal(run.output(0), EXPECTED_COUNT);
      assert.equal(run.output(0, "stderr"), "done\n");
      const follows = (await cluster.calls()).filter((c) => c.argv.includes("follow"));
      assert.ok(follows.length >= 2, "it reconnected with follow");
      assert.deepEqual(await cluster.jobs(), []);
    });
  }

  // Every upload fault, through the host's GNU tar (the default) and through the runner's own packer.
  for (const [packer, hostTar] of [
    ["GNU tar", { hostTar: HOST_TAR }],
    ["the runner's packer", { hostTar: undefined }],
  ] as const) {
    // The upload archive starts with the directory knotless/env (a header, no body), then the next header; then
    // env/0.env and env/carried.env (empty: a header each), env/run.env (CI=true: a header and one block), and
    // helper.sh, whose body of several blocks begins at 6 × 512.
    const secondHeaderAt = 512;
    const helperBodyAt = 6 * 512;
    for (const [where, afterBytes, reason] of [
      ["inside a header (GNU tar then exits 0)", secondHeaderAt + 100, "integrity-mismatch"],
      ["inside a file body (tar then fails)", helperBodyAt + 188, "exec-failed"],
    ] as const) {
      it(`never runs a step after an upload (${packer}) whose stdin lost its tail ${where}`, async (t) => {
        const cluster = await clusterWith(t, { stdinLosses: [{ match: "tar -xf", afterBytes, times: 5 }] });
        const run = await runWithKubectl({
          kubectlPath: cluster.kubectlPath,
          env: cluster.env,
          steps: "a\ttrue",
          runId: `lost-tail-${afterBytes}`,
          overrides: hostTar,
        });
        assert.equal(run.result.status, "failed");
        assert.equal(run.result.exitCode, -1);
        assert.equal(run.result.errorReason, reason, run.result.error ?? undefined);
        assert.deepEqual(
          (await cluster.calls()).map((c) => c.argv.join(" ")).filter((call) => call.includes("helper.sh run")),
          [],
        );
        assert.deepEqual(await cluster.jobs(), []);
      });
    }

    it(`reports an upload (${packer}) whose exec dropped mid-stream as an infrastructure failure, not as bad input`, async (t) => {
      // Far more than the socket buffers hold, so the packer is still writing when kubectl goes away.
      const checkout = makeTestTempDir("knotless-big-checkout-");
      writeFileSync(join(checkout, "big.bin"), Buffer.alloc(32 * 1024 * 1024, 7));
      const cluster = await clusterWith(t, {
        execCuts: [{ match: "tar -xf", afterBytes: 0, mode: "error", times: 5 }],
      });
      const run = await runWithKubectl({
        kubectlPath: cluster.kubectlPath,
        env: cluster.env,
        steps: "a\ttrue",
        runId: "cut-upload",
        overrides: { checkoutDir: checkout, ...hostTar },
      });
      assert.equal(run.result.status, "failed");
      assert.equal(run.result.errorReason, "exec-failed", run.result.error ?? undefined);
      assert.match(run.result.error ?? "", /connection reset by peer/);
      assert.deepEqual(
        (await cluster.calls()).map((c) => c.argv.join(" ")).filter((call) => call.includes("helper.sh run")),
        [],
      );
      assert.deepEqual(await cluster.jobs(), []);
    });

    it(`never trusts an upload (${packer}) that kubectl swallowed, exiting 0 without reading it`, async (t) => {
      const checkout = makeTestTempDir("knotless-swallowed-checkout-");
      writeFileSync(join(checkout, "big.bin"), Buffer.alloc(16 * 1024 * 1024, 7));
      const cluster = await clusterWith(t, { execSwallow: [{ match: "tar -xf", times: 5 }] });
      const run = await runWithKubectl({
        kubectlPath: cluster.kubectlPath,
        env: cluster.env,
        steps: "a\ttrue",
        runId: "swallowed-upload",
        overrides: { checkoutDir: checkout, ...hostTar },
      });
      assert.equal(run.result.errorReason, "exec-failed", run.result.error ?? undefined);
      assert.match(run.result.error ?? "", /upload stream failed: .*(EPIPE|without reading the whole archive)/);
      assert.equal(run.result.steps[0]!.status, "skipped");
      assert.deepEqual(await cluster.jobs(), []);
    });

    it(`reports a pod evicted during the upload (${packer}) as lost, not as a failed exec`, async (t) => {
      const cluster = await clusterWith(t, { podLostAfterExecs: 1, podLostDelayMs: 50 });
      const run = await runWithKubectl({
        kubectlPath: cluster.kubectlPath,
        env: cluster.env,
        steps: "a\ttrue",
        runId: "evicted-upload",
        overrides: hostTar,
      });
      assert.equal(run.result.errorReason, "pod-lost", run.result.error ?? undefined);
      assert.match(run.result.error ?? "", /Evicted/);
      assert.equal(run.result.steps[0]!.status, "skipped");
      assert.deepEqual(await cluster.jobs(), []);
    });

    it(`stops an upload (${packer}) that overruns the run's timeout and reports status timeout`, async (t) => {
      const cluster = await clusterWith(t, { latencyMs: 2500 });
      const run = await runWithKubectl({
        kubectlPath: cluster.kubectlPath,
        env: cluster.env,
        steps: "a\ttrue",
        runId: "overrun",
        overrides: { timeoutMs: 6000, ...hostTar },
        timings: { runDeadlineGraceMs: 500, killGraceSeconds: 0 },
      });
      assert.equal(run.result.status, "timeout");
      assert.equal(run.result.errorReason, "run-timeout");
      assert.equal(run.result.steps[0]!.status, "skipped");
      assert.deepEqual(await cluster.jobs(), [], "the Job was deleted");
    });
  }

  it("reports an outputs download whose stream was cut, with kubectl exiting 0, as an infrastructure failure", async (t) => {
    const cluster = await clusterWith(t, {
      execCuts: [{ match: "pack-outputs", afterBytes: 3000, mode: "silent", times: 5 }],
    });
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "out\thead -c 50000 /dev/zero > /outputs/zeros",
      runId: "cut-download",
    });
    assert.equal(run.result.steps[0]!.status, "success");
    assert.equal(run.result.status, "failed");
    assert.equal(run.result.exitCode, -1);
    assert.equal(run.result.errorReason, "download-failed", run.result.error ?? undefined);
    assert.match(run.result.error ?? "", /truncated/);
    assert.deepEqual(await cluster.jobs(), []);
  });

  it("reports an evicted pod as an infrastructure failure within seconds", async (t) => {
    const cluster = await clusterWith(t, { podLostAfterExecs: 2, podLostDelayMs: 500 });
    const started = Date.now();
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "long\tsleep 300",
      runId: "evicted",
    });
    assert.equal(run.result.status, "failed");
    assert.equal(run.result.errorReason, "pod-lost");
    assert.match(run.result.error ?? "", /Evicted/);
    assert.equal(run.result.exitCode, -1);
    assert.ok(Date.now() - started < 30_000, "it did not wait for a timeout");
  });

  it("fails fast with the reason on an image pull failure", async (t) => {
    const cluster = await clusterWith(t, { imagePull: "ErrImagePull" });
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "a\ttrue",
      runId: "pull",
      overrides: { podTimeoutMs: 120_000 },
    });
    assert.equal(run.result.errorReason, "image-pull");
    assert.match(run.result.error ?? "", /ErrImagePull/);
    assert.ok(run.result.durationMs < 60_000, `took ${run.result.durationMs} ms`);
    assert.deepEqual(await cluster.jobs(), []);
  });

  it("fails immediately on an invalid image name", async (t) => {
    const cluster = await clusterWith(t, { imagePull: "InvalidImageName" });
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "a\ttrue",
      runId: "badname",
    });
    assert.equal(run.result.errorReason, "image-pull");
    assert.match(run.result.error ?? "", /InvalidImageName/);
  });

  it("shows Pending progress with the scheduler's event, then succeeds", async (t) => {
    const cluster = await clusterWith(t, { pendingPolls: 12 });
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "a\techo ok",
      runId: "pending",
    });
    assert.equal(run.result.status, "success");
    const progress = run.events.filter((e) => e.kind === "pod-progress");
    assert.ok(progress.length > 0, "no progress reported");
    assert.ok(
      progress.some((e) => e.kind === "pod-progress" && /FailedScheduling/.test(e.event ?? "")),
      JSON.stringify(progress),
    );
  });

  it("gives up waiting for a pod that stays Pending past the pod timeout", async (t) => {
    const cluster = await clusterWith(t, { pendingPolls: 1000 });
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "a\ttrue",
      runId: "podtimeout",
      overrides: { podTimeoutMs: 2000 },
    });
    assert.equal(run.result.errorReason, "pod-timeout");
    assert.deepEqual(await cluster.jobs(), []);
  });

  it("retries exec upgrade failures on a fresh node and then succeeds", async (t) => {
    const cluster = await clusterWith(t, { execUpgradeFailures: 3 });
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "a\techo hi",
      runId: "upgrade",
    });
    assert.equal(run.result.status, "success", run.result.error ?? "");
    assert.equal(run.output(0), "hi\n");
  });

  it("retries a create answered with a 500 a bounded number of times", async (t) => {
    const cluster = await clusterWith(t, { createFailures: 2 });
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "a\ttrue",
      runId: "create500",
    });
    assert.equal(run.result.status, "success", run.result.error ?? "");
    assert.equal((await cluster.calls()).filter((c) => c.argv.includes("create")).length, 3);
  });

  it("stops retrying creates that keep failing and reports the cause", async (t) => {
    const cluster = await clusterWith(t, { createFailures: 100 });
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "a\ttrue",
      runId: "create500forever",
    });
    assert.equal(run.result.errorReason, "create-failed");
    assert.match(run.result.error ?? "", /etcdserver/);
    assert.equal((await cluster.calls()).filter((c) => c.argv.includes("create")).length, 5);
  });

  it("never touches a Job of the same name that another run created", async (t) => {
    const cluster = await clusterWith(t, {});
    const first = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "a\ttrue",
      runId: "same",
      overrides: { keep: true },
    });
    assert.equal(first.result.status, "success");
    const second = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "a\ttrue",
      runId: "same",
    });
    assert.equal(second.result.errorReason, "create-failed");
    assert.match(second.result.error ?? "", /already exists/);
    assert.equal((await cluster.jobs()).length, 1, "the other run's Job is still there");
  });
});
