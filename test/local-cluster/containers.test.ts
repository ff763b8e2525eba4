// End-to-end: the real kubectl (1.30 and 1.33) creates Jobs, execs into their podman containers and deletes them.

import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import {
  buildJobManifest,
  findContainerSkipReason,
  NAMESPACE,
  startTestCluster,
  waitFor,
  waitForRunningPod,
  type TestCluster,
} from "./harness.js";
import { listKubectlBinaries } from "./kubectl-runner.js";

const skip = await findContainerSkipReason();

/** A stream of `size` pseudo-random bytes that hashes what it produces. */
function createHashedSource(size: number): { stream: Readable; digest: () => string } {
  const hash = createHash("sha256");
  const block = randomBytes(1024 * 1024);
  let sent = 0;
  let round = 0;
  const stream = new Readable({
    read() {
      if (sent >= size) return void this.push(null);
      const n = Math.min(block.length, size - sent);
      const chunk = Buffer.from(block.subarray(0, n));
      chunk.writeUInt32LE(round++, 0);
      hash.update(chunk);
      sent += n;
      this.push(chunk);
    },
  });
  return { stream, digest: () => hash.digest("hex") };
}

describe("local cluster with real containers", { skip }, () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster();
  });
  after(async () => {
    await tc?.cluster.stop();
    if (tc) assert.deepEqual(await tc.cluster.podmanPods(), [], "no podman pod is left after stop()");
    if (tc) assert.deepEqual(await tc.cluster.podmanVolumes(), [], "no podman volume is left after stop()");
  });

  for (const kubectl of listKubectlBinaries()) {
    describe(`with kubectl ${kubectl.version}`, () => {
      const job = `run-${kubectl.version.replace(".", "-")}`;
      let pod = "";

      test("create -f - prints the Job's name and its pod starts as a real container", async () => {
        const r = await tc.kubectl(kubectl.path, ["create", "--request-timeout", "30s", "-f", "-", "-o", "name"], {
          stdin: buildJobManifest({ name: job }),
        });
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout.trim(), `job.batch/${job}`);
        pod = await waitForRunningPod(tc, job);
        assert.match(pod, new RegExp(`^${job}-[a-z0-9]{5}$`));
        const containers = await tc.cluster.podmanContainers();
        assert.ok(
          containers.some((c) => c.includes(pod) && c.endsWith("-run")),
          `a podman container for ${pod}: ${containers.join(", ")}`,
        );
      });

      test("exec -i pipes stdin into the container and its stdout back", async () => {
        const r = await tc.kubectl(
          kubectl.path,
          ["exec", "-i", pod, "-c", "run", "--", "sh", "-c", "cat > /work/x; wc -c < /work/x"],
          { stdin: "hello world\n" },
        );
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout.trim(), "12");
      });

      test("exec exits with the command's exit code", async () => {
        const r = await tc.kubectl(kubectl.path, [
          "exec",
          pod,
          "-c",
          "run",
          "--",
          "sh",
          "-c",
          "echo out; echo err >&2; exit 7",
        ]);
        assert.equal(r.code, 7);
        assert.equal(r.stdout, "out\n");
        assert.match(r.stderr, /err\n/);
        assert.match(r.stderr, /command terminated with exit code 7/);
      });

      test("exec without -i runs in the working directory with the pod's environment", async () => {
        const r = await tc.kubectl(kubectl.path, [
          "exec",
          pod,
          "-c",
          "run",
          "--",
          "sh",
          "-c",
          "echo $CI; pwd; cat /work/x",
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "true\n/work\nhello world\n");
      });

      test("delete with background propagation removes the Job, the pod and its container", async () => {
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
        assert.match(r.stdout, new RegExp(`job.batch "${job}" deleted`));
        await waitFor("the pod to be gone", () =>
          tc.cluster.objects("pods", NAMESPACE).some((p) => p.metadata.name === pod) ? undefined : true,
        );
        const containers = await tc.cluster.podmanContainers();
        assert.ok(!containers.some((c) => c.includes(pod)), `container of ${pod} removed: ${containers.join(", ")}`);
        const again = await tc.kubectl(kubectl.path, [
          "delete",
          "job",
          job,
          "--cascade=background",
          "--ignore-not-found",
          "--wait=false",
        ]);
        assert.equal(again.code, 0, "deleting a Job already gone is not an error with --ignore-not-found");
      });
    });
  }

  describe("streams and Job lifecycle (newest kubectl)", () => {
    const kubectl = listKubectlBinaries().at(-1)!;
    let pod = "";
    before(async () => {
      const r = await tc.kubectl(kubectl.path, ["create", "-f", "-", "-o", "name"], {
        stdin: buildJobManifest({ name: "stream", labels: { app: "stream", tier: "ci" } }),
      });
      assert.equal(r.code, 0, r.stderr);
      pod = await waitForRunningPod(tc, "stream");
    });

    test("a 200 MB stream goes into the container through exec -i and comes back byte-identical", async () => {
      const source = createHashedSource(200 * 1024 * 1024);
      const back = createHash("sha256");
      let bytes = 0;
      const r = await tc.kubectl(
        kubectl.path,
        ["exec", "-i", pod, "-c", "run", "--", "sh", "-c", "cat > /work/big && cat /work/big && rm /work/big"],
        {
          stdin: source.stream,
          onStdout: (c) => {
            bytes += c.length;
            back.update(c);
          },
          timeoutMs: 120_000,
        },
      );
      assert.equal(r.code, 0, r.stderr);
      assert.equal(bytes, 200 * 1024 * 1024);
      assert.equal(back.digest("hex"), source.digest());
    });

    test("a 1 GiB stream through exec -i keeps the server's memory flat", async () => {
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 100);
      const source = createHashedSource(1024 * 1024 * 1024);
      const r = await tc.kubectl(kubectl.path, ["exec", "-i", pod, "-c", "run", "--", "sh", "-c", "wc -c"], {
        stdin: source.stream,
        timeoutMs: 180_000,
      });
      clearInterval(sampler);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), String(1024 * 1024 * 1024));
      assert.ok(peak - before < 200 * 1024 * 1024, `memory grew by ${Math.round((peak - before) / 1048576)} MiB`);
    });

    test("get pods with a label selector returns the Job's pod as a JSON list", async () => {
      const r = await tc.kubectl(kubectl.path, [
        "get",
        "pods",
        "--selector",
        "app=stream,tier in (ci,cd)",
        "--request-timeout",
        "30s",
        "-o",
        "json",
      ]);
      assert.equal(r.code, 0, r.stderr);
      const list = JSON.parse(r.stdout);
      assert.deepEqual(
        list.items.map((p: any) => p.metadata.name),
        [pod],
      );
      const p = list.items[0];
      assert.equal(p.status.phase, "Running");
      assert.equal(p.spec.nodeName, "local-node-1");
      assert.ok(p.status.podIP);
      assert.ok(p.status.conditions.some((c: any) => c.type === "Ready" && c.status === "True"));
      assert.ok(p.status.containerStatuses[0].state.running.startedAt);
      assert.equal(p.metadata.ownerReferences[0].kind, "Job");
      assert.equal(p.metadata.labels["batch.kubernetes.io/job-name"], "stream");
      const none = await tc.kubectl(kubectl.path, ["get", "pods", "--selector", "app=other", "-o", "json"]);
      assert.deepEqual(JSON.parse(none.stdout).items, []);
    });

    test("get events with a field selector lists the pod's Scheduled, Pulled, Created and Started events", async () => {
      const r = await tc.kubectl(kubectl.path, [
        "get",
        "events",
        "--field-selector",
        `involvedObject.kind=Pod,involvedObject.name=${pod}`,
        "-o",
        "json",
      ]);
      assert.equal(r.code, 0, r.stderr);
      const reasons = JSON.parse(r.stdout).items.map((e: any) => e.reason);
      for (const reason of ["Scheduled", "Pulled", "Created", "Started"])
        assert.ok(reasons.includes(reason), `${reason} in ${reasons.join(",")}`);
    });

    test("kubectl wait sees the pod Ready through a watch", async () => {
      const r = await tc.kubectl(kubectl.path, [
        "wait",
        "--for=condition=Ready",
        "pod",
        "--selector",
        "app=stream",
        "--timeout=20s",
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /condition met/);
    });

    test("a human get prints a table with the pod's status", async () => {
      const r = await tc.kubectl(kubectl.path, ["get", "pods", "--selector", "app=stream"]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE/);
      assert.match(r.stdout, new RegExp(`${pod}\\s+1/1\\s+Running`));
    });
  });

  describe("Job status follows the container", () => {
    const kubectl = listKubectlBinaries().at(-1)!;

    test("a Job whose container exits 0 completes and its pod Succeeds", async () => {
      await tc.kubectl(kubectl.path, ["create", "-f", "-"], {
        stdin: buildJobManifest({ name: "ok", command: ["sh", "-c", "sleep 1; exit 0"] }),
      });
      const job = await waitFor(
        "job ok complete",
        () =>
          tc.cluster.objects("jobs.batch", NAMESPACE).find((j) => j.metadata.name === "ok" && j.status?.completionTime),
        60_000,
      );
      assert.equal(job.status.succeeded, 1);
      assert.ok(job.status.conditions.some((c: any) => c.type === "Complete" && c.status === "True"));
      const pod = tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.labels?.["job-name"] === "ok")!;
      assert.equal(pod.status.phase, "Succeeded");
      assert.equal(pod.status.containerStatuses[0].state.terminated.exitCode, 0);
    });

    test("a Job whose container exits 3 fails with the real exit code on its pod", async () => {
      await tc.kubectl(kubectl.path, ["create", "-f", "-"], {
        stdin: buildJobManifest({ name: "bad", command: ["sh", "-c", "exit 3"] }),
      });
      const job = await waitFor(
        "job bad failed",
        () =>
          tc.cluster
            .objects("jobs.batch", NAMESPACE)
            .find(
              (j) => j.metadata.name === "bad" && (j.status?.conditions ?? []).some((c: any) => c.type === "Failed"),
            ),
        60_000,
      );
      assert.equal(job.status.conditions.find((c: any) => c.type === "Failed").reason, "BackoffLimitExceeded");
      const pod = tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.labels?.["job-name"] === "bad")!;
      assert.equal(pod.status.phase, "Failed");
      assert.equal(pod.status.containerStatuses[0].state.terminated.exitCode, 3);
    });

    test("a failed pod is replaced while backoffLimit allows, then the Job fails with every failure counted", async () => {
      await tc.kubectl(kubectl.path, ["create", "-f", "-"], {
        stdin: buildJobManifest({ name: "retry", command: ["sh", "-c", "exit 2"], backoffLimit: 1 }),
      });
      const job = await waitFor(
        "job retry failed",
        () =>
          tc.cluster
            .objects("jobs.batch", NAMESPACE)
            .find(
              (j) => j.metadata.name === "retry" && (j.status?.conditions ?? []).some((c: any) => c.type === "Failed"),
            ),
        60_000,
      );
      assert.equal(job.status.failed, 2);
      const pods = tc.cluster.objects("pods", NAMESPACE).filter((p) => p.metadata.labels?.["job-name"] === "retry");
      assert.equal(pods.length, 2);
      assert.ok(
        pods.every((p) => p.status.phase === "Failed" && p.status.containerStatuses[0].state.terminated.exitCode === 2),
      );
    });

    test("a Job deleted while its pod is still starting leaves no container behind", async () => {
      for (let i = 0; i < 3; i++) {
        await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: `hasty-${i}` }) });
        await new Promise((r) => setTimeout(r, 150 * i));
        await tc.kubectl(kubectl.path, ["delete", "job", `hasty-${i}`, "--cascade=background", "--wait=false"]);
      }
      await waitFor(
        "the hasty pods gone",
        () =>
          tc.cluster.objects("pods", NAMESPACE).some((p) => p.metadata.name.startsWith("hasty-")) ? undefined : true,
        60_000,
      );
      await new Promise((r) => setTimeout(r, 1000));
      assert.deepEqual(
        (await tc.cluster.podmanContainers()).filter((c) => c.includes("hasty-")),
        [],
      );
      assert.deepEqual(
        (await tc.cluster.podmanPods()).filter((c) => c.includes("hasty-")),
        [],
      );
    });

    test("activeDeadlineSeconds fails the Job with DeadlineExceeded and kills its container", async () => {
      await tc.kubectl(kubectl.path, ["create", "-f", "-"], {
        stdin: buildJobManifest({ name: "slow", activeDeadlineSeconds: 4 }),
      });
      const job = await waitFor(
        "job slow failed",
        () =>
          tc.cluster
            .objects("jobs.batch", NAMESPACE)
            .find(
              (j) => j.metadata.name === "slow" && (j.status?.conditions ?? []).some((c: any) => c.type === "Failed"),
            ),
        60_000,
      );
      const pod = tc.cluster
        .objects("events", NAMESPACE)
        .find((e) => e.reason === "SuccessfulCreate" && e.involvedObject.name === "slow")!
        .message.replace("Created pod: ", "");
      assert.equal(job.status.conditions.find((c: any) => c.type === "Failed").reason, "DeadlineExceeded");
      await waitFor("the slow pod's container to go", async () =>
        (await tc.cluster.podmanContainers()).some((c) => c.includes(pod)) ? undefined : true,
      );
    });

    test("ttlSecondsAfterFinished deletes a finished Job and its pod", async () => {
      await tc.kubectl(kubectl.path, ["create", "-f", "-"], {
        stdin: buildJobManifest({ name: "brief", command: ["true"], ttlSecondsAfterFinished: 1 }),
      });
      await waitFor(
        "job brief deleted",
        () => (tc.cluster.objects("jobs.batch", NAMESPACE).some((j) => j.metadata.name === "brief") ? undefined : true),
        60_000,
      );
      await waitFor("pod of brief deleted", () =>
        tc.cluster.objects("pods", NAMESPACE).some((p) => p.metadata.labels?.["job-name"] === "brief")
          ? undefined
          : true,
      );
    });
  });
});
