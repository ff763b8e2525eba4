// Tests of creating the run's Job: the call, the namespace read back, bounded retries, and whose Job a same-named one is.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { CancelledError, InputError } from "../../../src/core/errors.js";
import type { ExecutorContext } from "../../../src/executor/kubernetes/context.js";
import { createJob, isOurCreatedJob, type JobOwnership } from "../../../src/executor/kubernetes/create-job.js";
import { buildRunManifest } from "../../../src/executor/kubernetes/kubernetes-executor.js";
import type { RecordedCall, ScriptedReply } from "../../support/scripted-kubectl.js";
import { INTERNAL_ERROR, UNREACHABLE, failure } from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";
import { AlreadyExistsError, InvalidError, UnavailableError } from "../../../src/cluster/errors.js";
import { ScriptedCluster } from "../../support/scripted-cluster.js";
import { isInfraError } from "../../support/infra-error.js";

const TOKEN = "0123456789abcdef01234567";
const ALREADY_EXISTS =
  'Error from server (AlreadyExists): error when creating "STDIN": jobs.batch "knotless-run-42" already exists';

/** What kubectl prints for a created Job: the manifest it read, in `namespace`. */
function created(namespace = "ci"): (call: RecordedCall) => ScriptedReply {
  return (call) => {
    const job = JSON.parse(call.stdin ?? "") as IJob;
    return { stdout: JSON.stringify({ ...job, metadata: { ...job.metadata, namespace, uid: "u-1" } }) };
  };
}

/** `get job -o json` of a Job with this create token. */
function jobWithToken(token: string, namespace = "ci"): ScriptedReply {
  return {
    stdout: JSON.stringify({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "knotless-run-42", namespace, annotations: { "knotless.dev/create-token": token } },
    }),
  };
}

function setUp(options: Parameters<typeof buildTestContext>[0] = {}) {
  const test = buildTestContext(options);
  const ownership: JobOwnership[] = [];
  const manifest = buildRunManifest(test.ctx, TOKEN);
  return { ...test, manifest, ownership, onOwnership: (o: JobOwnership) => void ownership.push(o) };
}

