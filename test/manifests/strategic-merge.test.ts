import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyPodSpecPatch } from "../../src/manifests/strategic-merge.js";

const spec = {
  restartPolicy: "Never",
  nodeSelector: { pool: "ci" },
  tolerations: [{ key: "a", operator: "Exists" }],
  containers: [
    {
      name: "run",
      image: "busybox",
      env: [{ name: "A", value: "1" }],
      volumeMounts: [{ name: "work", mountPath: "/work" }],
      resources: { requests: { cpu: "1" } },
    },
    { name: "docker", image: "docker" },
  ],
  volumes: [{ name: "work", emptyDir: {} }],
};

describe("applyPodSpecPatch", () => {
  it("merges containers by name, keeping what the patch does not name", () => {
    const merged = applyPodSpecPatch(spec, { containers: [{ name: "run", resources: { limits: { cpu: "2" } } }] });
    assert.deepEqual(merged.containers[0], {
      ...spec.containers[0],
      resources: { requests: { cpu: "1" }, limits: { cpu: "2" } },
    });
    assert.deepEqual(merged.containers[1], spec.containers[1]);
  });

  it("appends a container, a volume and a mount whose keys are new, in the patch's order", () => {
    const merged = applyPodSpecPatch(spec, {
      containers: [
        { name: "proxy", image: "envoy" },
        { name: "run", volumeMounts: [{ name: "certs", mountPath: "/certs" }] },
      ],
      volumes: [{ name: "certs", secret: { secretName: "ca" } }],
    });
    assert.deepEqual(
      merged.containers.map((c: { name: string }) => c.name),
      ["run", "docker", "proxy"],
    );
    assert.deepEqual(merged.containers[0]!.volumeMounts, [
      { name: "work", mountPath: "/work" },
      { name: "certs", mountPath: "/certs" },
    ]);
    assert.deepEqual(merged.volumes, [
      { name: "work", emptyDir: {} },
      { name: "certs", secret: { secretName: "ca" } },
    ]);
  });

  it("merges env by name and replaces tolerations whole, as Kubernetes does", () => {
    const merged = applyPodSpecPatch(spec, {
      containers: [
        {
          name: "run",
          env: [
            { name: "A", value: "2" },
            { name: "B", value: "3" },
          ],
        },
      ],
      tolerations: [{ key: "b", operator: "Exists" }],
    });
    assert.deepEqual(merged.containers[0]!.env, [
      { name: "A", value: "2" },
      { name: "B", value: "3" },
    ]);
    assert.deepEqual(merged.tolerations, [{ key: "b", operator: "Exists" }]);
  });

  it("deletes a key given null and a list item given $patch: delete", () => {
    const merged = applyPodSpecPatch(spec, { nodeSelector: null, containers: [{ name: "docker", $patch: "delete" }] });
    assert.equal("nodeSelector" in merged, false);
    assert.deepEqual(
      merged.containers.map((c: { name: string }) => c.name),
      ["run"],
    );
  });

  it("replaces a map given $patch: replace and leaves the input unchanged", () => {
    const before = structuredClone(spec);
    const merged = applyPodSpecPatch(spec, {
      containers: [{ name: "run", resources: { $patch: "replace", requests: { memory: "1Gi" } } }],
    });
    assert.deepEqual(merged.containers[0]!.resources, { requests: { memory: "1Gi" } });
    assert.deepEqual(spec, before);
  });
});
