// The Kubernetes launcher without a cluster: what its check of an offer accepts and refuses INCOMPATIBLE with the reason in words, and a restart's run it cannot read.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { Cluster } from "../../src/cluster/cluster.js";
import { buildLeaseRunId, createKubernetesLauncher } from "../../src/mill/launch-lease.js";
import { serializeRunPlan } from "../../src/run/run-plan.js";
import type { RunSettings } from "../../src/executor/kubernetes/context.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const PIPELINE = JSON.stringify({
  triggerMetadata: {
    kind: "push",
    repo: { knot: "knot.example.org", did: "did:plc:owner", repoDid: "did:plc:repo", defaultBranch: "main" },
    push: { ref: "refs/heads/main", oldSha: "0".repeat(40), newSha: "a".repeat(40) },
  },
});

function offer(raw: string, clone: Record<string, unknown> = { skip: true }) {
  return {
    leaseId: "3abc-1",
    targetEngine: "nixery",
    rawPipelineJson: PIPELINE,
    rawWorkflowJson: JSON.stringify({ name: "ci.yml", engine: "nixery", clone, raw }),
    knot: "knot.example.org",
    rkey: "3abc",
    ttlSeconds: 45,
  };
}

const STEPS = "steps:\n  - name: a\n    command: echo hi\n";

describe("the mill's Kubernetes launcher", () => {
  const launcher = (architectures?: readonly string[], git = false) =>
    createKubernetesLauncher({
      // check() plans the offer only; it calls no cluster.
      cluster: {} as Cluster,
      defaults: {
        target: { namespace: "ci" },
        podTimeoutMs: 60_000,
        maxOutputBytes: 1024,
        maxLogBytes: 1024,
        nixery: "nixery.example.org",
        ...(git ? { git: { binary: "git", env: {} } } : {}),
      },
      runsDir: makeTestTempDir("launch-lease-"),
      ...(architectures ? { architectures } : {}),
      warn: () => undefined,
    });

  it("refuses a workflow asking for an architecture the cluster does not serve, naming both, and takes one it serves", async () => {
    const arm = await launcher(["amd64"]).check(offer(`architecture: arm64\n${STEPS}`));
    assert.deepEqual(arm, {
      ok: false,
      reason: "architecture arm64 is not served here (this cluster runs amd64)",
    });
    const amd = await launcher(["amd64"]).check(offer(`architecture: amd64\n${STEPS}`));
    assert.equal(amd.ok, true);
    const any = await launcher().check(offer(`architecture: arm64\n${STEPS}`));
    assert.equal(any.ok, true);
  });

  it("refuses an engine it does not run and a clone it has no git for, with the reason in words", async () => {
    const dagger = await launcher().check({ ...offer(STEPS), targetEngine: "dagger" });
    assert.equal(dagger.ok, false);
    assert.match(!dagger.ok ? dagger.reason : "", /^engine dagger is not run here/);
    const cloning = await launcher().check(offer(STEPS, { skip: false, depth: 1, submodules: false, tags: true }));
    assert.deepEqual(cloning, { ok: false, reason: "this executor has no git to clone with" });
    assert.equal(
      (await launcher(undefined, true).check(offer(STEPS, { skip: false, depth: 1, submodules: false, tags: true })))
        .ok,
      true,
    );
  });

  it("ends a run whose kept plan cannot be read as failed runner-lost saying why, after deleting its Job and its files", async () => {
    const runsDir = makeTestTempDir("launch-lease-");
    const runDir = join(runsDir, buildLeaseRunId("3abc-7"));
    mkdirSync(join(runDir, "checkout"), { recursive: true });
    writeFileSync(join(runDir, "run.log"), "left by the killed executor\n");
    const deleted: Array<[string | undefined, string]> = [];
    const cluster = {
      deleteJob: async (namespace: string | undefined, name: string) => {
        deleted.push([namespace, name]);
        return "deleted" as const;
      },
    } as unknown as Cluster;
    const lost = createKubernetesLauncher({
      cluster,
      defaults: { target: { namespace: "ci" }, podTimeoutMs: 60_000, maxOutputBytes: 1024, maxLogBytes: 1024 },
      runsDir,
      warn: () => undefined,
    });
    const lines: string[] = [];
    const launched = lost.resume(
      {
        leaseId: "3abc-7",
        record: JSON.stringify({ namespace: "ci", jobName: "knotless-mill-3abc-7" }),
        plan: '{"vers',
      },
      (line) => lines.push(line.content),
      { plan: () => undefined, checkpoint: () => undefined },
    );
    const outcome = await launched.done;
    assert.equal(outcome.status, "failed");
    assert.equal(outcome.exitCode, -1);
    assert.match(
      outcome.error,
      /^runner-lost: the executor restarted and could not read the run's plan or checkpoint: the run's plan is not JSON: .*; its Job was deleted$/,
    );
    assert.deepEqual(deleted, [["ci", "knotless-mill-3abc-7"]]);
    assert.equal(existsSync(runDir), false, "the run's files are gone");
    assert.ok(
      lines.some((line) => /could not read the run's plan/.test(line)),
      "the lease's log says why",
    );
  });

  it("deletes a re-attached run's Job when the mill cancels it before its supervision began", async () => {
    const runsDir = makeTestTempDir("launch-lease-");
    const deleted: string[] = [];
    const cluster = {
      deleteJob: async (_namespace: string | undefined, name: string) => (deleted.push(name), "deleted" as const),
    } as unknown as Cluster;
    const launcher = createKubernetesLauncher({
      cluster,
      defaults: { target: { namespace: "ci" }, podTimeoutMs: 60_000, maxOutputBytes: 1024, maxLogBytes: 1024 },
      runsDir,
      warn: () => undefined,
    });
    const settings = {
      runId: buildLeaseRunId("3abc-8"),
      jobName: "knotless-mill-3abc-8",
      target: { namespace: "ci" },
      steps: [{ name: "a", script: "echo hi" }],
      secrets: [],
      outDir: join(runsDir, buildLeaseRunId("3abc-8")),
    } as unknown as RunSettings;
    const launched = launcher.resume(
      {
        leaseId: "3abc-8",
        record: JSON.stringify({ namespace: "ci", jobName: "knotless-mill-3abc-8" }),
        plan: serializeRunPlan(settings),
      },
      () => undefined,
      { plan: () => undefined, checkpoint: () => undefined },
    );
    launched.cancel("the pipeline was cancelled");
    const outcome = await launched.done;
    assert.equal(outcome.status, "cancelled");
    assert.match(outcome.error, /^cancelled: the pipeline was cancelled; its Job was deleted$/);
    assert.deepEqual(deleted, ["knotless-mill-3abc-8"], "the Job the killed executor left");
  });
});
