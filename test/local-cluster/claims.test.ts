// PersistentVolumeClaims on the local cluster through the real kubectl 1.30 and 1.33: the API, RBAC, and a host directory per claim that outlives pods.

import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import { findContainerSkipReason, NAMESPACE, startTestCluster, waitFor, type TestCluster } from "./harness.js";
import { listKubectlBinaries, runKubectl } from "./kubectl-runner.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const KUBECTLS = listKubectlBinaries();
const NEWEST = KUBECTLS.at(-1)!;
const skipContainers = await findContainerSkipReason();

function buildClaim(
  name: string,
  spec: object = { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
): string {
  return JSON.stringify({ apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name }, spec });
}

/** A Job whose one container runs `script` with the claim mounted at /cache. */
function buildClaimJob(name: string, claim: string, script: string): string {
  return JSON.stringify({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          volumes: [{ name: "cache", persistentVolumeClaim: { claimName: claim } }],
          containers: [
            {
              name: "run",
              image: "docker.io/library/busybox:1.36",
              command: ["sh", "-c", script],
              volumeMounts: [{ name: "cache", mountPath: "/cache" }],
            },
          ],
        },
      },
    },
  });
}

describe("PersistentVolumeClaims through the real kubectl", () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster({ runtime: "none" });
  });
  after(async () => {
    await tc?.cluster.stop();
  });

  for (const kubectl of KUBECTLS) {
    describe(`with kubectl ${kubectl.version}`, () => {
      const name = `cache-${kubectl.version.replace(".", "-")}`;

      test("create -f stores a claim Bound at once, with the pvc-protection finalizer; get shows the claim's columns", async () => {
        const created = await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildClaim(name) });
        assert.equal(created.code, 0, created.stderr);
        assert.equal(created.stdout.trim(), `persistentvolumeclaim/${name} created`);
        const got = JSON.parse((await tc.kubectl(kubectl.path, ["get", "pvc", name, "-o", "json"])).stdout);
        assert.equal(got.status.phase, "Bound");
        assert.deepEqual(got.status.capacity, { storage: "1Gi" });
        assert.deepEqual(got.metadata.finalizers, ["kubernetes.io/pvc-protection"]);
        const table = await tc.kubectl(kubectl.path, ["get", "persistentvolumeclaims"]);
        assert.match(table.stdout, /^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+AGE\n/);
        assert.match(table.stdout, new RegExp(`\\n${name}\\s+Bound\\s+pvc-\\S+\\s+1Gi\\s+RWO\\s+local-dir\\s`));
      });

      test("a claim without access modes or a storage request is refused as Invalid", async () => {
        const r = await tc.kubectl(kubectl.path, ["create", "-f", "-"], {
          stdin: buildClaim(`${name}-bad`, { resources: {} }),
        });
        assert.notEqual(r.code, 0);
        assert.match(
          r.stderr,
          /PersistentVolumeClaim "cache-[\d-]+-bad" is invalid: \n\* spec\.accessModes: Required value: at least 1 access mode is required\n\* spec\.resources\[storage\]: Required value/,
        );
      });

      test("delete of a claim no pod uses removes it at once", async () => {
        const r = await tc.kubectl(kubectl.path, ["delete", "pvc", name]);
        assert.equal(r.code, 0, r.stderr);
        const gone = await tc.kubectl(kubectl.path, ["get", "pvc", name]);
        assert.match(gone.stderr, new RegExp(`persistentvolumeclaims "${name}" not found`));
      });
    });
  }
});

describe("PersistentVolumeClaims under RBAC", () => {
  const SA = "runner";
  let tc: TestCluster;
  let scoped: string;
  before(async () => {
    tc = await startTestCluster({ runtime: "none", tls: true });
    for (const args of [
      ["create", "serviceaccount", SA],
      ["create", "rolebinding", SA, `--role=${SA}`, `--serviceaccount=${NAMESPACE}:${SA}`],
    ]) {
      const r = await tc.kubectl(NEWEST.path, args);
      assert.equal(r.code, 0, r.stderr);
    }
    assert.equal((await tc.kubectl(NEWEST.path, ["create", "-f", "-"], { stdin: buildClaim("cache") })).code, 0);
    const token = (await tc.kubectl(NEWEST.path, ["create", "token", SA])).stdout.trim();
    const admin = parse(readFileSync(tc.cluster.kubeconfigPath, "utf8")) as {
      clusters: [{ cluster: Record<string, string> }];
    };
    scoped = join(makeTestTempDir("claims-kubeconfig-"), "runner");
    writeFileSync(
      scoped,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: admin.clusters[0].cluster }],
        users: [{ name: "u", user: { token } }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u", namespace: NAMESPACE } }],
        "current-context": "x",
      }),
      { mode: 0o600 },
    );
  });
  after(async () => {
    await tc?.cluster.stop();
  });

  for (const kubectl of KUBECTLS) {
    test(`kubectl ${kubectl.version}: a ServiceAccount reads claims only as its Role allows, and is refused in kube-apiserver's words otherwise`, async () => {
      await tc.kubectl(NEWEST.path, ["delete", "role", SA, "--ignore-not-found"]);
      const before = await runKubectl(kubectl.path, scoped, ["get", "pvc", "cache"]);
      assert.match(
        before.stderr,
        /persistentvolumeclaims "cache" is forbidden: User "system:serviceaccount:ci:runner" cannot get resource "persistentvolumeclaims" in API group "" in the namespace "ci"/,
      );
      const role = {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: SA },
        rules: [{ apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get"] }],
      };
      assert.equal((await tc.kubectl(NEWEST.path, ["apply", "-f", "-"], { stdin: JSON.stringify(role) })).code, 0);
      const got = await runKubectl(kubectl.path, scoped, ["get", "pvc", "cache", "-o", "name"]);
      assert.equal(got.stdout.trim(), "persistentvolumeclaim/cache", got.stderr);
      assert.equal(
        (await runKubectl(kubectl.path, scoped, ["auth", "can-i", "get", "persistentvolumeclaims"])).stdout.trim(),
        "yes",
      );
      const list = await runKubectl(kubectl.path, scoped, ["get", "pvc"]);
      assert.match(list.stderr, /cannot list resource "persistentvolumeclaims" in API group "" in the namespace "ci"/);
      const deleted = await runKubectl(kubectl.path, scoped, ["delete", "pvc", "cache"]);
      assert.match(
        deleted.stderr,
        /persistentvolumeclaims "cache" is forbidden: User "system:serviceaccount:ci:runner" cannot delete resource "persistentvolumeclaims"/,
      );
      assert.equal(tc.cluster.objects("persistentvolumeclaims", NAMESPACE).length, 1);
    });
  }
});

