// The Cluster over kubectl: the same argument lists as before, typed results and errors, and exec ends told apart.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildDisruptionBudget } from "../../../src/manifests/disruption-budget.js";
import {
  AlreadyExistsError,
  CutStreamError,
  ForbiddenError,
  NotFoundError,
  TimeoutError,
  UnavailableError,
} from "../../../src/cluster/errors.js";
import { KubectlCluster, readExecEnd, withRequestTimeout } from "../../../src/cluster/kubectl/kubectl-cluster.js";
import { driveClock, mockClock } from "../../support/mock-clock.js";
import { ScriptedKubectl } from "../../support/scripted-kubectl.js";

const CONNECTION = { kubeconfig: "/k/config", context: "ci" };

describe("readExecEnd", () => {
  it("reads the pod's exit code from kubectl's own line", () => {
    const end = readExecEnd(3, null, "boom\ncommand terminated with exit code 3\n");
    assert.equal(end.kind, "exit");
    assert.equal(end.kind === "exit" && end.code, 3);
    assert.equal(end.how, "kubectl exit 3");
  });

  it("makes a kubectl that failed by itself a typed failure, never an exit code", () => {
    const refused = readExecEnd(
      1,
      null,
      'Error from server (Forbidden): pods "p" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "ci"\n',
    );
    assert.ok(refused.kind === "failed" && refused.error instanceof ForbiddenError);
    const notReady = readExecEnd(1, null, 'error: unable to upgrade connection: container not found ("run")\n');
    assert.ok(
      notReady.kind === "failed" &&
        notReady.error instanceof UnavailableError &&
        notReady.error.reason === "exec-not-ready",
    );
  });

  it("makes a dropped stream and a killed kubectl a cut stream", () => {
    const reset = readExecEnd(
      1,
      null,
      "error: error reading from error stream: read tcp 1.2.3.4:5->6.7.8.9:443: read: connection reset by peer\n",
    );
    assert.ok(reset.kind === "failed");
    const killed = readExecEnd(-1, "SIGTERM", "");
    assert.ok(killed.kind === "failed" && killed.error instanceof CutStreamError);
    assert.equal(killed.how, "kubectl ended by SIGTERM");
    const unnamed = readExecEnd(1, null, "error: something kubectl said\n");
    assert.ok(unnamed.kind === "failed" && unnamed.error instanceof CutStreamError);
  });
});

