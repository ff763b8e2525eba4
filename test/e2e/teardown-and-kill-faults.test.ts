// Faults in the two execs/calls nothing else checks: the kill of a timed-out step, and the Job's delete.
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createFakeCluster, type FakeCluster, type Faults } from "../fixtures/fake-kubectl/harness.js";
import { quoteArg } from "../../src/events/format-event.js";
import { runWithKubectl } from "../support/run-library.js";
import { makeTestTempDir } from "../support/temp-dir.js";

async function clusterWith(t: { after: (fn: () => Promise<void>) => void }, faults: Faults): Promise<FakeCluster> {
  const cluster = await createFakeCluster();
  t.after(() => cluster.cleanup());
  await cluster.setFaults(faults);
  return cluster;
}

/** A kubectl in front of the fake one whose `delete` is refused (Forbidden, not retried), like a RBAC change mid-run. */
function kubectlThatCannotDelete(cluster: FakeCluster): string {
  const wrapper = join(makeTestTempDir("knotless-no-delete-"), "kubectl");
  writeFileSync(
    wrapper,
    `#!/bin/sh\nfor a in "$@"; do [ "$a" = delete ] && { echo 'Error from server (Forbidden): jobs.batch is forbidden: User "ci" cannot delete resource "jobs"' >&2; exit 1; }; done\nexec ${cluster.kubectlPath} "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  return wrapper;
}

describe("faults in the kill of a timed-out step and in teardown", { concurrency: 2 }, () => {
  it("does not report a timed-out step as stopped when its kill exec exited 0 without running, its processes still alive in the pod", async (t) => {
    // --keep leaves the pod, so what the kill left running can be seen after the run.
    const cluster = await clusterWith(t, { execSwallow: [{ match: "helper.sh kill", times: 1 }] });
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "slow\tsleep 300",
      runId: "kill-swallowed",
      overrides: { keep: true, stepTimeoutMs: 1500 },
    });
    assert.equal(run.result.steps[0]!.status, "timeout");
    const left = await cluster.processesInPod(run.result.job.pod!);
    assert.deepEqual(
      left.filter((line) => line === "sleep 300" || line.includes("/knotless/steps/0.sh")),
      [],
      "the timed-out step still runs in the pod",
    );
  });

  it("does not report a clean success when the Job could not be deleted and is left behind", async (t) => {
    const cluster = await clusterWith(t, {});
    const run = await runWithKubectl({
      kubectlPath: kubectlThatCannotDelete(cluster),
      env: cluster.env,
      steps: "a\ttrue",
      runId: "no-delete",
    });
    assert.equal((await cluster.jobs()).length, 1, "the Job is left behind (the delete was refused)");
    assert.notEqual(
      run.result.error,
      null,
      `result: status ${run.result.status}, exitCode ${run.result.exitCode}, error ${run.result.error}`,
    );
    assert.match(run.result.error ?? "", /knotless-run-no-delete/);
  });

  it("names the command that deletes a Job it could not delete, as the --keep and crash paths do", async (t) => {
    const cluster = await clusterWith(t, {});
    const kubectlPath = kubectlThatCannotDelete(cluster);
    const run = await runWithKubectl({ kubectlPath, env: cluster.env, steps: "a\ttrue", runId: "no-delete-cmd" });
    const teardown = run.events.find((e) => e.kind === "phase-end" && e.phase === "teardown");
    assert.ok(teardown && teardown.kind === "phase-end");
    assert.equal(teardown.ok, false);
    assert.match(teardown.detail, /delete it with: .*delete job knotless-run-no-delete-cmd/);
    assert.ok(
      teardown.detail.includes(`delete it with: ${quoteArg(kubectlPath)} --namespace default delete job`),
      teardown.detail,
    );
  });
});
