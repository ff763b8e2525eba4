// The API transport's Cluster against the local cluster over TLS with a bearer token: Jobs, watches, exec, faults.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { startLocalCluster, type LocalCluster } from "../../../local-cluster/index.js";
import type { ApiCluster } from "../../../src/cluster/api/api-cluster.js";
import { openApiCluster } from "../../../src/cluster/api/open-api-cluster.js";
import type { WatchEvent } from "../../../src/cluster/cluster.js";
import { AlreadyExistsError, CutStreamError, NotFoundError } from "../../../src/cluster/errors.js";
import { buildDisruptionBudget } from "../../../src/manifests/disruption-budget.js";
import type { ExecEnd, ExecRequest } from "../../../src/cluster/exec.js";
import { MANAGED_SELECTOR } from "../../../src/manifests/labels.js";
import { assertNothingLeft, findPodmanSkipReason, waitUntil } from "../../support/local-cluster-e2e.js";

const skip = findPodmanSkipReason();
const NS = "ci";

function job(name: string): IJob {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s", "knotless.dev/run-id": name } },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s", "knotless.dev/run-id": name } },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          containers: [{ name: "main", image: "docker.io/library/busybox:1.36", command: ["sleep", "3600"] }],
        },
      },
    },
  };
}

/** `total` bytes of "a", 64 KiB a read. */
function streamOfBytes(total: number): Readable {
  let left = total;
  return new Readable({
    read() {
      if (left <= 0) return void this.push(null);
      left -= 65536;
      this.push(Buffer.alloc(65536, 0x61));
    },
  });
}

async function readAll(stream: Readable): Promise<string> {
  let text = "";
  for await (const chunk of stream) text += Buffer.isBuffer(chunk) ? chunk.toString() : String(chunk);
  return text;
}

