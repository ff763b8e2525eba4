// `run --workflow --cache-pvc` on the local cluster through the real kubectl: a miss then an exact hit across two runs, the bytes only on the claim.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { hashCacheName } from "../../src/pod/pvc-layout.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import type { RunResult } from "../../src/run/run-result.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason } from "../support/local-cluster-e2e.js";
import { readResult, runCli } from "../support/run-cli.js";

const skip = findPodmanSkipReason() || (E2E_KUBECTLS.length === 0 ? "no kubectl 1.30 or 1.33 installed" : false);
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const REPO = "did:plc:e2e/pvc-repo";
const CLAIM = "ci-cache";

const WORKFLOW = `
caches:
  - key: 'deps-{{ hashFiles "lock.txt" }}'
    restore-keys: [deps-]
    paths: [deps]
steps:
  - name: install
    command: |
      if [ -f /work/deps/lock.txt ]; then echo "deps from $(cat /work/deps/lock.txt)"; else echo "deps built"; fi
      mkdir -p /work/deps && cp lock.txt /work/deps/lock.txt
      head -c 200000 /dev/urandom > /work/deps/blob
`;

describe("run --cache-pvc on the local cluster", { skip, concurrency: 1, timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  let root = "";
  let runs = 0;
  before(async () => {
    cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
    root = mkdtempSync(join(tmpdir(), "knotless-pvc-workflow-"));
    const claim = {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: CLAIM },
      spec: { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } },
    };
    const created = await new Kubectl({ binary: KUBECTL, env: process.env }).run(
      ["--kubeconfig", cluster.kubeconfigPath, "create", "-f", "-"],
      { stdin: JSON.stringify(claim) },
    );
    assert.equal(created.exitCode, 0, created.stderr);
  });
  after(async () => {
    await cluster?.stop();
  });

  async function run(
    lock: string,
    claim = CLAIM,
  ): Promise<{ code: number | null; stdout: string; stderr: string; result: RunResult }> {
    const n = ++runs;
    const dir = join(root, `run-${n}`);
    const checkout = join(dir, "checkout");
    mkdirSync(checkout, { recursive: true });
    writeFileSync(join(checkout, "lock.txt"), lock);
    const workflowFile = join(dir, "ci.yml");
    writeFileSync(workflowFile, WORKFLOW);
    const out = join(dir, "out");
    const cli = await runCli(
      [
        "run",
        "--workflow",
        workflowFile,
        "--checkout",
        checkout,
        "--out",
        out,
        "--event",
        "manual",
        "--repo",
        REPO,
        "--cache-pvc",
        claim,
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        KUBECTL,
        "--run-id",
        `pvc-${process.pid}-${n}`,
      ],
      { timeoutMs: 300_000 },
    );
    return { code: cli.code, stdout: cli.stdout, stderr: cli.stderr, result: readResult(out) };
  }

  it("misses on the first run and saves on the claim; the second run hits exactly and saves nothing", async () => {
    const first = await run("lock v1\n");
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(
      first.result.caches.map((c) => `${c.restore.status}/${c.save.status}`),
      ["miss/saved"],
    );
    assert.match(first.stdout, /deps built/);
    const repoDir = join(cluster.claimDirectory("default", CLAIM)!, hashCacheName(REPO));
    assert.deepEqual(
      readdirSync(repoDir)
        .map((f) => f.replace(/^[0-9a-f]{64}/, "KEY"))
        .sort(),
      ["KEY.meta", "KEY.tar.gz"],
    );

    const second = await run("lock v1\n");
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(
      second.result.caches.map((c) => `${c.restore.status}/${c.save.status}`),
      ["exact/skipped"],
    );
    assert.match(second.stdout, /deps from lock v1/);
    assert.ok(second.result.caches[0]!.restore.bytes > 200_000);

    const changed = await run("lock v2\n");
    assert.deepEqual(
      changed.result.caches.map((c) => `${c.restore.status}/${c.save.status}`),
      ["fallback/saved"],
    );
    assert.match(changed.stdout, /deps from lock v1/);
    assert.equal(readdirSync(repoDir).length, 4);
    assert.ok(existsSync(repoDir));
    await assertNothingLeft(cluster);
  });

  it("fails at once with exit 3 when the claim does not exist, naming it, instead of waiting out the pod timeout", async () => {
    const started = Date.now();
    const missing = await run("lock v1\n", "no-such-claim");
    assert.equal(missing.code, 3, missing.stderr);
    assert.ok(Date.now() - started < 60_000, `it took ${Date.now() - started} ms (the pod timeout is 15 min)`);
    assert.equal(missing.result.errorReason, "pod-config");
    assert.match(
      missing.result.error ?? "",
      /its PersistentVolumeClaim no-such-claim does not exist in the run's namespace \(create it, or run without --cache-pvc\)/,
    );
    await assertNothingLeft(cluster);
  });
});
