// The Lease calls and the claim through both transports against the local cluster's API server (no containers): the API server's 409s are what make a claim exclusive.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { Cluster } from "../../src/cluster/cluster.js";
import { ConflictError } from "../../src/cluster/errors.js";
import { openCluster } from "../../src/cluster/transports/open-cluster.js";
import { INSTANCE_LEASE_SELECTOR } from "../../src/manifests/instance-lease.js";
import { claimRun } from "../../src/serve/claim-run.js";
import { LeaseHolder } from "../../src/serve/lease-holder.js";
import { NAMESPACE, startTestCluster, type TestCluster } from "../local-cluster/harness.js";
import { listKubectlBinaries } from "../local-cluster/kubectl-runner.js";

function runJob(name: string, instance: string): IJob {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name,
      labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s" },
      annotations: { "knotless.dev/instance": instance },
    },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "run", image: "busybox:1.36", command: ["sleep", "600"] }],
        },
      },
    },
  } as IJob;
}

describe("Leases and claims against the local cluster", { timeout: 120_000 }, () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster({ runtime: "none" });
  });
  after(async () => {
    await tc?.cluster.stop();
  });

  for (const transport of ["api", "kubectl"] as const) {
    it(`${transport}: a Lease is taken, renewed at its version, refused at a stale one, and released; of two claims of one Job exactly one wins`, async () => {
      const { cluster }: { cluster: Cluster } = await openCluster(
        {
          target: { kubeconfig: tc.cluster.kubeconfigPath, namespace: NAMESPACE },
          kubectlPath: listKubectlBinaries().at(-1)!.path,
          transport,
        },
        // kubectl without HOME writes its discovery cache into the working directory: the checkout.
        process.env,
      );
      const instance = `i-${transport}`;
      const holder = new LeaseHolder({
        cluster,
        namespace: NAMESPACE,
        instance,
        durationSeconds: 5,
        renewIntervalMs: 60_000,
        warn: () => {},
      });
      await holder.acquire();
      const taken = await cluster.getLease(NAMESPACE, `knotless-instance-${instance}`);
      assert.equal(taken.spec?.holderIdentity, instance);
      const listed = await cluster.listLeases(NAMESPACE, INSTANCE_LEASE_SELECTOR);
      assert.ok(listed.some((lease) => lease.metadata?.name === `knotless-instance-${instance}`));
      const renewed = await cluster.updateLease(NAMESPACE, taken);
      assert.notEqual(renewed.metadata?.resourceVersion, taken.metadata?.resourceVersion);
      await assert.rejects(cluster.updateLease(NAMESPACE, taken), ConflictError, "an update at a stale version");
      await assert.rejects(
        cluster.deleteLease(NAMESPACE, `knotless-instance-${instance}`, {
          resourceVersion: taken.metadata!.resourceVersion!,
        }),
        ConflictError,
        "a delete at a stale version",
      );

      const name = `claimed-${transport}`;
      const job = await cluster.createJob(NAMESPACE, runJob(name, "a"));
      await assert.rejects(
        cluster.claimJob(NAMESPACE, name, String(Number(job.metadata!.resourceVersion) - 1), {
          "knotless.dev/instance": "x",
        }),
        ConflictError,
        "a claim at a stale version",
      );
      const outcomes = await Promise.all(
        ["b", "c"].map((claimer) => claimRun(cluster, NAMESPACE, name, { instance: claimer, from: "a" })),
      );
      assert.deepEqual(outcomes.map((o) => o.kind).sort(), ["claimed", "taken"]);
      const owner = (await cluster.getJob(NAMESPACE, name)).metadata?.annotations?.["knotless.dev/instance"];
      assert.ok(owner === "b" || owner === "c");
      await cluster.deleteJob(NAMESPACE, name);

      // The holder's own version is stale now (renewed above): its release leaves the Lease, and says so.
      await holder.release();
      assert.equal(await cluster.deleteLease(NAMESPACE, `knotless-instance-${instance}`), "deleted");
      assert.equal(await cluster.deleteLease(NAMESPACE, `knotless-instance-${instance}`), "absent");
      await (cluster as { close?: () => Promise<void> }).close?.();
    });
  }
});