describe("createJob", { concurrency: true }, () => {
  it("creates the Job from the manifest on stdin and resolves with its namespace", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership } = setUp();
    kubectl.on("create", created("ci"));
    assert.equal(await createJob(ctx, manifest, onOwnership), "ci");
    assert.equal(kubectl.calls.length, 1);
    assert.deepEqual(kubectl.calls[0]?.args, [
      "--kubeconfig",
      "/tmp/kubeconfig",
      "--context",
      "ctx",
      "--namespace",
      "ci",
      "create",
      "--request-timeout",
      "30s",
      "-f",
      "-",
      "-o",
      "json",
    ]);
    assert.deepEqual(JSON.parse(kubectl.calls[0]?.stdin ?? ""), manifest);
    assert.deepEqual(ownership, ["unknown", "ours"]);
  });

  it("says the Job may exist before the create call is spawned, so a cancel mid-create still tears it down", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership } = setUp();
    let ownershipDuringCreate: JobOwnership[] = [];
    kubectl.on("create", (call) => ((ownershipDuringCreate = [...ownership]), created("ci")(call)));
    await createJob(ctx, manifest, onOwnership);
    assert.deepEqual(ownershipDuringCreate, ["unknown"]);
  });

  it("leaves the namespace to kubectl when it is the context's, and resolves with the one kubectl reports", async () => {
    const { ctx, kubectl, ownership, onOwnership } = setUp({
      settings: { target: { kubeconfig: "/tmp/kubeconfig", namespaceFromContext: true } },
    });
    const manifest = buildRunManifest(ctx, TOKEN);
    kubectl.on("create", created("team-a"));
    assert.equal(await createJob(ctx, manifest, onOwnership), "team-a");
    assert.deepEqual(kubectl.calls[0]?.args, [
      "--kubeconfig",
      "/tmp/kubeconfig",
      "create",
      "--request-timeout",
      "30s",
      "-f",
      "-",
      "-o",
      "json",
    ]);
    assert.equal(JSON.parse(kubectl.calls[0]?.stdin ?? "").metadata.namespace, undefined);
    assert.deepEqual(ownership, ["unknown", "ours"]);
  });

  it("fails with create-failed, still owning the Job, when kubectl's answer names no namespace and none is pinned", async () => {
    const { ctx, kubectl, ownership, onOwnership } = setUp({ settings: { target: { namespaceFromContext: true } } });
    kubectl.on("create", { stdout: "job.batch/knotless-run-42 created\n" });
    await assert.rejects(
      createJob(ctx, buildRunManifest(ctx, TOKEN), onOwnership),
      isInfraError("create-failed", /answer names no namespace: job\.batch\/knotless-run-42 created/),
    );
    assert.equal(ownership.at(-1), "ours");
  });

  it("resolves with the pinned namespace when kubectl's answer is not JSON", async () => {
    const { ctx, kubectl, manifest, onOwnership } = setUp();
    kubectl.on("create", { stdout: "job.batch/knotless-run-42 created\n" });
    assert.equal(await createJob(ctx, manifest, onOwnership), "ci");
  });

  it("retries a 500 from the API server with a warning notice, then creates the Job", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership, eventsOf } = setUp();
    kubectl.on("create", [failure(INTERNAL_ERROR), created("ci")]);
    assert.equal(await createJob(ctx, manifest, onOwnership), "ci");
    assert.equal(kubectl.calls.length, 2);
    assert.equal(kubectl.calls[1]?.stdin, kubectl.calls[0]?.stdin);
    assert.deepEqual(ownership, ["unknown", "unknown", "ours"]);
    const notices = eventsOf("notice");
    assert.equal(notices.length, 1);
    assert.equal(notices[0]?.level, "warning");
    assert.equal(
      notices[0]?.message,
      `creating the Job failed (attempt 1): transient: ${INTERNAL_ERROR}; retrying in ${ctx.timings.createRetry.initialDelayMs} ms`,
    );
  });

  it("gives up with create-failed after five attempts that all got a 500, the Job's ownership left unknown", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership, eventsOf } = setUp();
    kubectl.on("create", failure(INTERNAL_ERROR));
    await assert.rejects(
      createJob(ctx, manifest, onOwnership),
      isInfraError(
        "create-failed",
        /^could not create Job knotless-run-42 \(gave up after 5 attempts in [0-9.]+s\): transient: Error from server \(InternalError\)/,
      ),
    );
    assert.equal(kubectl.calls.length, 5);
    assert.equal(eventsOf("notice").length, 4);
    assert.equal(ownership.at(-1), "unknown");
  });

  it("gives up with cluster-unreachable when every attempt found the cluster unreachable", async () => {
    const { ctx, kubectl, manifest, onOwnership } = setUp();
    kubectl.on("create", failure(UNREACHABLE));
    await assert.rejects(
      createJob(ctx, manifest, onOwnership),
      isInfraError("cluster-unreachable", /Unable to connect to the server/),
    );
    assert.equal(kubectl.calls.length, 5);
  });

  it("gives up with create-failed when only some attempts found the cluster unreachable", async () => {
    const { ctx, kubectl, manifest, onOwnership } = setUp();
    kubectl.on("create", [failure(UNREACHABLE), failure(INTERNAL_ERROR), failure(UNREACHABLE)]);
    await assert.rejects(
      createJob(ctx, manifest, onOwnership),
      isInfraError("create-failed", /Unable to connect to the server/),
    );
    assert.equal(kubectl.calls.length, 5);
  });

  it("adopts the Job a retried create finds when it carries this run's create token", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership } = setUp();
    kubectl.on("create", [failure(INTERNAL_ERROR), failure(ALREADY_EXISTS)]);
    kubectl.on("get job", jobWithToken(TOKEN, "ci"));
    assert.equal(await createJob(ctx, manifest, onOwnership), "ci");
    assert.deepEqual(
      kubectl.calls.map((c) => c.command.slice(0, 2).join(" ")),
      ["create --request-timeout", "create --request-timeout", "get job"],
    );
    assert.deepEqual(kubectl.calls[2]?.args, [
      "--kubeconfig",
      "/tmp/kubeconfig",
      "--context",
      "ctx",
      "--namespace",
      "ci",
      "get",
      "job",
      "knotless-run-42",
      "--request-timeout",
      "30s",
      "-o",
      "json",
    ]);
    assert.equal(ownership.at(-1), "ours");
  });

  it("refuses a Job of the same name that another run created, without claiming it", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership } = setUp();
    kubectl.on("create", failure(ALREADY_EXISTS));
    kubectl.on("get job", jobWithToken("another-runs-token"));
    await assert.rejects(
      createJob(ctx, manifest, onOwnership),
      isInfraError(
        "create-failed",
        /a Job named knotless-run-42 already exists in namespace ci; another run with id "42"/,
      ),
    );
    assert.equal(kubectl.callsTo("create").length, 1);
    assert.deepEqual(kubectl.callsTo("get job"), [], "a first create cannot have made the Job it collides with");
    assert.equal(ownership.at(-1), "none");
  });

  it("refuses a same-named Job a retried create finds when its create token is another run's", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership } = setUp();
    kubectl.on("create", [failure(INTERNAL_ERROR), failure(ALREADY_EXISTS)]);
    kubectl.on("get job", jobWithToken("another-runs-token"));
    await assert.rejects(createJob(ctx, manifest, onOwnership), isInfraError("create-failed", /already exists/));
    assert.equal(ownership.at(-1), "none");
  });

  it("leaves the ownership unknown when a retried create cannot read the same-named Job back", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership } = setUp();
    kubectl.on("create", [failure(INTERNAL_ERROR), failure(ALREADY_EXISTS)]);
    kubectl.on("get job", failure(INTERNAL_ERROR));
    await assert.rejects(createJob(ctx, manifest, onOwnership));
    assert.equal(ownership.at(-1), "unknown");
  });

  it("fails at once with an InputError when kubectl cannot use the kubeconfig", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership } = setUp();
    kubectl.on(
      "create",
      failure('error: error loading config file "/tmp/kubeconfig": yaml: line 3: did not find expected node content'),
    );
    await assert.rejects(
      createJob(ctx, manifest, onOwnership),
      (error) =>
        error instanceof InputError &&
        /kubectl cannot use the kubeconfig: error: error loading config file/.test(error.message),
    );
    assert.equal(kubectl.calls.length, 1);
    assert.deepEqual(ownership, ["unknown", "none"]);
  });

  it("fails at once with create-failed on a rejected manifest, without retrying", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership, eventsOf } = setUp();
    const invalid =
      'The Job "knotless-run-42" is invalid: spec.template.spec.containers[0].resources.requests: Invalid value: "64": must be less than or equal to memory limit';
    kubectl.on("create", failure(invalid));
    await assert.rejects(
      createJob(ctx, manifest, onOwnership),
      isInfraError("create-failed", /could not create Job knotless-run-42: The Job "knotless-run-42" is invalid/),
    );
    assert.equal(kubectl.calls.length, 1);
    assert.deepEqual(eventsOf("notice"), []);
    assert.equal(ownership.at(-1), "none");
  });

  it("stops with CancelledError when the run is cancelled while it waits to retry, the Job's ownership left unknown", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership, cancel } = setUp();
    const cancelling: ExecutorContext = {
      ...ctx,
      emit: (event) => (ctx.emit(event), event.kind === "notice" && cancel()),
    };
    kubectl.on("create", failure(INTERNAL_ERROR));
    await assert.rejects(createJob(cancelling, manifest, onOwnership), CancelledError);
    assert.equal(kubectl.calls.length, 1);
    assert.equal(ownership.at(-1), "unknown");
  });

  it("leaves the ownership unknown when the run is cancelled while kubectl create is in flight", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership, cancel } = setUp();
    kubectl.on("create", () => (setImmediate(cancel), { hang: true }));
    const error = await createJob(ctx, manifest, onOwnership).catch((e: unknown) => e);
    assert.deepEqual(kubectl.calls[0]?.killSignals, ["SIGTERM"]);
    assert.equal(ownership.at(-1), "unknown");
    assert.ok(error instanceof CancelledError, String(error));
  });
});

