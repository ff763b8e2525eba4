// The runner through --transport kubectl (the real kubectl) on the local cluster: what the API default replaced stays tested.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type FaultConfig, type LocalCluster } from "../../local-cluster/index.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason } from "../support/local-cluster-e2e.js";
import { makeWorkspace, readResult, REPO_ROOT, runCli, startCli } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const KUBECTL = E2E_KUBECTLS.at(-1);
const skip = findPodmanSkipReason() || (KUBECTL ? false : "no real kubectl under /usr/lib/google-cloud-sdk/bin");
const EXAMPLE_STEPS = readFileSync(join(REPO_ROOT, "examples", "hello", "steps.tsv"), "utf8");

describe(
  "the runner through --transport kubectl on the local cluster",
  { skip, concurrency: 1, timeout: 600_000 },
  () => {
    let cluster: LocalCluster;
    before(async () => {
      cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
    });
    after(async () => {
      await cluster?.stop();
    });
    const cli = (args: readonly string[]) =>
      runCli([...args, "--kubeconfig", cluster.kubeconfigPath, "--transport", "kubectl", "--kubectl", KUBECTL!], {
        timeoutMs: 300_000,
      });
    const run = (
      ws: ReturnType<typeof makeWorkspace>,
      runId: string,
      faults: FaultConfig = {},
      extra: readonly string[] = [],
    ) => {
      cluster.setFaults(faults);
      return cli([
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--shared-steps",
        ws.sharedSteps,
        "--out",
        ws.out,
        "--run-id",
        runId,
        ...extra,
      ]);
    };

    it("runs the example's four steps, logs each kubectl call in run.log and leaves nothing behind", async () => {
      const ws = makeWorkspace(EXAMPLE_STEPS);
      const result = await run(ws, "kt-example");
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(
        readResult(ws.out).steps.map((s) => s.status),
        ["success", "success", "success", "success"],
      );
      assert.match(result.stdout, /hello from a shared step/);
      const log = readFileSync(join(ws.out, "run.log"), "utf8");
      assert.match(log, /\$ kubectl .* create .*-f - -o json\n/);
      assert.doesNotMatch(log, / api (GET|POST) /, "no API transport request in a kubectl run");
      await assertNothingLeft(cluster);
    });

    it("ends a run whose /outputs exceed --max-output-bytes as success, the blob refused, and leaves nothing behind", async () => {
      const ws = makeWorkspace(
        "blob\thead -c 3000000 /dev/urandom > /outputs/blob.bin; echo small > /outputs/small.txt\n",
      );
      cluster.setFaults({});
      const started = Date.now();
      const result = await runCli(
        [
          "run",
          "--checkout",
          ws.checkout,
          "--steps",
          ws.stepsFile,
          "--out",
          ws.out,
          "--run-id",
          "kubectl-over-limit",
          "--max-output-bytes",
          "1Mi",
          "--kubeconfig",
          cluster.kubeconfigPath,
          "--transport",
          "kubectl",
          "--kubectl",
          KUBECTL!,
        ],
        { timeoutMs: 90_000 },
      );
      assert.equal(result.code, 0, result.stderr);
      assert.ok(Date.now() - started < 60_000, `took ${Date.now() - started} ms`);
      const outcome = readResult(ws.out);
      assert.equal(outcome.status, "success");
      assert.ok(
        outcome.refusedOutputs.some((r) => r.path.endsWith("blob.bin")),
        JSON.stringify(outcome.refusedOutputs),
      );
      await assertNothingLeft(cluster);
    });

    it("reports a failing step's exit code and skips the rest", async () => {
      const ws = makeWorkspace("ok\ttrue\nfail\texit 4\nlater\ttrue\n");
      const result = await run(ws, "kt-fail");
      assert.equal(result.code, 1, result.stderr);
      assert.deepEqual(
        readResult(ws.out).steps.map((s) => [s.status, s.exitCode]),
        [
          ["success", 0],
          ["failed", 4],
          ["skipped", null],
        ],
      );
      await assertNothingLeft(cluster);
    });

    it("times out a step that outlives --step-timeout", async () => {
      const ws = makeWorkspace("slow\tsleep 300\nlater\ttrue\n");
      const result = await run(ws, "kt-timeout", {}, ["--step-timeout", "3s"]);
      assert.equal(readResult(ws.out).steps[0]!.status, "timeout", result.stderr);
      assert.equal(readResult(ws.out).steps[1]!.status, "skipped");
      assert.notEqual(result.code, 0);
      await assertNothingLeft(cluster);
    });

    it("resumes a cut exec stream with no output lost or repeated and the true exit code", async () => {
      const ws = makeWorkspace(
        "count\ti=1; while [ $i -le 2000 ]; do echo line $i; i=$((i+1)); done; sleep 2; exit 9\n",
      );
      const result = await run(ws, "kt-cut", {
        execStreamCut: { afterBytes: 5000, mode: "error", match: "helper.sh (run|follow)", count: 2 },
      });
      assert.equal(result.code, 1, result.stderr);
      assert.equal(readResult(ws.out).steps[0]!.exitCode, 9);
      const log = readFileSync(join(ws.out, "log.ndjson"), "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { kind: string; stream?: string; content?: string });
      const stdout = log
        .filter((line) => line.kind === "data" && line.stream === "stdout")
        .map((line) => line.content)
        .join("");
      assert.equal(stdout, Array.from({ length: 2000 }, (_, i) => `line ${i + 1}\n`).join(""));
      assert.ok(cluster.faultFirings().some((f) => f.fault === "execStreamCut"));
      await assertNothingLeft(cluster);
    });

    it("is cancelled from another process through kubectl: exit 130, outputs collected, nothing left", async () => {
      cluster.setFaults({});
      const ws = makeWorkspace("wait\techo before > /outputs/before.txt; echo step-waits; sleep 300\n");
      const started = startCli([
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        "--run-id",
        "kt-cancel",
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--transport",
        "kubectl",
        "--kubectl",
        KUBECTL!,
      ]);
      await started.waitFor(/^step-waits$/m, 120_000);
      const cancel = await cli(["cancel", "kt-cancel"]);
      assert.equal(cancel.code, 0, cancel.stderr);
      const ended = await started.exited;
      assert.equal(ended.code, 130, ended.stderr);
      assert.equal(readResult(ws.out).status, "cancelled");
      assert.equal(readFileSync(join(ws.out, "outputs", "before.txt"), "utf8"), "before\n");
      await assertNothingLeft(cluster);
    });

    it("saves a workflow's cache on a miss and restores it on the next run", async () => {
      cluster.setFaults({});
      const root = makeTestTempDir("kt-cache-");
      const cacheDir = join(root, "cache");
      const workflow =
        'caches:\n  - key: kt-deps-1\n    paths: [deps]\nsteps:\n  - name: use\n    command: |\n      if [ -f /work/deps/made ]; then echo "deps restored: $(cat /work/deps/made)"; else echo deps built; fi\n      mkdir -p /work/deps && echo v1 > /work/deps/made\n';
      const once = async (n: number) => {
        const dir = join(root, `run-${n}`);
        mkdirSync(join(dir, "checkout"), { recursive: true });
        writeFileSync(join(dir, "checkout", "README"), "x\n");
        writeFileSync(join(dir, "ci.yml"), workflow);
        const out = join(dir, "out");
        const result = await cli([
          "run",
          "--workflow",
          join(dir, "ci.yml"),
          "--checkout",
          join(dir, "checkout"),
          "--out",
          out,
          "--event",
          "manual",
          "--repo",
          "did:plc:e2e/kt",
          "--cache-dir",
          cacheDir,
          "--run-id",
          `kt-cache-${n}`,
        ]);
        return { ...result, result: readResult(out) };
      };
      const first = await once(1);
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(
        first.result.caches.map((c) => `${c.restore.status}/${c.save.status}`),
        ["miss/saved"],
      );
      assert.match(first.stdout, /deps built/);
      const second = await once(2);
      assert.equal(second.code, 0, second.stderr);
      assert.deepEqual(
        second.result.caches.map((c) => `${c.restore.status}/${c.save.status}`),
        ["exact/skipped"],
      );
      assert.match(second.stdout, /deps restored: v1/);
      await assertNothingLeft(cluster);
    });
  },
);