describe("KubectlCluster", () => {
  it("reads a Job with the same argument list as ever and types a missing one", async () => {
    const kubectl = new ScriptedKubectl().on("get job", [
      { stdout: '{"metadata":{"name":"j","namespace":"ci"}}' },
      { exitCode: 1, stderr: 'Error from server (NotFound): jobs.batch "j" not found\n' },
    ]);
    const cluster = new KubectlCluster(kubectl.kubectl, CONNECTION);
    assert.equal((await cluster.getJob("ci", "j")).metadata?.namespace, "ci");
    await assert.rejects(cluster.getJob("ci", "j"), NotFoundError);
    assert.deepEqual(kubectl.calls[0]?.args, [
      "--kubeconfig",
      "/k/config",
      "--context",
      "ci",
      "--namespace",
      "ci",
      "get",
      "job",
      "j",
      "--request-timeout",
      "30s",
      "-o",
      "json",
    ]);
  });

  it("counts a delete whose Job is gone as absent, not as an error", async () => {
    const kubectl = new ScriptedKubectl().on("delete --raw", {
      exitCode: 1,
      stderr: 'Error from server (NotFound): jobs.batch "w" not found\n',
    });
    const cluster = new KubectlCluster(kubectl.kubectl, CONNECTION);
    assert.equal(await cluster.deleteJob("ci", "w", { preconditions: { uid: "u", resourceVersion: "7" } }), "absent");
    assert.deepEqual(JSON.parse(kubectl.calls[0]?.stdin ?? ""), {
      kind: "DeleteOptions",
      apiVersion: "v1",
      propagationPolicy: "Background",
      preconditions: { uid: "u", resourceVersion: "7" },
    });
  });

  it("creates a PodDisruptionBudget from stdin, lists ours by label, deletes one and tells deleted from absent, with AlreadyExists typed", async () => {
    const kubectl = new ScriptedKubectl()
      .on("create", [
        { stdout: "poddisruptionbudget.policy/b\n" },
        {
          exitCode: 1,
          stderr:
            'Error from server (AlreadyExists): error when creating "STDIN": poddisruptionbudgets.policy "b" already exists\n',
        },
      ])
      .on("get poddisruptionbudgets.policy", {
        stdout: '{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"b"}}]}',
      })
      .on("delete poddisruptionbudget.policy", [
        { stdout: 'poddisruptionbudget.policy "b" deleted\n' },
        { stdout: "" },
      ]);
    const cluster = new KubectlCluster(kubectl.kubectl, CONNECTION);
    const budget = buildDisruptionBudget({ jobName: "b", runId: "b", runIdLabel: "b" });
    await cluster.createDisruptionBudget("ci", budget);
    await assert.rejects(cluster.createDisruptionBudget("ci", budget), AlreadyExistsError);
    assert.deepEqual(kubectl.calls[0]?.args, [
      "--kubeconfig",
      "/k/config",
      "--context",
      "ci",
      "--namespace",
      "ci",
      "create",
      "--request-timeout",
      "30s",
      "-f",
      "-",
      "-o",
      "name",
    ]);
    assert.deepEqual(JSON.parse(kubectl.calls[0]?.stdin ?? ""), budget);
    assert.deepEqual(
      (await cluster.listDisruptionBudgets("ci", "a=b")).map((b) => b.metadata?.name),
      ["b"],
    );
    assert.deepEqual(kubectl.callsTo("get")[0]?.command, [
      "get",
      "poddisruptionbudgets.policy",
      "--selector",
      "a=b",
      "--request-timeout",
      "30s",
      "-o",
      "json",
    ]);
    assert.equal(await cluster.deleteDisruptionBudget("ci", "b"), "deleted");
    assert.equal(await cluster.deleteDisruptionBudget("ci", "b"), "absent");
    assert.deepEqual(kubectl.callsTo("delete")[0]?.command, [
      "delete",
      "poddisruptionbudget.policy",
      "b",
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout",
      "30s",
    ]);
  });

  it("hands an exec the pod's status tags apart from stderr, with the exit code the pod gave", async () => {
    const kubectl = new ScriptedKubectl().on("exec", {
      stdout: "out",
      stderr: "knotless-outputs-entries 2\nwarn\ncommand terminated with exit code 4\n",
      exitCode: 4,
    });
    const cluster = new KubectlCluster(kubectl.kubectl, CONNECTION);
    const session = await cluster.exec({
      namespace: "ci",
      pod: "p",
      container: "run",
      command: ["sh", "-c", "x"],
      stdin: { kind: "none" },
    });
    session.stdout.resume();
    const end = await session.ended;
    assert.deepEqual(end, {
      kind: "exit",
      code: 4,
      tags: "knotless-outputs-entries 2\n",
      stderr: "warn\n",
      how: "kubectl exit 4",
    });
    assert.deepEqual(kubectl.calls[0]?.command, ["exec", "p", "-c", "run", "--", "sh", "-c", "x"]);
  });

  it("delivers a watch's events in order and resolves when kubectl ends it cleanly", async () => {
    const event = (type: string) => `${JSON.stringify({ type, object: { metadata: { name: "j" } } })}\n`;
    const kubectl = new ScriptedKubectl().on("get job", {
      stdout: [event("ADDED"), event("MODIFIED"), event("DELETED")],
    });
    const types: string[] = [];
    await new KubectlCluster(kubectl.kubectl, CONNECTION).watchJob("ci", "j", { onEvent: (e) => types.push(e.type) });
    assert.deepEqual(types, ["ADDED", "MODIFIED", "DELETED"]);
    assert.deepEqual(kubectl.calls[0]?.command, [
      "get",
      "job",
      "j",
      "--watch",
      "--output-watch-events",
      "-o",
      "json",
      "--request-timeout",
      "5m",
    ]);
  });

  it("ends a watch whose stream is not JSON with a cut stream, and one kubectl failed with its typed error", async () => {
    const garbage = new ScriptedKubectl().on("get job", { stdout: "{proxy error: <html>}\n", hang: true });
    await assert.rejects(
      new KubectlCluster(garbage.kubectl, CONNECTION).watchJob("ci", "j", { onEvent: () => {} }),
      CutStreamError,
    );
    const missing = new ScriptedKubectl().on("get job", {
      exitCode: 1,
      stderr: 'Error from server (NotFound): jobs.batch "j" not found\n',
    });
    await assert.rejects(
      new KubectlCluster(missing.kubectl, CONNECTION).watchJob("ci", "j", { onEvent: () => {} }),
      NotFoundError,
    );
  });

  it("gives a call the caller's bound as --request-timeout, and keeps the builders' 30 s without one", async () => {
    const kubectl = new ScriptedKubectl().on("get pods", { stdout: '{"items":[]}' });
    const cluster = new KubectlCluster(kubectl.kubectl, CONNECTION);
    await cluster.listPods("ci", "a=b", { timeoutMs: 1500 });
    await cluster.listPods("ci", "a=b", { timeoutMs: 5000 });
    await cluster.listPods("ci", "a=b");
    assert.deepEqual(
      kubectl.calls.map((call) => call.args[call.args.indexOf("--request-timeout") + 1]),
      ["1500ms", "5s", "30s"],
    );
  });

  it("kills a call that hangs past its bound and a grace, rejecting with TimeoutError", async () => {
    const kubectl = new ScriptedKubectl().on("get job", { hang: true });
    const cluster = new KubectlCluster(kubectl.kubectl, CONNECTION);
    const started = Date.now();
    const error = await cluster.getJob("ci", "j", { timeoutMs: 100 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof TimeoutError, String(error));
    assert.match(error.message, /^kubectl get job did not end within 100ms and 100ms more: killed$/);
    const waited = Date.now() - started;
    // The call hangs for ever without the bound; 20 s is what a busy machine cannot add to the 200 ms.
    assert.ok(waited >= 200 && waited < 20_000, `ended after ${waited} ms`);
    assert.deepEqual(kubectl.calls[0]?.killSignals.slice(0, 1), ["SIGTERM"]);
  });

  it("reports a credential apply that hangs as a timeout failure beside what it applied, and bounds a token request too", async (t) => {
    // On a mocked clock, the apply's output is read before its 50 ms bound passes, whatever the machine's load.
    mockClock(t);
    const apply = new ScriptedKubectl().on("apply", { stdout: "serviceaccount/ci-runner created\n", hang: true });
    const applied = await driveClock(
      t,
      new KubectlCluster(apply.kubectl, CONNECTION).applyCredentialObjects(
        "ci",
        { serviceAccount: {}, role: {}, roleBinding: {} },
        { timeoutMs: 50 },
      ),
    );
    assert.ok(applied.failure instanceof TimeoutError);
    assert.equal(applied.actions.get("serviceaccount/ci-runner"), "created");
    const token = new ScriptedKubectl().on("create --raw", { hang: true });
    await assert.rejects(
      driveClock(t, new KubectlCluster(token.kubectl, CONNECTION).requestToken("ci", "sa", {}, { timeoutMs: 50 })),
      TimeoutError,
    );
  });

  it("leaves a cancelled call to its caller: aborted is not timed out", async () => {
    const kubectl = new ScriptedKubectl().on("get pods", { hang: true });
    const controller = new AbortController();
    const pending = new KubectlCluster(kubectl.kubectl, CONNECTION).listPods("ci", "a=b", {
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    controller.abort();
    await assert.rejects(pending, (error: unknown) => !(error instanceof TimeoutError));
  });
});

describe("withRequestTimeout", () => {
  it("replaces the value of --request-timeout and leaves a call without one as it is", () => {
    assert.deepEqual(withRequestTimeout(["get", "pods", "--request-timeout", "30s", "-o", "json"], "5s"), [
      "get",
      "pods",
      "--request-timeout",
      "5s",
      "-o",
      "json",
    ]);
    assert.deepEqual(withRequestTimeout(["config", "view", "--raw"], "5s"), ["config", "view", "--raw"]);
  });
});
