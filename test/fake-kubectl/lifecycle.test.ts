// Tests of the fake kubectl's create, get and delete against a fake cluster, and of its call recording and argument errors.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { createFakeCluster } from "../fixtures/fake-kubectl/harness.js";
import { NAMESPACE, buildGlobalArgs, buildJobManifest, createJob } from "./job-fixture.js";

describe("create, get and delete", { concurrency: true }, () => {
  test("create then get pods shows one Running pod with the template labels", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-a", "r-a");
    assert.match(pod, /^run-a-[a-z0-9]{5}$/);

    const got = await cluster.kubectl([
      ...buildGlobalArgs(cluster),
      "get",
      "pods",
      "--selector",
      "knotless.dev/run-id=r-a",
      "--request-timeout",
      "30s",
      "-o",
      "json",
    ]);
    assert.equal(got.exitCode, 0);
    const list = JSON.parse(got.stdout);
    assert.equal(list.kind, "PodList");
    assert.equal(list.items.length, 1);
    const item = list.items[0];
    assert.equal(item.metadata.name, pod);
    assert.equal(item.metadata.namespace, NAMESPACE);
    assert.equal(item.metadata.labels["knotless.dev/run-id"], "r-a");
    assert.equal(item.metadata.labels.app, "knotless-run");
    assert.equal(item.metadata.labels["job-name"], "run-a");
    assert.equal(item.metadata.labels["batch.kubernetes.io/job-name"], "run-a");
    assert.equal(item.spec.nodeName, "fake-node-1");
    assert.equal(item.spec.containers[0].name, "run");
    assert.equal(item.status.phase, "Running");
    assert.deepEqual(item.status.conditions.find((c: { type: string }) => c.type === "Ready").status, "True");
    assert.equal(item.status.containerStatuses[0].ready, true);
    assert.ok(item.status.containerStatuses[0].state.running.startedAt);

    const other = await cluster.kubectl([
      ...buildGlobalArgs(cluster),
      "get",
      "pods",
      "--selector",
      "knotless.dev/run-id=nope",
      "-o",
      "json",
    ]);
    assert.deepEqual(JSON.parse(other.stdout).items, []);
    const elsewhere = await cluster.kubectl([
      "-n",
      "other",
      "get",
      "pods",
      "--selector",
      "knotless.dev/run-id=r-a",
      "-o",
      "json",
    ]);
    assert.deepEqual(JSON.parse(elsewhere.stdout).items, []);
  });

  test("get job shows the stored manifest with one active pod, and get jobs filters by label", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    await createJob(cluster, "run-b", "r-b");
    const job = await cluster.kubectl([
      ...buildGlobalArgs(cluster),
      "get",
      "job",
      "run-b",
      "--request-timeout",
      "30s",
      "-o",
      "json",
    ]);
    assert.equal(job.exitCode, 0);
    const object = JSON.parse(job.stdout);
    assert.equal(object.kind, "Job");
    assert.equal(object.spec.backoffLimit, 0);
    assert.equal(object.status.active, 1);
    const jobs = JSON.parse(
      (
        await cluster.kubectl([
          ...buildGlobalArgs(cluster),
          "get",
          "jobs",
          "--selector",
          "knotless.dev/run-id=r-b",
          "-o",
          "json",
        ])
      ).stdout,
    );
    assert.deepEqual(
      jobs.items.map((j: { metadata: { name: string } }) => j.metadata.name),
      ["run-b"],
    );
    const missing = await cluster.kubectl([...buildGlobalArgs(cluster), "get", "job", "nope", "-o", "json"]);
    assert.equal(missing.exitCode, 1);
    assert.equal(missing.stderr, 'Error from server (NotFound): jobs.batch "nope" not found\n');
  });

  test("create fails with AlreadyExists when the Job name is taken, creating no second pod", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    await createJob(cluster, "run-c");
    const again = await cluster.kubectl([...buildGlobalArgs(cluster), "create", "-f", "-", "-o", "name"], {
      stdin: buildJobManifest("run-c", "x"),
    });
    assert.equal(again.exitCode, 1);
    assert.equal(again.stderr, 'Error from server (AlreadyExists): jobs.batch "run-c" already exists\n');
    assert.equal((await cluster.pods()).length, 1);
  });

  test("delete removes the Job and its pod with every process, and a second delete with --ignore-not-found prints nothing", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-d");
    const args = [
      ...buildGlobalArgs(cluster),
      "delete",
      "job",
      "run-d",
      "--cascade=background",
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout",
      "30s",
    ];
    const deleted = await cluster.kubectl(args);
    assert.equal(deleted.exitCode, 0);
    assert.equal(deleted.stdout, 'job.batch "run-d" deleted\n');
    assert.deepEqual(await cluster.pods(), []);
    assert.deepEqual(await cluster.jobs(), []);
    assert.deepEqual(await cluster.processesInPod(pod), []);
    assert.equal(spawnSync("pgrep", ["-f", `hostname ${pod} `]).status, 1, "no bwrap of the pod is left");

    const again = await cluster.kubectl(args);
    assert.deepEqual([again.exitCode, again.stdout, again.stderr], [0, "", ""]);
    const strict = await cluster.kubectl([...buildGlobalArgs(cluster), "delete", "job", "run-d"]);
    assert.equal(strict.exitCode, 1);
    assert.equal(strict.stderr, 'Error from server (NotFound): jobs.batch "run-d" not found\n');
  });

  test("an unknown flag or command fails like kubectl with exit 1", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const flag = await cluster.kubectl(["--namespace", "ci", "get", "pods", "--show-labels"]);
    assert.deepEqual([flag.exitCode, flag.stderr], [1, "error: unknown flag: --show-labels\n"]);
    const command = await cluster.kubectl(["--namespace", "ci", "apply", "-f", "-"]);
    assert.deepEqual([command.exitCode, command.stderr], [1, 'error: unknown command "apply" for "kubectl"\n']);
    const wrongVerb = await cluster.kubectl(["--namespace", "ci", "get", "-i", "pods"]);
    assert.deepEqual([wrongVerb.exitCode, wrongVerb.stderr], [1, "error: unknown shorthand flag: 'i' in -i\n"]);
  });

  test("every call is recorded with its argv and stdin bytes, failed calls included", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const manifest = buildJobManifest("run-e", "r-e");
    await createJob(cluster, "run-e", "r-e");
    await cluster.kubectl(["--namespace", "ci", "get", "pods", "--bogus"]);
    const calls = await cluster.calls();
    assert.equal(calls.length, 2);
    assert.deepEqual(calls[0]?.argv, [
      ...buildGlobalArgs(cluster),
      "create",
      "--request-timeout",
      "30s",
      "-f",
      "-",
      "-o",
      "name",
    ]);
    assert.equal(calls[0]?.stdinBytes, Buffer.byteLength(manifest));
    assert.equal(calls[0]?.exitCode, 0);
    assert.deepEqual(calls[1]?.argv, ["--namespace", "ci", "get", "pods", "--bogus"]);
    assert.equal(calls[1]?.exitCode, 1);
    assert.ok(calls.every((c) => c.complete && typeof c.time === "string"));
  });

  test("the fake kubectl refuses to run without FAKE_KUBECTL_STATE", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const env = { ...cluster.env };
    delete (env as Record<string, string | undefined>).FAKE_KUBECTL_STATE;
    const result = spawnSync(cluster.kubectlPath, ["get", "pods"], { env, encoding: "utf8" });
    assert.equal(result.status, 1);
    assert.match(result.stderr, /FAKE_KUBECTL_STATE is not set/);
  });
});
