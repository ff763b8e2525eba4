// The PVC cache backend on the local cluster through the API transport (set-up through the real kubectl): the runner's Job manifest mounts the claim, and a cache misses in one run's pod and hits in the next's (busybox and Debian images).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import type { CacheSpec } from "../../src/workflow/cache-types.js";
import { createClusterPodExec, createPvcCacheDriver, type PodExec } from "../../src/cache/pvc-cache.js";
import type { ApiCluster } from "../../src/cluster/api/api-cluster.js";
import { openApiCluster } from "../../src/cluster/api/open-api-cluster.js";
import { parsePvcList } from "../../src/cache/pvc-output.js";
import { buildPvcListCommand } from "../../src/cache/pvc-scripts.js";
import { hashCacheName } from "../../src/pod/pvc-layout.js";
import type { ClusterTarget } from "../../src/cluster/kubectl/kubectl-args.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { buildJobManifest } from "../../src/manifests/manifest.js";
import { E2E_KUBECTLS, findPodmanSkipReason, waitUntil } from "../support/local-cluster-e2e.js";

const NAMESPACE = "ci";
const CLAIM = "ci-cache";
const DEBIAN = "docker.io/library/debian:bookworm-slim";
const IMAGES = [
  "docker.io/library/busybox:1.36",
  ...(spawnSync("podman", ["image", "exists", DEBIAN]).status === 0 ? [DEBIAN] : []),
];
const skip = findPodmanSkipReason() || (E2E_KUBECTLS.length === 0 ? "no kubectl 1.30 or 1.33 installed" : false);

