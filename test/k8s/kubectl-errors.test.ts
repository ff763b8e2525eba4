import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InfraError } from "../../src/errors.js";
import { classifyKubectlFailure, findPermissionError, summarizeStderr } from "../../src/k8s/kubectl-errors.js";

describe("classifyKubectlFailure", () => {
  const cases: Array<[string, ReturnType<typeof classifyKubectlFailure>]> = [
    ['error: error loading config file "/k/config": yaml: line 3: did not find expected node content', "kubeconfig"],
    ['error: context "nope" does not exist', "kubeconfig"],
    ['error: unable to upgrade connection: container not found ("run")', "exec-not-ready"],
    ["Error from server: error dialing backend: dial tcp 10.0.0.1:10250: connect: connection refused", "exec-not-ready"],
    ['Error from server (AlreadyExists): error when creating "STDIN": jobs.batch "x" already exists', "already-exists"],
    ['Error from server (NotFound): pods "x" not found', "not-found"],
    ['Error from server (Forbidden): pods is forbidden: User "u" cannot list resource "pods"', "forbidden"],
    ['Error from server (Forbidden): pods "p" is forbidden: User "u" cannot get resource "pods/exec" in API group "" in the namespace "ci"', "forbidden"],
    ["error: You must be logged in to the server (Unauthorized)", "unauthorized"],
    ['error: error validating "STDIN": error validating data: failed to download openapi: the server has asked for the client to provide credentials; if you choose to ignore these errors, turn validation off with --validate=false', "unauthorized"],
    ["E1201 memcache.go:265] couldn't get current server API group list: the server has asked for the client to provide credentials\nerror: You must be logged in to the server (the server has asked for the client to provide credentials)", "unauthorized"],
    ["Error from server (InternalError): Internal error occurred: etcdserver: request timed out", "transient"],
    ["Error from server (ServiceUnavailable): the server is currently unable to handle the request", "transient"],
    ["The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?", "unreachable"],
    ["Unable to connect to the server: dial tcp 127.0.0.1:1: connect: connection refused", "unreachable"],
    ["error: error reading from error stream: read tcp 1.2.3.4:5->6.7.8.9:443: read: connection reset by peer", "unreachable"],
    ["error: something else", "other"],
  ];
  for (const [stderr, kind] of cases) {
    it(`classifies "${stderr.slice(0, 60)}…" as ${kind}`, () => assert.equal(classifyKubectlFailure(stderr), kind));
  }
});

describe("summarizeStderr", () => {
  it("returns the last meaningful line, skipping kubectl's exit code line", () => {
    assert.equal(summarizeStderr("warning: x\nerror: the real cause\ncommand terminated with exit code 1\n"), "error: the real cause");
    assert.equal(summarizeStderr(""), "(kubectl printed nothing)");
  });
});

describe("findPermissionError", () => {
  it("makes a 403 a forbidden InfraError naming what was being done, kubectl's words and the way out", () => {
    const error = findPermissionError('Error from server (Forbidden): jobs.batch is forbidden: User "u" cannot create resource "jobs" in API group "batch" in the namespace "ci"\n', "could not create Job j");
    assert.ok(error instanceof InfraError);
    assert.equal(error.reason, "forbidden");
    assert.match(error.message, /^could not create Job j: Error from server \(Forbidden\): jobs\.batch is forbidden: .* cannot create resource "jobs" in API group "batch" in the namespace "ci" \(the kubeconfig's identity lacks this permission; `knotless-runner-k8s credentials`/);
  });

  it("makes a 401 an unauthorized InfraError that says the credential must be renewed", () => {
    const error = findPermissionError("error: You must be logged in to the server (Unauthorized)\n", "upload");
    assert.equal(error?.reason, "unauthorized");
    assert.match(error?.message ?? "", /^upload: error: You must be logged in to the server \(Unauthorized\) \(the kubeconfig's credential is unknown, expired or revoked/);
  });

  it("leaves every other failure alone, an exec that is not ready yet included", () => {
    assert.equal(findPermissionError('error: unable to upgrade connection: container not found ("run")', "x"), undefined);
    assert.equal(findPermissionError("Error from server (NotFound): pods \"x\" not found", "x"), undefined);
  });
});