describe("PersistentVolumeClaims as host directories in podman pods", { skip: skipContainers }, () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster();
  });
  after(async () => {
    await tc?.cluster.stop();
  });

  const podOf = (job: string) =>
    tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.labels?.["job-name"] === job);
  const finished = (job: string) =>
    waitFor(
      `job ${job} to finish`,
      () => (["Succeeded", "Failed"].includes(podOf(job)?.status?.phase) ? podOf(job)!.status.phase : undefined),
      90_000,
    );

  test("what one pod writes to the claim, a later pod of another Job reads; the directory is made on first use", async () => {
    assert.equal((await tc.kubectl(NEWEST.path, ["create", "-f", "-"], { stdin: buildClaim("shared") })).code, 0);
    const dir = tc.cluster.claimDirectory(NAMESPACE, "shared")!;
    assert.equal(existsSync(dir), false, "not before a pod uses it");
    assert.equal(
      (
        await tc.kubectl(NEWEST.path, ["create", "-f", "-"], {
          stdin: buildClaimJob("writer", "shared", "echo from-writer > /cache/note"),
        })
      ).code,
      0,
    );
    assert.equal(await finished("writer"), "Succeeded");
    assert.equal(readFileSync(join(dir, "note"), "utf8"), "from-writer\n");
    assert.equal((await tc.kubectl(NEWEST.path, ["delete", "job", "writer", "--cascade=background"])).code, 0);
    assert.equal(
      (
        await tc.kubectl(NEWEST.path, ["create", "-f", "-"], {
          stdin: buildClaimJob("reader", "shared", "cat /cache/note"),
        })
      ).code,
      0,
    );
    assert.equal(await finished("reader"), "Succeeded");
    assert.equal((await tc.kubectl(NEWEST.path, ["logs", "job/reader"])).stdout, "from-writer\n");
  });

  test("a pod whose claim does not exist stays Pending with FailedScheduling, and starts once the claim is made", async () => {
    assert.equal(
      (
        await tc.kubectl(NEWEST.path, ["create", "-f", "-"], {
          stdin: buildClaimJob("waiter", "later", "echo started > /cache/x; sleep 30"),
        })
      ).code,
      0,
    );
    const event = await waitFor("a FailedScheduling event", () =>
      tc.cluster
        .objects("events", NAMESPACE)
        .find((e) => e.reason === "FailedScheduling" && String(e.involvedObject?.name).startsWith("waiter-")),
    );
    assert.match(event.message, /^0\/1 nodes are available: persistentvolumeclaim "later" not found\./);
    assert.equal(event.source?.component ?? event.reportingComponent, "default-scheduler");
    const pod = podOf("waiter")!;
    assert.equal(pod.status.phase, "Pending");
    assert.deepEqual(
      pod.status.conditions.find((c: any) => c.type === "PodScheduled"),
      {
        ...pod.status.conditions.find((c: any) => c.type === "PodScheduled"),
        status: "False",
        reason: "Unschedulable",
      },
    );
    const described = await tc.kubectl(NEWEST.path, [
      "get",
      "events",
      "--field-selector",
      `involvedObject.name=${pod.metadata.name}`,
      "-o",
      "json",
    ]);
    assert.match(described.stdout, /persistentvolumeclaim \\"later\\" not found/);
    assert.equal((await tc.kubectl(NEWEST.path, ["create", "-f", "-"], { stdin: buildClaim("later") })).code, 0);
    await waitFor(
      "the waiter's pod to run",
      () => (podOf("waiter")?.status?.phase === "Running" ? true : undefined),
      60_000,
    );
    const dir = tc.cluster.claimDirectory(NAMESPACE, "later")!;
    await waitFor("the pod's write to the claim", () => (existsSync(join(dir, "x")) ? true : undefined));
  });

  test("a claim deleted while a pod uses it stays Terminating until the pod is gone, then its directory goes", async () => {
    const dir = tc.cluster.claimDirectory(NAMESPACE, "later")!;
    const r = await tc.kubectl(NEWEST.path, ["delete", "pvc", "later", "--wait=false"]);
    assert.equal(r.code, 0, r.stderr);
    const table = await tc.kubectl(NEWEST.path, ["get", "pvc", "later"]);
    assert.match(table.stdout, /later\s+Terminating/);
    assert.ok(existsSync(join(dir, "x")), "the running pod keeps its data");
    assert.equal(
      (await tc.kubectl(NEWEST.path, ["delete", "job", "waiter", "--cascade=background", "--wait=false"])).code,
      0,
    );
    await waitFor(
      "the claim to go",
      () =>
        tc.cluster.objects("persistentvolumeclaims", NAMESPACE).some((c) => c.metadata.name === "later")
          ? undefined
          : true,
      60_000,
    );
    await waitFor("its directory to go", () => (existsSync(dir) ? undefined : true));
  });
});
