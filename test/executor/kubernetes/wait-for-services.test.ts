// Tests of waiting for a workflow's services before the first step, and of reading their last log lines.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { IPod } from "kubernetes-models/v1/Pod";
import { waitForServices } from "../../../src/executor/kubernetes/wait-for-services.js";
import type { ServiceSpec } from "../../../src/manifests/service-containers.js";
import { classifyService } from "../../../src/manifests/service-state.js";
import { NODE_NAME, POD_NAME, podList, runningPod } from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";
import { isInfraError } from "../../support/infra-error.js";

const POD = { name: POD_NAME, node: NODE_NAME };
const POSTGRES: ServiceSpec = {
  name: "postgres",
  image: "knotless-postgres",
  env: [],
  ports: [5432],
  readiness: { kind: "tcp", port: 5432 },
  readinessTimeoutMs: 60_000,
};

type Status = NonNullable<NonNullable<IPod["status"]>["initContainerStatuses"]>[number];

/** The run's pod with one sidecar status of `service`. */
function podWithSidecar(service: string, status: Partial<Status>): IPod {
  const pod = runningPod();
  const sidecar: Status = {
    name: service,
    image: "x",
    imageID: "",
    ready: false,
    restartCount: 0,
    state: { running: { startedAt: "2024-05-01T10:00:04Z" } },
    ...status,
  };
  return { ...pod, status: { ...pod.status, initContainerStatuses: [sidecar] } };
}

describe("classifyService", () => {
  it("tells ready, still coming up and failed apart from a sidecar's or a container's status", () => {
    assert.deepEqual(classifyService(podWithSidecar("db", { ready: true }), "db"), { kind: "ready" });
    assert.deepEqual(classifyService(podWithSidecar("db", {}), "db"), {
      kind: "waiting",
      detail: "running, its readiness check not passed yet",
    });
    assert.deepEqual(classifyService(runningPod(), "db"), {
      kind: "waiting",
      detail: "its container is not created yet",
    });
    assert.deepEqual(
      classifyService(podWithSidecar("db", { state: { terminated: { exitCode: 1, reason: "Error" } } }), "db"),
      { kind: "failed", detail: "its container exited with code 1 (Error)" },
    );
    assert.deepEqual(
      classifyService(
        podWithSidecar("db", { restartCount: 1, state: { running: {} }, lastState: { terminated: { exitCode: 2 } } }),
        "db",
      ),
      { kind: "failed", detail: "its container exited with code 2" },
    );
    assert.deepEqual(
      classifyService(
        podWithSidecar("db", { state: { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } } }),
        "db",
      ),
      { kind: "failed", detail: "ImagePullBackOff: Back-off pulling image" },
    );
    const plain = runningPod();
    const asContainer = {
      ...plain,
      status: {
        ...plain.status,
        containerStatuses: [
          ...plain.status!.containerStatuses!,
          { name: "db", image: "x", imageID: "", ready: true, restartCount: 0 },
        ],
      },
    };
    assert.deepEqual(classifyService(asContainer, "db"), { kind: "ready" });
  });
});

describe("waitForServices", () => {
  it("resolves once every service is ready, after reading the pod until it says so", async () => {
    const { ctx, kubectl } = buildTestContext({ settings: { services: [POSTGRES] } });
    kubectl.on("get pods", [
      podList(podWithSidecar("postgres", {})),
      podList(podWithSidecar("postgres", {})),
      podList(podWithSidecar("postgres", { ready: true })),
    ]);
    const detail = await waitForServices(ctx, POD);
    assert.match(detail, /^1 service ready: postgres after \d/);
    assert.equal(kubectl.calls.filter((call) => call.command[0] === "get").length, 3);
  });

  it("fails as service-not-ready when a service is not ready within its timeout, naming it with its last log lines", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext({
      settings: { services: [{ ...POSTGRES, readinessTimeoutMs: 300 }] },
    });
    kubectl.on("get pods", podList(podWithSidecar("postgres", {})));
    kubectl.on("logs", { stdout: "FATAL:  could not bind IPv4 address\nLOG:  database system is shut down\n" });
    const started = Date.now();
    await assert.rejects(
      waitForServices(ctx, POD),
      isInfraError(
        "service-not-ready",
        /^service postgres \(knotless-postgres\) did not become ready: not ready after .*readiness: tcp 5432, timeout 300ms.*last log lines:\nFATAL: {2}could not bind IPv4 address\nLOG: {2}database system is shut down$/s,
      ),
    );
    assert.ok(Date.now() - started < 20_000, "ended at the 300 ms timeout, not never"); // a bound a busy machine keeps
    const logs = kubectl.calls.find((call) => call.command[0] === "logs")!;
    assert.deepEqual(logs.command.slice(0, 8), [
      "logs",
      POD_NAME,
      "-c",
      "postgres",
      "--tail",
      "20",
      "--limit-bytes",
      "4096",
    ]);
    assert.deepEqual(
      eventsOf("service-log").map((event) => [event.service, event.when]),
      [["postgres", "not-ready"]],
    );
  });

  it("fails at once when a service's container exited, and says so when its log cannot be read", async () => {
    const { ctx, kubectl } = buildTestContext({ settings: { services: [POSTGRES] } });
    kubectl.on(
      "get pods",
      podList(podWithSidecar("postgres", { state: { terminated: { exitCode: 1, reason: "Error" } } })),
    );
    kubectl.on("logs", {
      exitCode: 1,
      stderr:
        'Error from server (BadRequest): container "postgres" in pod "x" is waiting to start: ContainerCreating\n',
    });
    const started = Date.now();
    await assert.rejects(
      waitForServices(ctx, POD),
      isInfraError(
        "service-not-ready",
        /did not become ready: its container exited with code 1 \(Error\).*\(its log could not be read: /s,
      ),
    );
    assert.ok(Date.now() - started < 20_000, "no wait for the timeout (60 s)");
  });
});
