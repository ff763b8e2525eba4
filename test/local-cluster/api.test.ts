// The API surface through the real kubectl (1.30 and 1.33) with no container runtime: discovery, CRUD, selectors, Status errors, watch.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { buildJobManifest, NAMESPACE, startTestCluster, waitFor, type TestCluster } from "./harness.js";
import { listKubectlBinaries, runKubectl } from "./kubectl-runner.js";

describe("local cluster API without containers", () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster({ runtime: "none" });
  });
  after(async () => {
    await tc?.cluster.stop();
  });

  test("discovery lists core, batch, policy, rbac, authentication and authorization group-versions", async () => {
    const apis = (await (await fetch(`${tc.cluster.url}/apis`)).json()) as { groups: { name: string }[] };
    assert.deepEqual(apis.groups.map((g) => g.name).sort(), [
      "authentication.k8s.io",
      "authorization.k8s.io",
      "batch",
      "coordination.k8s.io",
      "policy",
      "rbac.authorization.k8s.io",
    ]);
    const policy = (await (await fetch(`${tc.cluster.url}/apis/policy/v1`)).json()) as {
      resources: { name: string }[];
    };
    assert.ok(policy.resources.some((r) => r.name === "poddisruptionbudgets"));
    const core = (await (await fetch(`${tc.cluster.url}/api/v1`)).json()) as { resources: { name: string }[] };
    assert.ok(core.resources.some((r) => r.name === "pods/exec"));
    const version = (await (await fetch(`${tc.cluster.url}/version`)).json()) as { major: string };
    assert.equal(version.major, "1");
  });

  for (const kubectl of listKubectlBinaries()) {
    describe(`with kubectl ${kubectl.version}`, () => {
      const job = `api-${kubectl.version.replace(".", "-")}`;

      test("create validates server-side and returns the created Job", async () => {
        const r = await tc.kubectl(kubectl.path, ["create", "--request-timeout", "30s", "-f", "-", "-o", "json"], {
          stdin: buildJobManifest({ name: job }),
        });
        assert.equal(r.code, 0, r.stderr);
        const created = JSON.parse(r.stdout);
        assert.equal(created.metadata.name, job);
        assert.match(created.metadata.uid, /^[0-9a-f-]{36}$/);
        assert.ok(Number(created.metadata.resourceVersion) > 0);
        assert.ok(created.metadata.creationTimestamp);
        assert.equal(created.spec.template.metadata.labels["job-name"], job);
      });

      test("creating the same Job again fails with AlreadyExists", async () => {
        const r = await tc.kubectl(kubectl.path, ["create", "-f", "-", "-o", "name"], {
          stdin: buildJobManifest({ name: job }),
        });
        assert.equal(r.code, 1);
        assert.match(r.stderr, new RegExp(`Error from server \\(AlreadyExists\\).*jobs.batch "${job}" already exists`));
      });

      test("a Job with restartPolicy Always is rejected as Invalid", async () => {
        const manifest = JSON.parse(buildJobManifest({ name: `${job}-invalid` }));
        manifest.spec.template.spec.restartPolicy = "Always";
        const r = await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: JSON.stringify(manifest) });
        assert.equal(r.code, 1);
        assert.match(
          r.stderr,
          /The Job ".*-invalid" is invalid: spec\.template\.spec\.restartPolicy: Unsupported value: "Always"/,
        );
      });

      test("getting a Job that does not exist fails with NotFound", async () => {
        const r = await tc.kubectl(kubectl.path, ["get", "job", "nope", "-o", "json"]);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /Error from server \(NotFound\): jobs.batch "nope" not found/);
      });

      test("get jobs with a selector returns only matching Jobs", async () => {
        const r = await tc.kubectl(kubectl.path, [
          "get",
          "jobs",
          "--selector",
          `knotless.dev/run-id=${job}`,
          "-o",
          "json",
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(
          JSON.parse(r.stdout).items.map((j: any) => j.metadata.name),
          [job],
        );
        const none = await tc.kubectl(kubectl.path, [
          "get",
          "jobs",
          "--selector",
          "knotless.dev/run-id!=" + job + ",knotless.dev/run-id",
          "-o",
          "json",
        ]);
        assert.ok(!JSON.parse(none.stdout).items.some((j: any) => j.metadata.name === job));
      });

      test("the Job's pod stays Pending with a FailedScheduling event when there is no runtime", async () => {
        const pod = await waitFor("the pod", () =>
          tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.labels?.["job-name"] === job),
        );
        const r = await tc.kubectl(kubectl.path, [
          "get",
          "events",
          "--field-selector",
          `involvedObject.kind=Pod,involvedObject.name=${pod.metadata.name}`,
          "-o",
          "json",
        ]);
        assert.equal(r.code, 0, r.stderr);
        const events = JSON.parse(r.stdout).items;
        assert.ok(events.some((e: any) => e.reason === "FailedScheduling" && e.type === "Warning"));
        const pods = await tc.kubectl(kubectl.path, ["get", "pods", "--selector", `job-name=${job}`, "-o", "json"]);
        assert.equal(JSON.parse(pods.stdout).items[0].status.phase, "Pending");
      });

      test("delete with background propagation removes the Job and its pod", async () => {
        const r = await tc.kubectl(kubectl.path, [
          "delete",
          "job",
          job,
          "--cascade=background",
          "--ignore-not-found",
          "--wait=false",
          "--request-timeout",
          "30s",
        ]);
        assert.equal(r.code, 0, r.stderr);
        await waitFor("pods gone", () =>
          tc.cluster.objects("pods", NAMESPACE).some((p) => p.metadata.labels?.["job-name"] === job) ? undefined : true,
        );
        const gone = await tc.kubectl(kubectl.path, ["delete", "job", job, "--ignore-not-found", "--wait=false"]);
        assert.equal(gone.code, 0);
      });
    });
  }

  test("kubectl wait on a Job condition follows a watch until the condition is set", async () => {
    const kubectl = listKubectlBinaries().at(-1)!;
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: "waited" }) });
    const waiting = tc.kubectl(kubectl.path, ["wait", "--for=condition=Complete", "job/waited", "--timeout=20s"]);
    await new Promise((r) => setTimeout(r, 1500));
    const job = tc.cluster.objects("jobs.batch", NAMESPACE).find((j) => j.metadata.name === "waited")!;
    const res = await fetch(`${tc.cluster.url}/apis/batch/v1/namespaces/${NAMESPACE}/jobs/waited/status`, {
      method: "PATCH",
      headers: { "Content-Type": "application/merge-patch+json" },
      body: JSON.stringify({ status: { conditions: [{ type: "Complete", status: "True" }] } }),
    });
    assert.equal(res.status, 200);
    const r = await waiting;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /job.batch\/waited condition met/);
    assert.ok(job);
  });

  test("a raw DELETE of a Job without a propagation policy orphans its pod, as the real API does", async () => {
    const kubectl = listKubectlBinaries().at(-1)!;
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: "orphaner" }) });
    const pod = await waitFor("the pod", () =>
      tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.labels?.["job-name"] === "orphaner"),
    );
    const res = await fetch(`${tc.cluster.url}/apis/batch/v1/namespaces/${NAMESPACE}/jobs/orphaner`, {
      method: "DELETE",
    });
    assert.equal(res.status, 200);
    const left = tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.name === pod.metadata.name);
    assert.ok(left, "the pod is still there");
    assert.equal(left.metadata.ownerReferences, undefined);
    const r = await tc.kubectl(kubectl.path, ["delete", "pod", pod.metadata.name, "--wait=false"]);
    assert.equal(r.code, 0, r.stderr);
  });

  test("a PodDisruptionBudget owned by a Job is created and listed through kubectl and goes with its Job", async () => {
    const kubectl = listKubectlBinaries().at(-1)!;
    const created = await tc.kubectl(kubectl.path, ["create", "-f", "-", "-o", "json"], {
      stdin: buildJobManifest({ name: "guarded" }),
    });
    assert.equal(created.code, 0, created.stderr);
    const uid = JSON.parse(created.stdout).metadata.uid as string;
    const budget = {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: {
        name: "guarded",
        labels: { guard: "yes" },
        ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "guarded", uid }],
      },
      spec: { maxUnavailable: 0, selector: { matchLabels: { "job-name": "guarded" } } },
    };
    const r = await tc.kubectl(kubectl.path, ["create", "-f", "-", "-o", "name"], { stdin: JSON.stringify(budget) });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "poddisruptionbudget.policy/guarded");
    const listed = await tc.kubectl(kubectl.path, [
      "get",
      "poddisruptionbudgets.policy",
      "--selector",
      "guard=yes",
      "-o",
      "json",
    ]);
    assert.deepEqual(
      JSON.parse(listed.stdout).items.map((b: { metadata: { name: string } }) => b.metadata.name),
      ["guarded"],
    );
    const again = await tc.kubectl(kubectl.path, ["create", "-f", "-", "-o", "name"], {
      stdin: JSON.stringify(budget),
    });
    assert.match(again.stderr, /AlreadyExists/);
    const deleted = await tc.kubectl(kubectl.path, [
      "delete",
      "job",
      "guarded",
      "--cascade=background",
      "--wait=false",
    ]);
    assert.equal(deleted.code, 0, deleted.stderr);
    await waitFor(
      "the budget gone with its Job",
      () =>
        !tc.cluster.objects("poddisruptionbudgets.policy", NAMESPACE).some((b) => b.metadata.name === "guarded") ||
        undefined,
    );
  });

  test("an eviction of a running pod its budget allows no disruption of is refused with 429; without the budget the pod goes", async () => {
    const kubectl = listKubectlBinaries().at(-1)!;
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "evictee", labels: { guard: "evictee" } },
      spec: { containers: [{ name: "main", image: "busybox:1.36" }] },
    };
    assert.equal((await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: JSON.stringify(pod) })).code, 0);
    const current = JSON.parse((await tc.kubectl(kubectl.path, ["get", "pod", "evictee", "-o", "json"])).stdout);
    const running = await fetch(`${tc.cluster.url}/api/v1/namespaces/${NAMESPACE}/pods/evictee/status`, {
      method: "PUT",
      body: JSON.stringify({ ...current, status: { phase: "Running" } }),
      headers: { "Content-Type": "application/json" },
    });
    assert.equal(running.status, 200);
    const budget = {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "evictee" },
      spec: { maxUnavailable: 0, selector: { matchLabels: { guard: "evictee" } } },
    };
    assert.equal((await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: JSON.stringify(budget) })).code, 0);
    const eviction = JSON.stringify({
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name: "evictee", namespace: NAMESPACE },
    });
    const evict = () =>
      fetch(`${tc.cluster.url}/api/v1/namespaces/${NAMESPACE}/pods/evictee/eviction`, {
        method: "POST",
        body: eviction,
        headers: { "Content-Type": "application/json" },
      });
    const refused = await evict();
    assert.equal(refused.status, 429);
    const status = (await refused.json()) as {
      reason: string;
      message: string;
      details: { causes: { reason: string; message: string }[] };
    };
    assert.equal(status.reason, "TooManyRequests");
    assert.equal(status.message, "Cannot evict pod as it would violate the pod's disruption budget.");
    assert.deepEqual(status.details.causes, [
      { reason: "DisruptionBudget", message: "The disruption budget evictee needs 1 healthy pods and has 1 currently" },
    ]);
    assert.ok(
      tc.cluster.objects("pods", NAMESPACE).some((p) => p.metadata.name === "evictee"),
      "the pod stays",
    );
    assert.equal((await tc.kubectl(kubectl.path, ["delete", "poddisruptionbudget", "evictee"])).code, 0);
    assert.equal((await evict()).status, 201);
    assert.ok(!tc.cluster.objects("pods", NAMESPACE).some((p) => p.metadata.name === "evictee"), "evicted");
  });

  test("delete with foreground propagation removes the Job once its pods are gone", async () => {
    const kubectl = listKubectlBinaries().at(-1)!;
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: "fore" }) });
    await waitFor("the pod", () =>
      tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.labels?.["job-name"] === "fore"),
    );
    const r = await tc.kubectl(kubectl.path, ["delete", "job", "fore", "--cascade=foreground", "--timeout=20s"]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!tc.cluster.objects("jobs.batch", NAMESPACE).some((j) => j.metadata.name === "fore"));
    assert.ok(!tc.cluster.objects("pods", NAMESPACE).some((p) => p.metadata.labels?.["job-name"] === "fore"));
  });

  test("a replace with a stale resourceVersion fails with Conflict", async () => {
    const kubectl = listKubectlBinaries().at(-1)!;
    const r = await tc.kubectl(kubectl.path, ["get", "job", "waited", "-o", "json"]);
    const job = JSON.parse(r.stdout);
    job.metadata.resourceVersion = "1";
    const res = await fetch(`${tc.cluster.url}/apis/batch/v1/namespaces/${NAMESPACE}/jobs/waited`, {
      method: "PUT",
      body: JSON.stringify(job),
      headers: { "Content-Type": "application/json" },
    });
    assert.equal(res.status, 409);
    const status = (await res.json()) as { reason: string; kind: string };
    assert.equal(status.kind, "Status");
    assert.equal(status.reason, "Conflict");
  });

  test("a protobuf body of a kind without a field table is refused with 415 and a message naming the limitation", async () => {
    const res = await fetch(`${tc.cluster.url}/api/v1/namespaces/${NAMESPACE}/secrets`, {
      method: "POST",
      body: Buffer.from([0x6b, 0x38, 0x73, 0x00]),
      headers: { "Content-Type": "application/vnd.kubernetes.protobuf" },
    });
    assert.equal(res.status, 415);
    assert.match(
      ((await res.json()) as { message: string }).message,
      /decodes protobuf request bodies of reviews, TokenRequest, RBAC objects and ServiceAccounts only/,
    );
  });

  test("a human get of jobs prints a table with the Job's status", async () => {
    const kubectl = listKubectlBinaries().at(-1)!;
    const r = await tc.kubectl(kubectl.path, ["get", "jobs"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE/);
    assert.match(r.stdout, /waited\s+Complete/);
  });

  test("auth can-i answers yes for the runner's verbs", async () => {
    const kubectl = listKubectlBinaries()[0]!;
    const r = await runKubectl(kubectl.path, tc.cluster.kubeconfigPath, [
      "auth",
      "can-i",
      "create",
      "pods/exec",
      "--namespace",
      NAMESPACE,
    ]);
    assert.equal(r.stdout.trim(), "yes", r.stderr);
  });
});
