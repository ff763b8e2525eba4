// The runner through the in-process API transport (--transport api) on the local cluster over TLS: no kubectl at all.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type FaultConfig, type LocalCluster } from "../../local-cluster/index.js";
import {
  assertNothingLeft,
  countFiringsSince,
  findPodmanSkipReason,
  measureEvictionToEnd,
  waitUntil,
} from "../support/local-cluster-e2e.js";
import { makeWorkspace, readResult, REPO_ROOT, runCli, startCli } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const skip = findPodmanSkipReason();
const EXAMPLE_STEPS = readFileSync(join(REPO_ROOT, "examples", "hello", "steps.tsv"), "utf8");
/** No kubectl on this path: any kubectl call of the run would fail it. */
const NO_KUBECTL = join(makeTestTempDir("no-kubectl-"), "kubectl");

describe(
  "the runner through the API transport on the local cluster",
  { skip, concurrency: 1, timeout: 600_000 },
  () => {
    let cluster: LocalCluster;
    before(async () => {
      cluster = await startLocalCluster({ tls: true, imageBackOffSeconds: 1, recordRequests: true });
    });
    after(async () => {
      await cluster?.stop();
    });
    const cli = (args: readonly string[]) =>
      runCli([...args, "--kubeconfig", cluster.kubeconfigPath, "--transport", "api", "--kubectl", NO_KUBECTL]);
    const run = (ws: ReturnType<typeof makeWorkspace>, runId: string, faults: FaultConfig = {}) => {
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
      ]);
    };

    it("runs the example's four steps, brings its outputs back and leaves nothing behind", async () => {
      const ws = makeWorkspace(EXAMPLE_STEPS);
      const result = await run(ws, "api-example");
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(
        readResult(ws.out).steps.map((s) => s.status),
        ["success", "success", "success", "success"],
      );
      assert.match(result.stdout, /hello from a shared step/);
      assert.match(readFileSync(join(ws.out, "outputs", "ran.txt"), "utf8"), /^ran on knotless-run-/);
      // run.log says what was asked of the cluster, as it does of kubectl's calls: one line per request.
      const log = readFileSync(join(ws.out, "run.log"), "utf8");
      assert.match(
        log,
        / api POST \/apis\/batch\/v1\/namespaces\/default\/jobs\?fieldValidation=Strict → 201 \(\S+\)\n/,
      );
      assert.match(
        log,
        / api GET \/api\/v1\/namespaces\/default\/pods\/knotless-run-api-example-\w+\/exec\?command=\S+ → 101 \(\S+\)\n/,
      );
      assert.match(log, / api DELETE \/apis\/batch\/v1\/namespaces\/default\/jobs\/knotless-run-api-example → 200 /);
      assert.doesNotMatch(log, /\$ kubectl /);
      await assertNothingLeft(cluster);
    });

    it("doctor passes through the api transport and names it", async () => {
      const doctor = await cli(["doctor"]);
      assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
      assert.match(doctor.stdout, /^ok +transport +api: the Kubernetes API spoken in-process/m);
      assert.match(doctor.stdout, /^ok +permission pods\/exec /m);
      assert.doesNotMatch(doctor.stderr, /MaxListenersExceededWarning/);
    });

    it("delivers a secret over exec stdin, masked in the output, and never in a request line", async () => {
      const ws = makeWorkspace('show\techo "token=$API_TOKEN"; test "$API_TOKEN" = s3cr3t-api-v4lue\n');
      const secrets = join(makeTestTempDir("api-secrets-"), "secrets.env");
      writeFileSync(secrets, "API_TOKEN=s3cr3t-api-v4lue\n", { mode: 0o600 });
      cluster.setFaults({});
      const before = cluster.requests().length;
      const result = await cli([
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        "--run-id",
        "api-secret",
        "--secrets",
        secrets,
      ]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, "token=***\n");
      const lines = cluster
        .requests()
        .slice(before)
        .map((r) => `${r.method} ${r.url}`);
      assert.ok(
        lines.some((line) => line.includes("/exec?")),
        "the run's execs are recorded",
      );
      assert.ok(
        lines.every((line) => !line.includes("s3cr3t-api-v4lue")),
        "a request line holds the secret",
      );
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
          "api-over-limit",
          "--max-output-bytes",
          "1Mi",
          "--kubeconfig",
          cluster.kubeconfigPath,
          "--transport",
          "api",
          "--kubectl",
          NO_KUBECTL,
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
      const result = await run(ws, "api-fail");
      assert.equal(result.code, 1, result.stderr);
      assert.equal(readResult(ws.out).exitCode, 4);
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

    for (const mode of ["clean", "error"] as const) {
      it(`resumes a cut exec stream (${mode}) with no output lost or repeated and the true exit code`, async () => {
        const ws = makeWorkspace(
          "count\ti=1; while [ $i -le 2000 ]; do echo line $i; i=$((i+1)); done; sleep 2; exit 9\n",
        );
        const since = Date.now();
        const result = await run(ws, `api-cut-${mode}`, {
          execStreamCut: { afterBytes: 5000, mode, match: "helper.sh (run|follow)", count: 2 },
        });
        assert.equal(result.code, 1, result.stderr);
        assert.equal(readResult(ws.out).steps[0]!.exitCode, 9);
        // The console puts a newline before a warning that interrupts a line: the log holds the bytes as they came.
        const log = readFileSync(join(ws.out, "log.ndjson"), "utf8")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line) as { kind: string; stream?: string; content?: string });
        const stdout = log
          .filter((line) => line.kind === "data" && line.stream === "stdout")
          .map((line) => line.content)
          .join("");
        assert.equal(stdout, Array.from({ length: 2000 }, (_, i) => `line ${i + 1}\n`).join(""));
        assert.ok(countFiringsSince(cluster, "execStreamCut", since) > 0, "no stream was cut during this run");
        await assertNothingLeft(cluster);
      });
    }

    it("retries refused exec upgrades (nothing ran) and succeeds", async () => {
      const ws = makeWorkspace("a\techo hi\n");
      const since = Date.now();
      const result = await run(ws, "api-upgrade", { execUpgradeRefused: { count: 3 } });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, "hi\n");
      assert.equal(countFiringsSince(cluster, "execUpgradeRefused", since), 3, "the upgrades refused during this run");
      await assertNothingLeft(cluster);
    });

    it("retries a create answered 500 and succeeds", async () => {
      const ws = makeWorkspace("a\ttrue\n");
      const since = Date.now();
      const result = await run(ws, "api-500", { createError: { count: 2 } });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(countFiringsSince(cluster, "createError", since), 2, "the creates answered 500 during this run");
      await assertNothingLeft(cluster);
    });

    it("reports an evicted pod and an image pull failure as infrastructure failures within seconds", async () => {
      const evicted = makeWorkspace("long\tsleep 300\n");
      const evict = await run(evicted, "api-evict", { podEviction: { afterSeconds: 4 } });
      assert.equal(evict.code, 3, evict.stderr);
      const result = readResult(evicted.out);
      assert.equal(result.errorReason, "pod-lost");
      assert.match(result.error ?? "", /Evicted/);
      // From the eviction, not the test's start: under load the pod's start alone took a minute.
      const reacted = measureEvictionToEnd(cluster, result.job.pod ?? undefined, result.finishedAt);
      assert.ok(reacted < 60_000, `the run ended ${reacted} ms after the eviction`);
      await assertNothingLeft(cluster);
      const pulled = makeWorkspace("a\ttrue\n");
      const pull = await run(pulled, "api-pull", { imagePullFailure: {} });
      assert.equal(pull.code, 3, pull.stderr);
      assert.equal(readResult(pulled.out).errorReason, "image-pull");
      await assertNothingLeft(cluster);
    });

    it("issues the scoped credential, runs the example with it, and revokes it, all through the api transport", async () => {
      cluster.setFaults({});
      const scoped = join(makeTestTempDir("api-scoped-"), "runner.kubeconfig");
      const issued = await cli(["credentials", "--namespace", "default", "--out", scoped]);
      assert.equal(issued.code, 0, issued.stderr);
      assert.match(issued.stdout, /serviceaccount\/knotless-runner created/);
      const again = await cli(["credentials", "--namespace", "default", "--out", scoped]);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /role\.rbac\.authorization\.k8s\.io\/knotless-runner unchanged/);
      const ws = makeWorkspace(EXAMPLE_STEPS);
      const result = await runCli([
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
        "api-scoped",
        "--kubeconfig",
        scoped,
        "--transport",
        "api",
        "--kubectl",
        NO_KUBECTL,
      ]);
      assert.equal(result.code, 0, result.stderr);
      await assertNothingLeft(cluster);
      const revoked = await cli(["credentials", "--namespace", "default", "--revoke", "--out", scoped]);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.deepEqual(
        cluster.objects("serviceaccounts", "default").filter((o) => o.metadata.name === "knotless-runner"),
        [],
      );
    });

    it("is cancelled from another process through the API transport: exit 130, outputs collected, nothing left", async () => {
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
        "api-cancel",
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--transport",
        "api",
        "--kubectl",
        NO_KUBECTL,
      ]);
      await started.waitFor(/^step-waits$/m, 120_000);
      const cancel = await cli(["cancel", "api-cancel"]);
      assert.equal(cancel.code, 0, cancel.stderr);
      const ended = await started.exited;
      assert.equal(ended.code, 130, ended.stderr);
      const result = readResult(ws.out);
      assert.equal(result.status, "cancelled");
      assert.equal(readFileSync(join(ws.out, "outputs", "before.txt"), "utf8"), "before\n");
      await assertNothingLeft(cluster);
    });

    // Each stage held where a cancel cannot be answered by the pod: its exec's upgrade kept unanswered by the API server.
    const STALLS = [
      { stage: "the upload", steps: "one\techo one\n", match: String.raw`/exec\?.*tar\+-xf` },
      { stage: "a step", steps: "wait\techo step-waits; sleep 300\n", match: undefined },
      {
        stage: "the outputs download",
        steps: "one\techo one > /outputs/one.txt\n",
        match: String.raw`/exec\?.*pack-outputs`,
      },
    ];
    for (const { stage, steps, match } of STALLS) {
      it(`ends on SIGTERM within 15 s with its Job deleted while ${stage} stalls`, async () => {
        cluster.setFaults(match ? { latency: { ms: 300_000, match, count: 1 } } : {});
        const firedBefore = cluster.faultFirings().length;
        const ws = makeWorkspace(steps);
        const runId = `api-stall-${STALLS.findIndex((s) => s.stage === stage)}`;
        const started = startCli(
          [
            "run",
            "--checkout",
            ws.checkout,
            "--steps",
            ws.stepsFile,
            "--out",
            ws.out,
            "--run-id",
            runId,
            "--kubeconfig",
            cluster.kubeconfigPath,
            "--transport",
            "api",
            "--kubectl",
            NO_KUBECTL,
          ],
          { timeoutMs: 120_000 },
        );
        if (match)
          await waitUntil(
            `the ${stage} stall`,
            () =>
              cluster
                .faultFirings()
                .slice(firedBefore)
                .some((f) => f.fault === "latency"),
            90_000,
          );
        else await started.waitFor(/^step-waits$/m, 90_000);
        await new Promise((r) => setTimeout(r, 500)); // well inside the stall
        const sent = Date.now();
        started.kill("SIGTERM");
        const ended = await started.exited;
        assert.equal(ended.code, 130, ended.stderr);
        assert.ok(ended.endedAt - sent < 15_000, `ended ${ended.endedAt - sent} ms after SIGTERM`);
        assert.equal(readResult(ws.out).status, "cancelled");
        cluster.setFaults({});
        await assertNothingLeft(cluster);
      });
    }
  },
);
