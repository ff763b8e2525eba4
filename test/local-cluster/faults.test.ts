// Each injected fault, observed through the real kubectl against real podman containers.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  buildJobManifest,
  describeJobPods,
  findContainerSkipReason,
  NAMESPACE,
  sleep,
  startTestCluster,
  waitFor,
  waitForRunningPod,
  type TestCluster,
} from "./harness.js";
import { listKubectlBinaries } from "./kubectl-runner.js";
import type { KubeObject } from "../../local-cluster/index.js";

const skip = await findContainerSkipReason();
const kubectl = listKubectlBinaries().at(-1)!;
const oldest = listKubectlBinaries()[0]!;

describe("fault injection", { skip }, () => {
  let tc: TestCluster;
  let pod = "";
  const exec = (args: string[], binary = kubectl.path) => tc.kubectl(binary, ["exec", pod, "-c", "run", "--", ...args]);
  const podmanHas = async (name: string) => (await tc.cluster.podmanContainers()).some((c) => c.includes(name));

  before(async () => {
    tc = await startTestCluster();
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: "target" }) });
    pod = await waitForRunningPod(tc, "target");
  });
  after(async () => {
    await tc?.cluster.stop();
    if (tc) assert.deepEqual(await tc.cluster.podmanPods(), []);
    if (tc) assert.deepEqual(await tc.cluster.podmanVolumes(), []);
  });

  test("latency delays the matching requests only", async () => {
    tc.cluster.setFaults({ latency: { ms: 800, match: "^GET /apis/batch/v1/namespaces/ci/jobs" } });
    const started = Date.now();
    const r = await tc.kubectl(kubectl.path, ["get", "jobs", "-o", "name"]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Date.now() - started >= 800, "the list waited for the latency");
    assert.ok(
      tc.cluster
        .faultFirings()
        .every((f) => f.fault === "latency" && f.subject.startsWith("GET /apis/batch/v1/namespaces/ci/jobs")),
    );
    tc.cluster.clearFaults();
  });

  test("latency drops a request whose client went away during it: the delete is not applied", async () => {
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], {
      stdin: buildJobManifest({ name: "kept", command: ["true"] }),
    });
    tc.cluster.setFaults({ latency: { ms: 600, match: "^DELETE /apis/batch/v1/namespaces/ci/jobs/kept" } });
    const controller = new AbortController();
    const deleting = fetch(`${tc.cluster.url}/apis/batch/v1/namespaces/${NAMESPACE}/jobs/kept`, {
      method: "DELETE",
      signal: controller.signal,
    }).catch(() => "aborted");
    await waitFor(
      "the delete at the server",
      () => (tc.cluster.faultFirings().some((f) => f.subject.startsWith("DELETE")) ? true : undefined),
      5_000,
    );
    controller.abort();
    assert.equal(await deleting, "aborted");
    await sleep(1000);
    const kept = (): KubeObject | undefined =>
      tc.cluster.objects("jobs.batch", NAMESPACE).find((j) => j.metadata.name === "kept");
    assert.ok(kept() && !kept()!.metadata.deletionTimestamp, "the abandoned delete was applied");
    const waited = await fetch(`${tc.cluster.url}/apis/batch/v1/namespaces/${NAMESPACE}/jobs/kept`, {
      method: "DELETE",
    });
    assert.equal(waited.status, 200, "a delete whose client waits it out is applied");
    assert.ok(!kept() || kept()!.metadata.deletionTimestamp);
    tc.cluster.clearFaults();
  });

  test("the first N creates are answered 500 InternalError and nothing is stored", async () => {
    tc.cluster.setFaults({ createError: { count: 2, match: "^jobs " } });
    for (let i = 0; i < 2; i++) {
      const r = await tc.kubectl(kubectl.path, ["create", "--request-timeout", "30s", "-f", "-", "-o", "name"], {
        stdin: buildJobManifest({ name: "flaky", command: ["true"] }),
      });
      assert.equal(r.code, 1);
      assert.match(r.stderr, /Error from server \(InternalError\)/);
      assert.ok(!tc.cluster.objects("jobs.batch", NAMESPACE).some((j) => j.metadata.name === "flaky"));
    }
    const r = await tc.kubectl(kubectl.path, ["create", "-f", "-", "-o", "name"], {
      stdin: buildJobManifest({ name: "flaky", command: ["true"] }),
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "job.batch/flaky");
    tc.cluster.clearFaults();
  });

  test("schedulingDelay keeps the pod Pending with FailedScheduling events, then it runs", async () => {
    tc.cluster.setFaults({ schedulingDelay: { seconds: 3, match: "^ci/late-" } });
    const created = Date.now();
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: "late" }) });
    await sleep(1000);
    const pending = tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.labels?.["job-name"] === "late")!;
    assert.equal(pending.status.phase, "Pending");
    assert.equal(pending.spec.nodeName, undefined);
    assert.ok(
      pending.status.conditions.some(
        (c: any) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable",
      ),
    );
    const ev = await tc.kubectl(kubectl.path, [
      "get",
      "events",
      "--field-selector",
      `involvedObject.kind=Pod,involvedObject.name=${pending.metadata.name}`,
      "-o",
      "json",
    ]);
    assert.ok(JSON.parse(ev.stdout).items.some((e: any) => e.reason === "FailedScheduling"));
    await waitForRunningPod(tc, "late");
    assert.ok(Date.now() - created >= 3000);
    await tc.kubectl(kubectl.path, ["delete", "job", "late", "--cascade=background", "--wait=false"]);
    tc.cluster.clearFaults();
  });

  test("imagePullFailure shows ErrImagePull then ImagePullBackOff and never starts a container", async () => {
    tc.cluster.setFaults({ imagePullFailure: { match: "^ci/nopull-" } });
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: "nopull" }) });
    const reasons = new Set<string>();
    await waitFor("ImagePullBackOff", () => {
      const p = tc.cluster.objects("pods", NAMESPACE).find((x) => x.metadata.labels?.["job-name"] === "nopull");
      const reason = p?.status?.containerStatuses?.[0]?.state?.waiting?.reason;
      if (reason) reasons.add(reason);
      return reason === "ImagePullBackOff" ? true : undefined;
    });
    assert.ok(
      reasons.has("ErrImagePull") ||
        tc.cluster.objects("events", NAMESPACE).some((e) => e.message === "Error: ErrImagePull"),
    );
    const p = tc.cluster.objects("pods", NAMESPACE).find((x) => x.metadata.labels?.["job-name"] === "nopull")!;
    assert.equal(p.status.phase, "Pending");
    const ev = await tc.kubectl(kubectl.path, [
      "get",
      "events",
      "--field-selector",
      `involvedObject.kind=Pod,involvedObject.name=${p.metadata.name}`,
      "-o",
      "json",
    ]);
    const messages = JSON.parse(ev.stdout).items.map((e: any) => `${e.reason}: ${e.message}`);
    assert.ok(
      messages.some((m: string) => m.startsWith("Failed: Failed to pull image")),
      messages.join("\n"),
    );
    assert.ok(!(await podmanHas(p.metadata.name)), "no container was made");
    await tc.kubectl(kubectl.path, ["delete", "job", "nopull", "--cascade=background", "--wait=false"]);
    tc.cluster.clearFaults();
  });

  test("an image missing locally fails the same way without any fault", async () => {
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], {
      stdin: buildJobManifest({ name: "missing", image: "registry.invalid/none:1.0" }),
    });
    await waitFor("ImagePullBackOff", () =>
      tc.cluster
        .objects("pods", NAMESPACE)
        .find(
          (x) =>
            x.metadata.labels?.["job-name"] === "missing" &&
            x.status?.containerStatuses?.[0]?.state?.waiting?.reason === "ImagePullBackOff",
        ),
    );
    await tc.kubectl(kubectl.path, ["delete", "job", "missing", "--cascade=background", "--wait=false"]);
  });

  for (const binary of [oldest, kubectl]) {
    test(`the first N exec upgrades are refused and kubectl ${binary.version} reports it, then exec works`, async () => {
      tc.cluster.setFaults({ execUpgradeRefused: { count: 1 } });
      const refused = await exec(["echo", "hi"], binary.path);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /unable to upgrade connection: error dialing backend/);
      const ok = await exec(["echo", "hi"], binary.path);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout, "hi\n");
      tc.cluster.clearFaults();
    });
  }

  test("an exec stream cut with an error after N seconds fails kubectl while the process keeps running", async () => {
    tc.cluster.setFaults({ execStreamCut: { afterSeconds: 1, mode: "error", count: 1 } });
    const started = Date.now();
    const r = await exec(["sh", "-c", "echo started; sleep 6; echo finished > /work/cut-error"]);
    assert.notEqual(r.code, 0, "kubectl fails when the stream breaks");
    assert.ok(Date.now() - started < 5900, "kubectl returned before the process ended");
    await waitFor(
      "the process to finish in the container",
      async () =>
        (await tc.cluster.podExec(NAMESPACE, pod, ["cat", "/work/cut-error"])).stdout === "finished\n"
          ? true
          : undefined,
      20_000,
    );
    tc.cluster.clearFaults();
  });

  test("an exec stream cut cleanly makes kubectl exit 0 while the process keeps running and later exits 5", async () => {
    tc.cluster.setFaults({ execStreamCut: { afterBytes: 8, mode: "clean", count: 1 } });
    const r = await exec(["sh", "-c", "echo started; sleep 3; echo finished > /work/cut-clean; exit 5"]);
    assert.equal(
      r.code,
      0,
      "kubectl 1.30-1.33 report success on a clean close without a status: the false success a runner must guard against",
    );
    assert.equal(r.stdout, "started\n");
    assert.equal(
      (await tc.cluster.podExec(NAMESPACE, pod, ["cat", "/work/cut-clean"])).code,
      1,
      "the process is still running",
    );
    await waitFor(
      "the process to finish in the container",
      async () =>
        (await tc.cluster.podExec(NAMESPACE, pod, ["cat", "/work/cut-clean"])).stdout === "finished\n"
          ? true
          : undefined,
      20_000,
    );
    tc.cluster.clearFaults();
  });

  test("an exec stream cut after N bytes delivers exactly N bytes", async () => {
    tc.cluster.setFaults({ execStreamCut: { afterBytes: 1000, mode: "error", count: 1 } });
    const r = await exec(["sh", "-c", "head -c 5000 /dev/zero | tr '\\\\0' x"]);
    assert.notEqual(r.code, 0);
    assert.equal(r.stdout.length, 1000);
    tc.cluster.clearFaults();
  });

  test("podEviction evicts the pod mid-run: container killed, pod Failed with reason Evicted, Job Failed", async () => {
    tc.cluster.setFaults({ podEviction: { afterSeconds: 1, match: "^ci/evictee-" } });
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: "evictee" }) });
    const name = await waitForRunningPod(tc, "evictee");
    const running = tc.kubectl(kubectl.path, ["exec", name, "-c", "run", "--", "sleep", "30"]);
    const evicted = await waitFor("the pod evicted", () =>
      tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.name === name && p.status?.reason === "Evicted"),
    );
    assert.equal(evicted.status.phase, "Failed");
    const r = await running;
    assert.notEqual(r.code, 0, "the exec in the evicted pod ends with a failure");
    assert.ok(!(await podmanHas(name)), "the container is gone");
    await waitFor("the Job failed", () =>
      tc.cluster
        .objects("jobs.batch", NAMESPACE)
        .find(
          (j) =>
            j.metadata.name === "evictee" &&
            j.status?.failed === 1 &&
            j.status.conditions?.some((c: any) => c.type === "Failed"),
        ),
    );
    tc.cluster.clearFaults();
  });

  test("podEviction in delete mode removes the pod object and its container mid-run", async () => {
    tc.cluster.setFaults({ podEviction: { afterSeconds: 1, mode: "delete", match: "^ci/deletee-" } });
    await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: "deletee" }) });
    const name = await waitForRunningPod(tc, "deletee");
    await waitFor("the pod deleted", () =>
      tc.cluster.objects("pods", NAMESPACE).some((p) => p.metadata.name === name) ? undefined : true,
    );
    assert.ok(!(await podmanHas(name)));
    const r = await tc.kubectl(kubectl.path, ["get", "pods", "--selector", "job-name=deletee", "-o", "json"]);
    assert.deepEqual(JSON.parse(r.stdout).items, [], describeJobPods(tc, "deletee"));
    tc.cluster.clearFaults();
  });

  test("serverDown refuses connections for a while, keeps the admin port, then serves again", async () => {
    tc.cluster.setFaults({ serverDown: { forSeconds: 2 } });
    await sleep(100);
    const down = await tc.kubectl(kubectl.path, ["get", "jobs", "--request-timeout", "5s"]);
    assert.equal(down.code, 1);
    assert.match(down.stderr, /connection to the server .* was refused/);
    const admin = await fetch(`${tc.cluster.adminUrl}/_faults`);
    assert.equal(admin.status, 200);
    await sleep(2200);
    const up = await tc.kubectl(kubectl.path, ["get", "jobs", "-o", "name"]);
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /job.batch\/target/);
  });

  test("faults can be changed through PUT /_faults and invalid ones are refused with the reason", async () => {
    const bad = await fetch(`${tc.cluster.adminUrl}/_faults`, {
      method: "PUT",
      body: JSON.stringify({ latency: { ms: -1 } }),
    });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { message: string }).message, /latency\.ms/);
    const ok = await fetch(`${tc.cluster.adminUrl}/_faults`, {
      method: "PUT",
      body: JSON.stringify({ createError: { count: 1 } }),
    });
    assert.equal(ok.status, 200);
    assert.deepEqual(tc.cluster.faults(), { createError: { count: 1 } });
    const r = await tc.kubectl(kubectl.path, ["create", "-f", "-"], {
      stdin: buildJobManifest({ name: "viaadmin", command: ["true"] }),
    });
    assert.match(r.stderr, /InternalError/);
    tc.cluster.clearFaults();
  });
});
