import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InfraError } from "../../../src/core/errors.js";
import {
  classifyKubectlFailure,
  findPermissionError,
  mapKubectlFailure,
  summarizeStderr,
} from "../../../src/cluster/kubectl/kubectl-errors.js";
import {
  AlreadyExistsError,
  ClusterError,
  ConfigError,
  ConflictError,
  ForbiddenError,
  InvalidError,
  NotFoundError,
  TimeoutError,
  UnauthorizedError,
  UnavailableError,
} from "../../../src/cluster/errors.js";

describe("classifyKubectlFailure", () => {
  const cases: Array<[string, ReturnType<typeof classifyKubectlFailure>]> = [
    ['error: error loading config file "/k/config": yaml: line 3: did not find expected node content', "kubeconfig"],
    ['error: context "nope" does not exist', "kubeconfig"],
    ['error: unable to upgrade connection: container not found ("run")', "exec-not-ready"],
    [
      "Error from server: error dialing backend: dial tcp 10.0.0.1:10250: connect: connection refused",
      "exec-not-ready",
    ],
    ['Error from server (AlreadyExists): error when creating "STDIN": jobs.batch "x" already exists', "already-exists"],
    ['Error from server (NotFound): pods "x" not found', "not-found"],
    ['Error from server (Forbidden): pods is forbidden: User "u" cannot list resource "pods"', "forbidden"],
    [
      'Error from server (Forbidden): pods "p" is forbidden: User "u" cannot get resource "pods/exec" in API group "" in the namespace "ci"',
      "forbidden",
    ],
    ["error: You must be logged in to the server (Unauthorized)", "unauthorized"],
    [
      'error: error validating "STDIN": error validating data: failed to download openapi: the server has asked for the client to provide credentials; if you choose to ignore these errors, turn validation off with --validate=false',
      "unauthorized",
    ],
    [
      "E1201 memcache.go:265] couldn't get current server API group list: the server has asked for the client to provide credentials\nerror: You must be logged in to the server (the server has asked for the client to provide credentials)",
      "unauthorized",
    ],
    ["Error from server (InternalError): Internal error occurred: etcdserver: request timed out", "transient"],
    ["Error from server (ServiceUnavailable): the server is currently unable to handle the request", "transient"],
    ["The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?", "unreachable"],
    ["Unable to connect to the server: dial tcp 127.0.0.1:1: connect: connection refused", "unreachable"],
    [
      "error: error reading from error stream: read tcp 1.2.3.4:5->6.7.8.9:443: read: connection reset by peer",
      "unreachable",
    ],
    ["error: something else", "other"],
  ];
  for (const [stderr, kind] of cases) {
    it(`classifies "${stderr.slice(0, 60)}…" as ${kind}`, () => assert.equal(classifyKubectlFailure(stderr), kind));
  }
});

describe("summarizeStderr", () => {
  it("returns the last meaningful line, skipping kubectl's exit code line", () => {
    assert.equal(
      summarizeStderr("warning: x\nerror: the real cause\ncommand terminated with exit code 1\n"),
      "error: the real cause",
    );
    assert.equal(summarizeStderr(""), "(kubectl printed nothing)");
  });
});

