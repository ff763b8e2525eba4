import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkPodSecurity } from "../../local-cluster/pod-security.js";
import { buildJobManifest } from "../../src/manifests/manifest.js";

const input = {
  jobName: "knotless-run-1",
  runId: "1",
  runIdLabel: "1",
  image: "busybox:1.36",
  cpu: "500m",
  memory: "512Mi",
  budgetSeconds: 60,
  createToken: "t",
};
const restrictedNamespace = {
  apiVersion: "v1",
  kind: "Namespace",
  metadata: {
    name: "ci",
    uid: "",
    resourceVersion: "",
    creationTimestamp: "",
    labels: { "pod-security.kubernetes.io/enforce": "restricted" },
  },
};

describe("the local cluster's Pod Security admission", () => {
  it("refuses the default profile's pod in a restricted namespace with kube-apiserver's words, and admits the restricted profile's", () => {
    const spec = (security?: "restricted") =>
      buildJobManifest({ ...input, ...(security ? { pod: { security } } : {}) }).spec?.template.spec;
    assert.equal(
      checkPodSecurity(restrictedNamespace, "p", spec()),
      'pods "p" is forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities (container "run" must not include capabilities other than NET_BIND_SERVICE in securityContext.capabilities.add), runAsNonRoot != true (pod or container "run" must set securityContext.runAsNonRoot=true)',
    );
    assert.equal(checkPodSecurity(restrictedNamespace, "p", spec("restricted")), undefined);
  });

  it("enforces nothing in a namespace without the label, and names a privileged container and host paths", () => {
    assert.equal(
      checkPodSecurity({ ...restrictedNamespace, metadata: { ...restrictedNamespace.metadata, labels: {} } }, "p", {
        containers: [{ name: "c", securityContext: { privileged: true } }],
      }),
      undefined,
    );
    const refusal =
      checkPodSecurity(restrictedNamespace, "p", {
        containers: [{ name: "c", securityContext: { privileged: true } }],
        volumes: [{ name: "root", hostPath: { path: "/" } }],
      }) ?? "";
    assert.match(refusal, /privileged \(container "c" must not set securityContext\.privileged=true\)/);
    assert.match(refusal, /restricted volume types \(volume "root" uses restricted volume type "hostPath"\)/);
  });
});
