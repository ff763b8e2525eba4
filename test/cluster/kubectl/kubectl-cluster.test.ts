// The Cluster over kubectl: the same argument lists as before, typed results and errors, and exec ends told apart.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CutStreamError, ForbiddenError, NotFoundError, UnavailableError } from "../../../src/cluster/errors.js";
import { KubectlCluster, readExecEnd, splitStatusTags } from "../../../src/cluster/kubectl/kubectl-cluster.js";
import { ScriptedKubectl } from "../../support/scripted-kubectl.js";

const CONNECTION = { kubeconfig: "/k/config", context: "ci" };

describe("splitStatusTags", () => {
  it("takes the pod's status-tag lines apart from kubectl's and the command's own", () => {
    const stderr = "tar: a warning\nknotless-outputs-entries 3\ncommand terminated with exit code 2\nknotless-cache-saved tar=0";
    assert.deepEqual(splitStatusTags(stderr), { tags: "knotless-outputs-entries 3\nknotless-cache-saved tar=0\n", rest: "tar: a warning\ncommand terminated with exit code 2\n" });
  });
});

describe("readExecEnd", () => {
  it("reads the pod's exit code from kubectl's own line", () => {
    const end = readExecEnd(3, null, "boom\ncommand terminated with exit code 3\n");
    assert.equal(end.kind, "exit");
    assert.equal(end.kind === "exit" && end.code, 3);
    assert.equal(end.how, "kubectl exit 3");
  });

  it("makes a kubectl that failed by itself a typed failure, never an exit code", () => {
    const refused = readExecEnd(1, null, 'Error from server (Forbidden): pods "p" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "ci"\n');
    assert.ok(refused.kind === "failed" && refused.error instanceof ForbiddenError);
    const notReady = readExecEnd(1, null, 'error: unable to upgrade connection: container not found ("run")\n');
    assert.ok(notReady.kind === "failed" && notReady.error instanceof UnavailableError && notReady.error.reason === "exec-not-ready");
  });

  it("makes a dropped stream and a killed kubectl a cut stream", () => {
    const reset = readExecEnd(1, null, "error: error reading from error stream: read tcp 1.2.3.4:5->6.7.8.9:443: read: connection reset by peer\n");
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
    const kubectl = new ScriptedKubectl().on("get job", [{ stdout: '{"metadata":{"name":"j","namespace":"ci"}}' }, { exitCode: 1, stderr: 'Error from server (NotFound): jobs.batch "j" not found\n' }]);
    const cluster = new KubectlCluster(kubectl.kubectl, CONNECTION);
    assert.equal((await cluster.getJob("ci", "j")).metadata?.namespace, "ci");
    await assert.rejects(cluster.getJob("ci", "j"), NotFoundError);
    assert.deepEqual(kubectl.calls[0]?.args, ["--kubeconfig", "/k/config", "--context", "ci", "--namespace", "ci", "get", "job", "j", "--request-timeout", "30s", "-o", "json"]);
  });

  it("counts a delete whose Job is gone as absent, not as an error", async () => {
    const kubectl = new ScriptedKubectl().on("delete --raw", { exitCode: 1, stderr: 'Error from server (NotFound): jobs.batch "w" not found\n' });
    const cluster = new KubectlCluster(kubectl.kubectl, CONNECTION);
    assert.equal(await cluster.deleteJob("ci", "w", { preconditions: { uid: "u", resourceVersion: "7" } }), "absent");
    assert.deepEqual(JSON.parse(kubectl.calls[0]?.stdin ?? ""), { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background", preconditions: { uid: "u", resourceVersion: "7" } });
  });

  it("hands an exec the pod's status tags apart from stderr, with the exit code the pod gave", async () => {
    const kubectl = new ScriptedKubectl().on("exec", { stdout: "out", stderr: "knotless-outputs-entries 2\nwarn\ncommand terminated with exit code 4\n", exitCode: 4 });
    const cluster = new KubectlCluster(kubectl.kubectl, CONNECTION);
    const session = await cluster.exec({ namespace: "ci", pod: "p", container: "run", command: ["sh", "-c", "x"], stdin: { kind: "none" } });
    session.stdout.resume();
    const end = await session.ended;
    assert.deepEqual(end, { kind: "exit", code: 4, tags: "knotless-outputs-entries 2\n", stderr: "warn\n", how: "kubectl exit 4" });
    assert.deepEqual(kubectl.calls[0]?.command, ["exec", "p", "-c", "run", "--", "sh", "-c", "x"]);
  });

  it("delivers a watch's events in order and resolves when kubectl ends it cleanly", async () => {
    const event = (type: string) => `${JSON.stringify({ type, object: { metadata: { name: "j" } } })}\n`;
    const kubectl = new ScriptedKubectl().on("get job", { stdout: [event("ADDED"), event("MODIFIED"), event("DELETED")] });
    const types: string[] = [];
    await new KubectlCluster(kubectl.kubectl, CONNECTION).watchJob("ci", "j", { onEvent: (e) => types.push(e.type) });
    assert.deepEqual(types, ["ADDED", "MODIFIED", "DELETED"]);
    assert.deepEqual(kubectl.calls[0]?.command, ["get", "job", "j", "--watch", "--output-watch-events", "-o", "json", "--request-timeout", "5m"]);
  });

  it("ends a watch whose stream is not JSON with a cut stream, and one kubectl failed with its typed error", async () => {
    const garbage = new ScriptedKubectl().on("get job", { stdout: "{proxy error: <html>}\n", hang: true });
    await assert.rejects(new KubectlCluster(garbage.kubectl, CONNECTION).watchJob("ci", "j", { onEvent: () => {} }), CutStreamError);
    const missing = new ScriptedKubectl().on("get job", { exitCode: 1, stderr: 'Error from server (NotFound): jobs.batch "j" not found\n' });
    await assert.rejects(new KubectlCluster(missing.kubectl, CONNECTION).watchJob("ci", "j", { onEvent: () => {} }), NotFoundError);
  });
});