describe("isOurCreatedJob", () => {
  it("is true only for a Job carrying this run's create token", async () => {
    const ours = buildTestContext();
    ours.kubectl.on("get job", jobWithToken(TOKEN));
    const theirs = buildTestContext();
    theirs.kubectl.on("get job", jobWithToken("another-runs-token"));
    const missing = buildTestContext();
    missing.kubectl.on("get job", failure('Error from server (NotFound): jobs.batch "knotless-run-42" not found'));
    assert.equal(await isOurCreatedJob(ours.ctx, TOKEN), true);
    assert.equal(await isOurCreatedJob(theirs.ctx, TOKEN), false);
    assert.equal(await isOurCreatedJob(missing.ctx, TOKEN), false);
  });

  it("fails at once with forbidden when the API server refuses the create, claiming no Job", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership } = setUp();
    kubectl.on(
      "create",
      failure(
        'Error from server (Forbidden): error when creating "STDIN": jobs.batch is forbidden: User "system:serviceaccount:ci:r" cannot create resource "jobs" in API group "batch" in the namespace "ci"',
      ),
    );
    await assert.rejects(
      createJob(ctx, manifest, onOwnership),
      isInfraError(
        "forbidden",
        /^could not create Job knotless-run-42: Error from server \(Forbidden\).*cannot create resource "jobs" in API group "batch"/,
      ),
    );
    assert.equal(kubectl.calls.length, 1);
    assert.equal(ownership.at(-1), "none");
  });

  it("fails at once with unauthorized when the credential is refused, after a retry leaving the Job unknown", async () => {
    const { ctx, kubectl, manifest, ownership, onOwnership } = setUp();
    kubectl.on("create", [
      failure(INTERNAL_ERROR),
      failure("error: You must be logged in to the server (Unauthorized)"),
    ]);
    await assert.rejects(
      createJob(ctx, manifest, onOwnership),
      isInfraError("unauthorized", /unknown, expired or revoked/),
    );
    assert.equal(kubectl.calls.length, 2);
    assert.equal(ownership.at(-1), "unknown");
  });
});

