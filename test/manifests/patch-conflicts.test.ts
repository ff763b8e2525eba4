import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findPatchConflicts } from "../../src/manifests/patch-conflicts.js";

describe("findPatchConflicts", () => {
  it("finds nothing in a patch that leaves the runner's parts alone", () => {
    assert.deepEqual(
      findPatchConflicts({
        hostAliases: [{ ip: "10.0.0.5", hostnames: ["registry.local"] }],
        containers: [
          { name: "run", resources: { limits: { cpu: "2" } } },
          { name: "proxy", image: "envoy" },
        ],
        volumes: [{ name: "certs", secret: { secretName: "ca" } }],
      }),
      [],
    );
  });

  it("refuses the run container's command, args and working directory, and its deletion", () => {
    const conflicts = findPatchConflicts({
      containers: [
        { name: "run", command: ["sleep", "1"], args: ["x"], workingDir: "/" },
        { name: "run", $patch: "delete" },
      ],
    });
    assert.deepEqual(
      conflicts.map((c) => c.path.join(".")),
      ["containers.0.command", "containers.0.args", "containers.0.workingDir", "containers.1.$patch"],
    );
    assert.match(conflicts[0]!.message, /keep-alive/);
  });

  it("refuses restartPolicy, the runner's volumes and mounts, and replacing or removing the lists", () => {
    const conflicts = findPatchConflicts({
      restartPolicy: "Always",
      volumes: [{ name: "secrets", hostPath: { path: "/" } }],
      containers: [
        { name: "run", volumeMounts: [{ name: "extra", mountPath: "/work" }] },
        { name: "spy", volumeMounts: [{ name: "secrets", mountPath: "/s" }] },
      ],
      initContainers: [{ $patch: "replace" }],
    });
    assert.deepEqual(
      conflicts.map((c) => c.path.join(".")),
      [
        "restartPolicy",
        "initContainers.0",
        "containers.0.volumeMounts.0.mountPath",
        "containers.1.volumeMounts.0.name",
        "volumes.0.name",
      ],
    );
    assert.deepEqual(
      findPatchConflicts({ containers: null, volumes: [{ $patch: "replace" }] }).map((c) => c.path.join(".")),
      ["containers", "volumes.0"],
    );
  });
});