describe("findPermissionError", () => {
  it("makes a 403 a forbidden InfraError naming what was being done, kubectl's words and the way out", () => {
    const error = findPermissionError(
      'Error from server (Forbidden): jobs.batch is forbidden: User "u" cannot create resource "jobs" in API group "batch" in the namespace "ci"\n',
      "could not create Job j",
    );
    assert.ok(error instanceof InfraError);
    assert.equal(error.reason, "forbidden");
    assert.match(
      error.message,
      /^could not create Job j: Error from server \(Forbidden\): jobs\.batch is forbidden: .* cannot create resource "jobs" in API group "batch" in the namespace "ci" \(the kubeconfig's identity lacks this permission; `knotless-runner-k8s credentials`/,
    );
  });

  it("makes a 401 an unauthorized InfraError that says the credential must be renewed", () => {
    const error = findPermissionError("error: You must be logged in to the server (Unauthorized)\n", "upload");
    assert.equal(error?.reason, "unauthorized");
    assert.match(
      error?.message ?? "",
      /^upload: error: You must be logged in to the server \(Unauthorized\) \(the kubeconfig's credential is unknown, expired or revoked/,
    );
  });

  it("leaves every other failure alone, an exec that is not ready yet included", () => {
    assert.equal(
      findPermissionError('error: unable to upgrade connection: container not found ("run")', "x"),
      undefined,
    );
    assert.equal(findPermissionError('Error from server (NotFound): pods "x" not found', "x"), undefined);
  });
});

describe("mapKubectlFailure", () => {
  const samples: Array<[string, string, new (...args: never[]) => ClusterError]> = [
    ["a missing Job", 'Error from server (NotFound): jobs.batch "knotless-run-42" not found', NotFoundError],
    [
      "a Job of that name",
      'Error from server (AlreadyExists): error when creating "STDIN": jobs.batch "knotless-run-42" already exists',
      AlreadyExistsError,
    ],
    [
      "a precondition that no longer holds",
      'Error from server (Conflict): Operation cannot be fulfilled on jobs.batch "knotless-warm-0": the ResourceVersion in the precondition (123) does not match the ResourceVersion in record (124). The object might have been modified',
      ConflictError,
    ],
    [
      "a refused patch",
      'Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden: User "system:serviceaccount:ci:knotless-runner" cannot patch resource "jobs" in API group "batch" in the namespace "ci"',
      ForbiddenError,
    ],
    ["a rejected credential", "error: You must be logged in to the server (Unauthorized)", UnauthorizedError],
    [
      "a refused connection",
      "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?",
      UnavailableError,
    ],
    [
      "an etcd failure",
      "Error from server (InternalError): Internal error occurred: etcdserver: request timed out",
      UnavailableError,
    ],
    ["a node not ready for exec", 'error: unable to upgrade connection: container not found ("run")', UnavailableError],
    [
      "the server's timeout",
      "Error from server (Timeout): the server was unable to return a response in the time allotted, but may still be processing the request (get jobs.batch knotless-run-42)",
      TimeoutError,
    ],
    [
      "the client's timeout",
      "Unable to connect to the server: net/http: request canceled (Client.Timeout exceeded while awaiting headers)",
      TimeoutError,
    ],
    [
      "an invalid manifest",
      'The Job "knotless-run-42" is invalid: spec.template.spec.containers[0].image: Required value',
      InvalidError,
    ],
    [
      "a malformed request",
      'Error from server (BadRequest): error when creating "STDIN": Job in version "v1" cannot be handled as a Job: json: cannot unmarshal string into Go struct field',
      InvalidError,
    ],
    ["an unknown context", 'error: context "nope" does not exist', ConfigError],
  ];
  for (const [what, stderr, type] of samples) {
    it(`maps ${what} to ${type.name} with kubectl's line as its message`, () => {
      const error = mapKubectlFailure(`${stderr}\n`);
      assert.ok(error instanceof type, `${error.name} is not ${type.name}`);
      assert.equal(error.message, stderr);
    });
  }

  it("names the refused verb and resource of a 403, subresources and the core group included", () => {
    const patch = mapKubectlFailure(
      'Error from server (Forbidden): jobs.batch "j" is forbidden: User "u" cannot patch resource "jobs" in API group "batch" in the namespace "ci"',
    );
    assert.ok(patch instanceof ForbiddenError);
    assert.deepEqual([patch.verb, patch.resource], ["patch", "jobs.batch"]);
    const exec = mapKubectlFailure(
      'Error from server (Forbidden): pods "p" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "ci"',
    );
    assert.ok(exec instanceof ForbiddenError);
    assert.deepEqual([exec.verb, exec.resource], ["create", "pods/exec"]);
  });

  it("tells why a retryable failure happened: no answer, the server's trouble, or an exec not ready", () => {
    const reasons = [
      "Unable to connect to the server: dial tcp 127.0.0.1:1: connect: connection refused",
      "Error from server (ServiceUnavailable): the server is currently unable to handle the request",
      "Error from server: error dialing backend: dial tcp 10.0.0.1:10250: connect: connection refused",
    ].map((stderr) => (mapKubectlFailure(stderr) as UnavailableError).reason);
    assert.deepEqual(reasons, ["unreachable", "server", "exec-not-ready"]);
  });

  it("leaves what it cannot name a plain ClusterError", () => {
    const error = mapKubectlFailure("error: something else\n");
    assert.equal(error.constructor, ClusterError);
    assert.equal(error.code, "other");
  });
});
