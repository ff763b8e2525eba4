import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { describe, it } from "node:test";
import { Job } from "kubernetes-models/batch/v1/Job";
import { buildRunManifest } from "../../src/executor/kubernetes/kubernetes-executor.js";
import { chooseServiceMode, planServices, type ServiceSpec } from "../../src/manifests/service-containers.js";
import { buildRunContainerSecurityContext } from "../../src/manifests/security-context.js";
import { exampleSettings } from "../support/example-settings.js";

const FIXTURES = new URL("../../../test/fixtures/manifests/", import.meta.url);

function assertGolden(name: string, manifest: object): void {
  const url = new URL(name, FIXTURES);
  const text = `${JSON.stringify(manifest, null, 2)}\n`;
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(url, text);
  assert.equal(text, readFileSync(url, "utf8"), `${name} differs from the golden file (UPDATE_GOLDEN=1 to accept)`);
}

const SERVICES: ServiceSpec[] = [
  {
    name: "postgres",
    image: "localhost/knotless-postgres:bookworm",
    env: [{ name: "POSTGRES_DB", value: "test" }],
    command: ["knotless-postgres"],
    args: ["-c", "fsync=off"],
    ports: [5432],
    readiness: { kind: "tcp", port: 5432 },
    readinessTimeoutMs: 60_000,
  },
  {
    name: "cache",
    image: "redis:7",
    env: [],
    ports: [],
    readiness: { kind: "exec", command: ["redis-cli", "ping"] },
    readinessTimeoutMs: 30_000,
  },
];

const settings = { ...exampleSettings({ steps: ["test"] }), services: SERVICES };

describe("service containers in the Job manifest", () => {
  it("puts the services as native sidecars (init containers, restartPolicy Always) before the run container: golden", () => {
    const manifest = buildRunManifest({ settings }, "token", "sidecar");
    assertGolden("services-sidecar.json", manifest);
    assert.doesNotThrow(() => new Job(manifest).validate());
  });

  it("puts the services beside the run container, without restartPolicy, on a server without native sidecars", () => {
    const spec = buildRunManifest({ settings }, "token", "container").spec!.template.spec!;
    assert.equal(spec.initContainers, undefined);
    assert.deepEqual(
      spec.containers.map((container) => [container.name, container.restartPolicy]),
      [
        ["run", undefined],
        ["postgres", undefined],
        ["cache", undefined],
      ],
    );
    assert.deepEqual(spec.containers[1]!.readinessProbe?.tcpSocket, { port: 5432 });
  });

  it("gives each service the run container's hardening", () => {
    const spec = buildRunManifest({ settings }, "token", "sidecar").spec!.template.spec!;
    for (const container of spec.initContainers!)
      assert.deepEqual(container.securityContext, buildRunContainerSecurityContext());
  });

  it("runs each service as the run container does under the restricted profile: never root, no capability", () => {
    const spec = buildRunManifest({ settings: { ...settings, pod: { security: "restricted" } } }, "token", "sidecar")
      .spec!.template.spec!;
    for (const container of spec.initContainers!) {
      assert.deepEqual(container.securityContext, spec.containers[0]!.securityContext);
      assert.deepEqual(container.securityContext?.capabilities?.drop, ["ALL"]);
      assert.equal(container.securityContext?.runAsNonRoot, true);
    }
  });

  it("leaves the manifest without init containers when the workflow has no services", () => {
    assert.equal(
      buildRunManifest({ settings: exampleSettings({ steps: ["test"] }) }, "token", "sidecar").spec!.template.spec!
        .initContainers,
      undefined,
    );
  });

  it("chooses native sidecars from Kubernetes 1.29 on, plain containers before", () => {
    assert.deepEqual(
      [
        [1, 28],
        [1, 29],
        [1, 33],
        [2, 0],
      ].map(([major, minor]) => chooseServiceMode({ major: major!, minor: minor! })),
      ["container", "sidecar", "sidecar", "sidecar"],
    );
  });

  it("plans a workflow's services without their file positions, readiness timeout kept", () => {
    const at = { line: 1, column: 1 };
    assert.deepEqual(
      planServices([
        {
          name: "db",
          image: "postgres:16",
          imagePosition: at,
          environment: [],
          ports: [5432],
          readinessTimeoutMs: 5000,
          position: at,
        },
      ]),
      [{ name: "db", image: "postgres:16", env: [], ports: [5432], readinessTimeoutMs: 5000 }],
    );
  });
});