describe("the API transport on the local cluster", { skip }, () => {
  let local: LocalCluster;
  let cluster: ApiCluster;
  let pod = "";
  const events: Array<WatchEvent<IJob>> = [];
  const watchStop = new AbortController();
  let watching: Promise<void>;

  const run = async (
    command: string[],
    stdin: ExecRequest["stdin"] = { kind: "none" },
  ): Promise<{ out: string; end: ExecEnd; session: Awaited<ReturnType<ApiCluster["exec"]>> }> => {
    const session = await cluster.exec({ namespace: undefined, pod, container: "main", command, stdin });
    const [out, end] = await Promise.all([readAll(session.stdout), session.ended]);
    return { out, end, session };
  };

  before(async () => {
    local = await startLocalCluster({ namespace: NS, tls: true, maxGraceSeconds: 1 });
    cluster = await openApiCluster({ files: [local.kubeconfigPath], explicit: true }, { env: {} });
  });
  after(async () => {
    watchStop.abort();
    await cluster?.close();
    await local?.stop();
  });

  it("creates a Job in the context's namespace, reads and lists it, and watches it", async () => {
    const created = await cluster.createJob(undefined, job("api-one"));
    assert.equal(created.metadata?.namespace, NS);
    assert.equal((await cluster.getJob(undefined, "api-one")).metadata?.name, "api-one");
    assert.deepEqual(
      (await cluster.listJobs(undefined, MANAGED_SELECTOR)).map((j) => j.metadata?.name),
      ["api-one"],
    );
    watching = cluster.watchJob(undefined, "api-one", { signal: watchStop.signal, onEvent: (e) => events.push(e) });
    await waitUntil("the watch's first event", () => events.length > 0, 10_000);
    assert.equal(events[0]!.type, "ADDED");
    await waitUntil(
      "the pod running",
      async () => {
        const pods = await cluster.listPods(undefined, "knotless.dev/run-id=api-one");
        pod = pods[0]?.metadata?.name ?? "";
        return pods[0]?.status?.phase === "Running";
      },
      60_000,
    );
  });

  it("shares one watch among two watchers of Jobs in the namespace", async () => {
    const second: Array<WatchEvent<IJob>> = [];
    const stop = new AbortController();
    const other = cluster.watchJob(undefined, "api-one", { signal: stop.signal, onEvent: (e) => second.push(e) });
    await waitUntil("the second watcher's first event", () => second.length > 0, 5000);
    assert.equal(cluster.watches.size, 1);
    await cluster.patchJobAnnotations(undefined, "api-one", { "knotless.dev/cancel-requested": "now" });
    await waitUntil(
      "the change at both",
      () =>
        second.some((e) => e.object.metadata?.annotations?.["knotless.dev/cancel-requested"] === "now") &&
        events.some((e) => e.object.metadata?.annotations?.["knotless.dev/cancel-requested"] === "now"),
      5000,
    );
    stop.abort();
    await other;
  });

  it("rejects a watch of a Job that does not exist with NotFoundError", async () => {
    await assert.rejects(cluster.watchJob(undefined, "no-such-job", { onEvent: () => undefined }), NotFoundError);
  });

  it("reads an exit code, stdout, and the status tags apart from the rest of stderr", async () => {
    const { out, end } = await run(["sh", "-c", "echo out; echo knotless-outputs-entries 3 >&2; echo err >&2; exit 3"]);
    assert.equal(out, "out\n");
    assert.equal(end.kind, "exit");
    assert.ok(end.kind === "exit" && end.code === 3);
    assert.equal(end.tags, "knotless-outputs-entries 3\n");
    assert.equal(end.stderr, "err\n");
  });

  it("half-closes a piped stdin and still reads the output after it", async () => {
    const session = await cluster.exec({
      namespace: undefined,
      pod,
      container: "main",
      command: ["sh", "-c", "cat; echo done"],
      stdin: { kind: "pipe" },
    });
    session.stdin!.end("hello\n");
    const [out, end] = await Promise.all([readAll(session.stdout), session.ended]);
    assert.equal(out, "hello\ndone\n");
    assert.deepEqual(end.kind === "exit" && end.code, 0);
  });

  it("streams 32 MiB of stdin from a Readable", async () => {
    const from = streamOfBytes(32 * 1024 * 1024);
    const { out, end } = await run(["wc", "-c"], { kind: "stream", from });
    assert.equal(out.trim(), String(32 * 1024 * 1024));
    assert.ok(end.kind === "exit" && end.code === 0);
  });

  it("ends as soon as a command that stops reading its stdin exits, while 64 MiB are still being sent, though the client waits for the server's close", async () => {
    const from = streamOfBytes(64 * 1024 * 1024);
    // The client waits for the server's close as long as ws does (30 s): the local cluster's relay must keep reading.
    const patient = await openApiCluster(
      { files: [local.kubeconfigPath], explicit: true },
      { env: {}, execCloseGraceMs: 60_000 },
    );
    const started = Date.now();
    // The exit code, not stdout: podman's exec drops the output of a command that exits with stdin unread, now and then.
    const session = await patient.exec({
      namespace: undefined,
      pod,
      container: "main",
      command: ["sh", "-c", "head -c 1 > /dev/null; exit 3"],
      stdin: { kind: "stream", from },
    });
    session.stdout.resume();
    const end = await session.ended;
    assert.ok(end.kind === "exit" && end.code === 3, end.how);
    assert.ok(Date.now() - started < 10_000, `ended after ${Date.now() - started} ms`);
    await patient.close();
  });

  it("sends all of a child's stdout even when the child exits before the socket opens", async () => {
    // Node drains the untouched stdout of a child that exited: the exec must take it at once, as the upload's tar.
    const child = spawn("sh", ["-c", "printf small-archive"], { stdio: ["ignore", "pipe", "ignore"] });
    const exited = once(child, "exit");
    const running = run(["cat"], { kind: "stream", from: child.stdout });
    await exited;
    const { out, end } = await running;
    assert.equal(out, "small-archive");
    assert.ok(end.kind === "exit" && end.code === 0);
  });

  it("ends a cut exec stream as a cut, loud or clean, never as a success", async () => {
    for (const mode of ["error", "clean"] as const) {
      local.setFaults({ execStreamCut: { afterBytes: 10, mode, count: 1 } });
      const { end } = await run(["sh", "-c", "echo 0123456789abcdefghij; sleep 1; echo more"]);
      assert.equal(end.kind, "failed", mode);
      assert.ok(
        end.kind === "failed" && end.error instanceof CutStreamError,
        `${mode}: ${end.kind === "failed" ? end.error.message : ""}`,
      );
    }
    local.clearFaults();
  });

  // The crash path's synchronous calls block this process, which serves the local cluster too: test/cluster/api/sync-request.test.ts.
  it("creates, lists and deletes a PodDisruptionBudget: AlreadyExists typed, a second delete absent, and one owned by the Job goes with it", async () => {
    const owned = (await cluster.getJob(undefined, "api-one")).metadata?.uid;
    const budget = buildDisruptionBudget({
      jobName: "api-one",
      jobUid: owned!,
      runId: "api-one",
      runIdLabel: "api-one",
    });
    await cluster.createDisruptionBudget(
      undefined,
      buildDisruptionBudget({ jobName: "api-loose", runId: "api-loose", runIdLabel: "api-loose" }),
    );
    await cluster.createDisruptionBudget(undefined, budget);
    await assert.rejects(cluster.createDisruptionBudget(undefined, budget), AlreadyExistsError);
    assert.deepEqual(
      (await cluster.listDisruptionBudgets(undefined, MANAGED_SELECTOR)).map((b) => b.metadata?.name).sort(),
      ["api-loose", "api-one"],
    );
    assert.deepEqual(
      (await cluster.listDisruptionBudgets(undefined, "knotless.dev/run-id=api-one")).map((b) => b.metadata?.namespace),
      [NS],
    );
    assert.equal(await cluster.deleteDisruptionBudget(undefined, "api-loose"), "deleted");
    assert.equal(await cluster.deleteDisruptionBudget(undefined, "api-loose"), "absent");
    // api-one's budget stays for the Job's delete below: the nothing-left check there proves it went with its Job.
  });

  it("deletes a Job, reports it absent after, and the watch sees it go", async () => {
    assert.equal(await cluster.deleteJob(undefined, "api-one"), "deleted");
    await waitUntil("DELETED at the watch", () => events.some((e) => e.type === "DELETED"), 20_000);
    assert.equal(await cluster.deleteJob(undefined, "api-one"), "absent");
    watchStop.abort();
    await watching;
    await assertNothingLeft(local);
  });

  it("names the kubeconfig file, context and namespace in the delete command it prints for operators", () => {
    assert.equal(
      cluster.formatDeleteJobCommand(undefined, "j"),
      `kubectl --kubeconfig ${local.kubeconfigPath} --context knotless-local --namespace ci delete job j --cascade=background --ignore-not-found`,
    );
  });

  it("says the server version", async () => {
    const version = await cluster.getServerVersion();
    assert.equal(version.major, 1);
  });
});