describe("createJob on any transport", { concurrency: true }, () => {
  it("fails at once, owning nothing, when the server refuses the manifest as invalid, with the server's words", async () => {
    const { ctx, manifest, ownership, onOwnership } = setUp();
    const cluster = new ScriptedCluster().on(
      "createJob",
      new InvalidError(
        'Job.batch "knotless-run-42" is invalid: spec.template.spec.containers[0].image: Required value',
      ),
    );
    await assert.rejects(
      createJob({ ...ctx, cluster }, manifest, onOwnership),
      isInfraError(
        "create-failed",
        /^could not create Job knotless-run-42: Job\.batch "knotless-run-42" is invalid: .*Required value$/,
      ),
    );
    assert.deepEqual(ownership, ["unknown", "none"]);
    assert.equal(cluster.calls.length, 1);
  });

  it("retries a create whose answer was lost, then finds its own Job by its token", async () => {
    const { ctx, manifest, ownership, onOwnership } = setUp();
    const ours = { ...manifest, metadata: { ...manifest.metadata, namespace: "ci" } };
    const cluster = new ScriptedCluster()
      .on(
        "createJob",
        new UnavailableError("unreachable", "connection reset by peer"),
        new AlreadyExistsError("jobs.batch already exists"),
      )
      .on("getJob", ours);
    assert.equal(await createJob({ ...ctx, cluster }, manifest, onOwnership), "ci");
    assert.equal(ownership.at(-1), "ours");
    assert.deepEqual(
      cluster.calls.map((call) => call.method),
      ["createJob", "createJob", "getJob"],
    );
  });
});