describe("the PVC cache backend on the local cluster", { skip }, () => {
  let cluster: LocalCluster;
  let target: ClusterTarget;
  let kubectl: Kubectl;
  /** The cache's execs go through the API transport (the default); the test's own set-up through the real kubectl. */
  let api: ApiCluster;
  before(async () => {
    cluster = await startLocalCluster({ namespace: NAMESPACE, maxGraceSeconds: 1 });
    target = { kubeconfig: cluster.kubeconfigPath, namespace: NAMESPACE };
    kubectl = new Kubectl({ binary: E2E_KUBECTLS.at(-1)!, env: process.env });
    api = await openApiCluster({ files: [cluster.kubeconfigPath], explicit: true }, { env: {} });
    const claim = {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: CLAIM },
      spec: { accessModes: ["ReadWriteMany"], resources: { requests: { storage: "1Gi" } } },
    };
    const created = await kubectl.run(
      ["--kubeconfig", cluster.kubeconfigPath, "--namespace", NAMESPACE, "create", "-f", "-"],
      { stdin: JSON.stringify(claim) },
    );
    assert.equal(created.exitCode, 0, created.stderr);
  });
  after(async () => {
    await api?.close();
    await cluster?.stop();
  });

  /** Creates the runner's Job with the claim, waits for its pod to run, and returns an exec into it and the Job's name. */
  async function startRun(
    run: string,
    image: string,
    repo = "did:plc:e2e/knot",
  ): Promise<{ exec: PodExec; done: () => Promise<void> }> {
    const jobName = `knotless-run-${run}`;
    const manifest = buildJobManifest({
      jobName,
      namespace: NAMESPACE,
      runId: run,
      runIdLabel: run,
      image,
      cpu: "100m",
      memory: "128Mi",
      budgetSeconds: 600,
      createToken: "t",
      cacheClaim: { claim: CLAIM, repo },
    });
    const created = await kubectl.run(["--kubeconfig", cluster.kubeconfigPath, "create", "-f", "-", "-o", "name"], {
      stdin: JSON.stringify(manifest),
    });
    assert.equal(created.exitCode, 0, created.stderr);
    const podOf = () => cluster.objects("pods", NAMESPACE).find((p) => p.metadata.labels?.["job-name"] === jobName);
    await waitUntil(`the pod of ${jobName} running`, () => podOf()?.status?.phase === "Running", 90_000);
    const pod = podOf()!.metadata.name;
    return {
      exec: createClusterPodExec(api, target.namespace, pod),
      done: async () => {
        await kubectl.run([
          "--kubeconfig",
          cluster.kubeconfigPath,
          "--namespace",
          NAMESPACE,
          "delete",
          "job",
          jobName,
          "--cascade=background",
          "--wait=false",
        ]);
      },
    };
  }

  for (const [i, image] of IMAGES.entries()) {
    const compression = image === DEBIAN ? "zstd" : "gzip";
    it(`misses in one run's pod and hits, byte for byte, in the next run's pod, the entry ${compression} (${image})`, async () => {
      const spec: CacheSpec = {
        key: `deps-${i}-v1`,
        restoreKeys: [`deps-${i}-`],
        paths: ["/work/deps", "/root/.tool-cache"],
      };
      const warnings: string[] = [];
      const driverFor = (exec: PodExec, nonce: string) =>
        createPvcCacheDriver({
          exec,
          repo: "did:plc:e2e/knot",
          claim: CLAIM,
          maxBytes: 100 * 1024 * 1024,
          nonce,
          now: Date.now,
          warn: (m) => warnings.push(m),
        });
      const first = await startRun(`pvc-a-${i}`, image);
      assert.deepEqual(await driverFor(first.exec, `a${i}`).restore(spec), { kind: "miss" });
      const built = await first.exec([
        "sh",
        "-c",
        "mkdir -p /work/deps/sub /root/.tool-cache && echo built > /work/deps/sub/out.txt && head -c 65536 /dev/urandom > /root/.tool-cache/blob && cat /work/deps/sub/out.txt /root/.tool-cache/blob | sha256sum",
      ]);
      assert.equal(built.exitCode, 0, built.stderr);
      const save = await driverFor(first.exec, `a${i}`).save(spec);
      assert.equal(save.status, "saved");
      const bytes = save.status === "saved" ? save.bytes : -1;
      await first.done();

      const second = await startRun(`pvc-b-${i}`, image);
      assert.equal(
        (await second.exec(["sh", "-c", "test -e /work/deps || echo fresh"])).stdout,
        "fresh\n",
        "the second run's pod starts without the files",
      );
      assert.deepEqual(await driverFor(second.exec, `b${i}`).restore(spec), {
        kind: "exact",
        restoredKey: spec.key,
        bytes,
      });
      const again = await second.exec(["sh", "-c", "cat /work/deps/sub/out.txt /root/.tool-cache/blob | sha256sum"]);
      assert.equal(again.stdout, built.stdout);
      assert.deepEqual(await driverFor(second.exec, `b${i}`).save(spec), { status: "exists", bytes: 0 });
      const listed = parsePvcList(await second.exec(buildPvcListCommand("did:plc:e2e/knot")), "did:plc:e2e/knot").find(
        (e) => e.key === spec.key,
      );
      assert.equal(listed?.compression, compression, "the entry's metadata");
      await second.done();
      if (image === DEBIAN) {
        // The image changed under the key: busybox has no zstd, so the entry is a warning and a miss, and stays.
        const third = await startRun(`pvc-c-${i}`, IMAGES[0]!);
        assert.deepEqual(await driverFor(third.exec, `c${i}`).restore(spec), { kind: "miss" });
        assert.match(warnings.join("\n"), /is zstd-compressed and the image has no zstd: not restored \(a miss\)/);
        assert.equal((await third.exec(["sh", "-c", "test -e /work/deps || echo fresh"])).stdout, "fresh\n");
        await third.done();
      }
    });
  }

  it("a run of repository A sees only its own directory of the claim: B's entries can be neither read nor overwritten from it", async () => {
    const [repoA, repoB] = ["did:plc:a/repo", "did:plc:b/repo"];
    const spec: CacheSpec = { key: "iso-v1", restoreKeys: ["iso-"], paths: ["/work/secret"] };
    const driverFor = (exec: PodExec, repo: string, nonce: string) =>
      createPvcCacheDriver({ exec, repo, claim: CLAIM, maxBytes: 100 * 1024 * 1024, nonce, now: Date.now });
    const sh = async (exec: PodExec, script: string) => (await exec(["sh", "-c", script])).stdout;
    const b = await startRun("pvc-iso-b", IMAGES[0]!, repoB);
    await sh(b.exec, "mkdir -p /work/secret && echo b-only > /work/secret/f");
    const saved = await driverFor(b.exec, repoB, "b1").save(spec);
    assert.equal(saved.status, "saved");
    assert.equal(await sh(b.exec, "ls -A /knotless-cache"), `${hashCacheName(repoB)}\n`);
    await b.done();

    const a = await startRun("pvc-iso-a", IMAGES[0]!, repoA);
    assert.equal(
      await sh(a.exec, "ls -A /knotless-cache"),
      `${hashCacheName(repoA)}\n`,
      "the pod sees only its repository's directory",
    );
    assert.deepEqual(await driverFor(a.exec, repoA, "a1").restore(spec), { kind: "miss" });
    assert.equal(
      await sh(a.exec, "grep -rl b-only /knotless-cache /work /root /tmp /outputs 2>/dev/null; true"),
      "",
      "B's entry is readable from A's pod",
    );
    // Writing where B's directory would be lands in the container's own filesystem, not on the claim.
    await sh(
      a.exec,
      `mkdir -p /knotless-cache/${hashCacheName(repoB)} && echo poison > /knotless-cache/${hashCacheName(repoB)}/${hashCacheName(spec.key)}.meta`,
    );
    await a.done();

    const b2 = await startRun("pvc-iso-b2", IMAGES[0]!, repoB);
    assert.equal(
      await sh(b2.exec, "rm -rf /work/secret; grep -rl poison /knotless-cache; true"),
      "",
      "A's write reached B's directory",
    );
    assert.deepEqual(await driverFor(b2.exec, repoB, "b2").restore(spec), {
      kind: "exact",
      restoredKey: spec.key,
      bytes: saved.bytes,
    });
    assert.equal(await sh(b2.exec, "cat /work/secret/f"), "b-only\n");
    await b2.done();
  });
});
