// A delete with preconditions through the real kubectl (`delete --raw` with DeleteOptions on stdin): only the object the caller saw goes.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { buildJobManifest, NAMESPACE, startTestCluster, type TestCluster } from "./harness.js";
import { listKubectlBinaries } from "./kubectl-runner.js";

describe("a delete with preconditions", () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster({ runtime: "none" });
  });
  after(async () => {
    await tc?.cluster.stop();
  });

  const path = `/apis/batch/v1/namespaces/${NAMESPACE}/jobs/held`;
  const body = (preconditions: object) =>
    JSON.stringify({ kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background", preconditions });

  for (const kubectl of listKubectlBinaries()) {
    it(`refuses a stale uid or resourceVersion with Conflict and deletes on a match, once (kubectl ${kubectl.version})`, async () => {
      assert.equal(
        (await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildJobManifest({ name: "held" }) })).code,
        0,
      );
      const job = tc.cluster.objects("jobs.batch", NAMESPACE).find((j) => j.metadata.name === "held")!;
      const { uid, resourceVersion } = job.metadata;
      const stale = await tc.kubectl(kubectl.path, ["delete", "--raw", path, "-f", "-"], {
        stdin: body({ uid, resourceVersion: String(Number(resourceVersion) - 1) }),
      });
      assert.equal(stale.code, 1);
      assert.match(
        stale.stderr,
        /Error from server \(Conflict\).*Precondition failed: ResourceVersion in precondition/,
      );
      const stranger = await tc.kubectl(kubectl.path, ["delete", "--raw", path, "-f", "-"], {
        stdin: body({ uid: "not-this-one" }),
      });
      assert.match(stranger.stderr, /\(Conflict\).*UID in precondition: not-this-one/);
      assert.ok(
        tc.cluster.objects("jobs.batch", NAMESPACE).some((j) => j.metadata.uid === uid),
        "a refused delete removed the Job",
      );
      const current = tc.cluster.objects("jobs.batch", NAMESPACE).find((j) => j.metadata.name === "held")!;
      const claimed = await tc.kubectl(kubectl.path, ["delete", "--raw", path, "-f", "-"], {
        stdin: body({ uid, resourceVersion: current.metadata.resourceVersion }),
      });
      assert.equal(claimed.code, 0, claimed.stderr);
      assert.equal(tc.cluster.objects("jobs.batch", NAMESPACE).length, 0);
      const again = await tc.kubectl(kubectl.path, ["delete", "--raw", path, "-f", "-"], {
        stdin: body({ uid, resourceVersion: current.metadata.resourceVersion }),
      });
      assert.equal(again.code, 1);
      assert.match(again.stderr, /\(NotFound\)/);
    });
  }
});
