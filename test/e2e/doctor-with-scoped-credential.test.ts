// doctor with the runner's scoped credential on the local cluster's RBAC (TLS), through the api transport and kubectl 1.30 and 1.33: passes, then names a missing permission.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { buildRoleRules } from "../../src/ops/credentials/credential-objects.js";
import { collectCallPermissions, type ApiPermission } from "../../src/cluster/permissions.js";
import { E2E_KUBECTLS } from "../support/local-cluster-e2e.js";
import { runCli } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

/** Async on purpose: the cluster serves from this process, so a synchronous kubectl call would deadlock. */
const execFileAsync = promisify(execFile);
const NAMESPACE = "ci";
const NAME = "knotless-runner";
const opensslWorks = spawnSync("openssl", ["version"], { stdio: "ignore" }).status === 0;
const skip =
  E2E_KUBECTLS.length === 0
    ? "no kubectl 1.30 or 1.33 under /usr/lib/google-cloud-sdk/bin"
    : opensslWorks
      ? false
      : "openssl is needed for the local cluster's TLS";

describe(
  "doctor with a scoped credential on the local cluster's RBAC",
  { skip, concurrency: 1, timeout: 300_000 },
  () => {
    let cluster: LocalCluster;
    before(async () => {
      cluster = await startLocalCluster({ tls: true, namespace: NAMESPACE, runtime: "none" });
    });
    after(async () => {
      await cluster?.stop();
    });
    /** Replaces the scoped identity's Role with one granting these permissions. */
    const applyRole = async (kubectl: string, permissions: readonly ApiPermission[]): Promise<void> => {
      const role = {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: NAME, namespace: NAMESPACE },
        rules: buildRoleRules(permissions),
      };
      const child = execFileAsync(
        kubectl,
        ["--kubeconfig", cluster.kubeconfigPath, "--namespace", NAMESPACE, "apply", "-f", "-"],
        { encoding: "utf8" },
      );
      child.child.stdin?.end(JSON.stringify(role));
      await child;
    };

    for (const via of ["api", ...E2E_KUBECTLS]) {
      // The admin's Role edits go through a real kubectl whatever the transport under test.
      const kubectl = via === "api" ? E2E_KUBECTLS.at(-1)! : via;
      const transport = via === "api" ? ["--transport", "api"] : ["--transport", "kubectl", "--kubectl", via];
      it(`passes the credential credentials makes and fails one without jobs patch, naming it, through ${via.split("/").pop()}`, async () => {
        const scoped = join(makeTestTempDir("doctor-scoped-"), "runner.kubeconfig");
        const made = await runCli([
          "credentials",
          "--namespace",
          NAMESPACE,
          "--name",
          NAME,
          "--out",
          scoped,
          "--kubeconfig",
          cluster.kubeconfigPath,
          ...transport,
        ]);
        assert.equal(made.code, 0, made.stderr);
        await applyRole(kubectl, collectCallPermissions()); // what credentials wrote, again: the test starts from a known Role
        const ok = await runCli(["doctor", "--kubeconfig", scoped, ...transport]);
        assert.equal(ok.code, 0, ok.stdout + ok.stderr);
        assert.match(
          ok.stdout,
          /^ok +namespace +ci accepts Jobs \(namespaces are not readable by this credential; checked with a server-side dry run\)$/m,
        );
        assert.match(ok.stdout, /^ok +permission jobs\.batch +create, delete, get, list, patch, watch in ci$/m);
        assert.match(
          ok.stdout,
          new RegExp(`^ok +credential +user system:serviceaccount:${NAMESPACE}:${NAME}; `, "m"),
          "a scoped credential: no cluster-admin warning",
        );
        assert.match(ok.stdout, /^skip +nodes +not visible to this credential/m);

        const withoutPatch = collectCallPermissions().map((p) =>
          p.resource === "jobs" ? { ...p, verbs: p.verbs.filter((verb) => verb !== "patch") } : p,
        );
        await applyRole(kubectl, withoutPatch);
        const missing = await runCli(["doctor", "--kubeconfig", scoped, ...transport, "--json"]);
        assert.equal(missing.code, 3, missing.stdout + missing.stderr);
        const report = JSON.parse(missing.stdout) as {
          ok: boolean;
          checks: Array<{ name: string; status: string; summary: string }>;
        };
        assert.equal(report.ok, false);
        assert.deepEqual(
          report.checks.filter((c) => c.status === "fail"),
          [
            {
              name: "permission jobs.batch",
              status: "fail",
              summary: "missing in ci: patch (needs create, delete, get, list, patch, watch)",
            },
          ],
        );
        assert.equal(
          (
            await runCli([
              "credentials",
              "--namespace",
              NAMESPACE,
              "--name",
              NAME,
              "--revoke",
              "--kubeconfig",
              cluster.kubeconfigPath,
              ...transport,
            ])
          ).code,
          0,
        );
      });
    }
  },
);
