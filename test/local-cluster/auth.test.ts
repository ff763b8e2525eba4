// Authentication (issued tokens) and RBAC through the real kubectl 1.30 and 1.33 against the local cluster over TLS.

import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import {
  buildJobManifest,
  findContainerSkipReason,
  NAMESPACE,
  startTestCluster,
  waitForRunningPod,
  type TestCluster,
} from "./harness.js";
import { listKubectlBinaries, runKubectl, type KubectlResult } from "./kubectl-runner.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const SA = "runner";
const USER = `system:serviceaccount:${NAMESPACE}:${SA}`;
const NEWEST = listKubectlBinaries().at(-1)!;
const skipContainers = await findContainerSkipReason();

/** A kubeconfig for one bearer token, with the admin kubeconfig's server and CA. */
function writeTokenKubeconfig(tc: TestCluster, token: string, name: string): string {
  const admin = parse(readFileSync(tc.cluster.kubeconfigPath, "utf8")) as {
    clusters: [{ cluster: Record<string, string> }];
  };
  const path = join(makeTestTempDir("auth-kubeconfig-"), name);
  const cluster = admin.clusters[0].cluster;
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster }],
      users: [{ name: "u", user: { token } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u", namespace: NAMESPACE } }],
      "current-context": "x",
    }),
    { mode: 0o600 },
  );
  return path;
}

/** Applies the runner's Role with these rules (replacing any earlier ones). */
async function applyRole(tc: TestCluster, rules: object[]): Promise<void> {
  const r = await tc.kubectl(NEWEST.path, ["apply", "-f", "-"], {
    stdin: JSON.stringify({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: SA }, rules }),
  });
  assert.equal(r.code, 0, r.stderr);
}

function lastLine(r: KubectlResult): string {
  return r.stderr.trim().split("\n").at(-1) ?? "";
}

describe("authentication and RBAC through the real kubectl", () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster({ runtime: "none", tls: true });
    for (const args of [
      ["create", "serviceaccount", SA],
      ["create", "rolebinding", SA, `--role=${SA}`, `--serviceaccount=${NAMESPACE}:${SA}`],
    ]) {
      const r = await tc.kubectl(NEWEST.path, args);
      assert.equal(r.code, 0, r.stderr);
    }
    await applyRole(tc, [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }]);
  });
  after(async () => {
    await tc?.cluster.stop();
  });

  test("serves the API over https with the CA in the kubeconfig, and the admin kubeconfig may do anything", async () => {
    assert.match(tc.cluster.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const r = await tc.kubectl(NEWEST.path, ["auth", "whoami", "-o", "json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).status.userInfo.username, "local-admin");
    assert.equal(
      (await tc.kubectl(NEWEST.path, ["auth", "can-i", "delete", "secrets", "--all-namespaces"])).stdout.trim(),
      "yes",
    );
  });

  for (const kubectl of listKubectlBinaries()) {
    describe(`with kubectl ${kubectl.version}`, () => {
      let scoped: string;
      const as = (args: readonly string[], stdin?: string): Promise<KubectlResult> =>
        runKubectl(kubectl.path, scoped, args, stdin === undefined ? {} : { stdin });

      before(async () => {
        const r = await tc.kubectl(kubectl.path, ["create", "token", SA, "--duration", "1h"]);
        assert.equal(r.code, 0, r.stderr);
        scoped = writeTokenKubeconfig(tc, r.stdout.trim(), `scoped-${kubectl.version}`);
      });

      test("create token issues a token that authenticates as the ServiceAccount (auth whoami)", async () => {
        const r = await as(["auth", "whoami", "-o", "json"]);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(JSON.parse(r.stdout).status.userInfo.groups, [
          "system:serviceaccounts",
          `system:serviceaccounts:${NAMESPACE}`,
          "system:authenticated",
        ]);
        assert.equal(JSON.parse(r.stdout).status.userInfo.username, USER);
        const issued = tc.cluster.issuedTokens().at(-1)!;
        assert.equal(issued.serviceAccount, SA);
        assert.ok(Math.abs(issued.expiresAt - issued.issuedAt - 3_600_000) < 1000);
      });

      test("a TokenRequest posted as JSON through create --raw gets the expiry it asked for", async () => {
        const body = JSON.stringify({
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenRequest",
          spec: { expirationSeconds: 7200 },
        });
        const r = await tc.kubectl(
          kubectl.path,
          ["create", "--raw", `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/${SA}/token`, "-f", "-"],
          { stdin: body },
        );
        assert.equal(r.code, 0, r.stderr);
        const answer = JSON.parse(r.stdout);
        assert.equal(answer.kind, "TokenRequest");
        assert.match(answer.status.token, /^lc1\.[A-Za-z0-9_-]{43}$/);
        assert.ok(Math.abs(Date.parse(answer.status.expirationTimestamp) - Date.now() - 7_200_000) < 5000);
      });

      test("a token of less than ten minutes is refused as Invalid, as kube-apiserver does", async () => {
        const r = await tc.kubectl(kubectl.path, ["create", "token", SA, "--duration", "5m"]);
        assert.equal(r.code, 1);
        assert.match(
          r.stderr,
          /spec\.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes/,
        );
      });

      test("what the Role grants is allowed, and anything else is refused with kube-apiserver's exact 403", async () => {
        assert.equal((await as(["get", "pods"])).code, 0);
        const create = await as(["create", "-f", "-"], buildJobManifest({ name: "not-allowed" }));
        assert.equal(create.code, 1);
        assert.equal(
          lastLine(create),
          `Error from server (Forbidden): error when creating "STDIN": jobs.batch is forbidden: User "${USER}" cannot create resource "jobs" in API group "batch" in the namespace "${NAMESPACE}"`,
        );
        const get = await as(["get", "job", "some-job"]);
        assert.equal(
          lastLine(get),
          `Error from server (Forbidden): jobs.batch "some-job" is forbidden: User "${USER}" cannot get resource "jobs" in API group "batch" in the namespace "${NAMESPACE}"`,
        );
        const watch = await as(["auth", "can-i", "watch", "pods"]);
        assert.deepEqual([watch.code, watch.stdout.trim()], [1, "no"]);
      });

      test("the scoped identity can read no secret and touch no other namespace nor the cluster scope", async () => {
        assert.equal(
          lastLine(await as(["get", "secrets"])),
          `Error from server (Forbidden): secrets is forbidden: User "${USER}" cannot list resource "secrets" in API group "" in the namespace "${NAMESPACE}"`,
        );
        assert.match(
          lastLine(await as(["get", "pods", "--namespace", "default"])),
          /cannot list resource "pods" in API group "" in the namespace "default"$/,
        );
        assert.match(
          lastLine(await as(["get", "pods", "--all-namespaces"])),
          /cannot list resource "pods" in API group "" at the cluster scope$/,
        );
        assert.match(
          lastLine(await as(["get", "nodes"])),
          /cannot list resource "nodes" in API group "" at the cluster scope$/,
        );
      });

      test("auth can-i answers from RBAC, and --list shows the Role's rules", async () => {
        const yes = await as(["auth", "can-i", "list", "pods"]);
        assert.deepEqual([yes.code, yes.stdout.trim()], [0, "yes"]);
        const no = await as(["auth", "can-i", "create", "pods/exec"]);
        assert.deepEqual([no.code, no.stdout.trim()], [1, "no"]);
        const list = await as(["auth", "can-i", "--list"]);
        assert.equal(list.code, 0, list.stderr);
        assert.match(list.stdout, /^pods\s+\[\]\s+\[\]\s+\[get list\]$/m);
        assert.doesNotMatch(list.stdout, /secrets|jobs/);
      });

      test("an unknown token, an expired one and one of a deleted ServiceAccount are refused with 401", async () => {
        const unknown = await runKubectl(
          kubectl.path,
          writeTokenKubeconfig(tc, "lc1.not-a-token-this-cluster-issued", `unknown-${kubectl.version}`),
          ["get", "pods"],
        );
        assert.equal(unknown.code, 1);
        // "(Unauthorized)" once kubectl has the discovery cached, kubectl's own wording when discovery itself is refused.
        assert.match(
          lastLine(unknown),
          /^error: You must be logged in to the server \((Unauthorized|the server has asked for the client to provide credentials)\)$/,
        );

        const short = await tc.kubectl(kubectl.path, ["create", "token", SA]);
        const expiring = writeTokenKubeconfig(tc, short.stdout.trim(), `expiring-${kubectl.version}`);
        assert.equal((await runKubectl(kubectl.path, expiring, ["get", "pods"])).code, 0);
        assert.ok(tc.cluster.expireTokens({ namespace: NAMESPACE, serviceAccount: SA }) >= 1);
        assert.match(
          lastLine(await runKubectl(kubectl.path, expiring, ["get", "pods"])),
          /You must be logged in to the server/,
        );

        const other = `gone-${kubectl.version.replace(".", "-")}`;
        assert.equal((await tc.kubectl(kubectl.path, ["create", "serviceaccount", other])).code, 0);
        const doomed = writeTokenKubeconfig(
          tc,
          (await tc.kubectl(kubectl.path, ["create", "token", other])).stdout.trim(),
          `doomed-${kubectl.version}`,
        );
        assert.equal((await runKubectl(kubectl.path, doomed, ["auth", "whoami"])).code, 0);
        assert.equal((await tc.kubectl(kubectl.path, ["delete", "serviceaccount", other])).code, 0);
        assert.match(
          lastLine(await runKubectl(kubectl.path, doomed, ["auth", "whoami"])),
          /You must be logged in to the server/,
        );
        // The expiry above ended this file's earlier tokens too: issue a fresh one for the tests that follow.
        scoped = writeTokenKubeconfig(
          tc,
          (await tc.kubectl(kubectl.path, ["create", "token", SA])).stdout.trim(),
          `scoped-again-${kubectl.version}`,
        );
      });
    });
  }

  test("the admin can review a token and another subject's access (TokenReview, SubjectAccessReview)", async () => {
    const token = (await tc.kubectl(NEWEST.path, ["create", "token", SA])).stdout.trim();
    const review = await tc.kubectl(
      NEWEST.path,
      ["create", "--raw", "/apis/authentication.k8s.io/v1/tokenreviews", "-f", "-"],
      {
        stdin: JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } }),
      },
    );
    assert.equal(review.code, 0, review.stderr);
    assert.equal(JSON.parse(review.stdout).status.user.username, USER);
    const access = await tc.kubectl(
      NEWEST.path,
      ["create", "--raw", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "-f", "-"],
      {
        stdin: JSON.stringify({
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: {
            user: USER,
            groups: ["system:authenticated"],
            resourceAttributes: { namespace: NAMESPACE, verb: "list", resource: "pods" },
          },
        }),
      },
    );
    assert.equal(access.code, 0, access.stderr);
    assert.deepEqual(JSON.parse(access.stdout).status, {
      allowed: true,
      reason: `RBAC: allowed by RoleBinding "${SA}/${NAMESPACE}" of Role "${SA}" to ServiceAccount "${SA}/${NAMESPACE}"`,
    });
    const scoped = writeTokenKubeconfig(tc, token, "reviewer");
    assert.match(
      lastLine(
        await runKubectl(
          NEWEST.path,
          scoped,
          ["create", "--raw", "/apis/authentication.k8s.io/v1/tokenreviews", "-f", "-"],
          { stdin: "{}" },
        ),
      ),
      /cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope/,
    );
  });

  test("the admin endpoints on the API port are the admin's only", async () => {
    const token = (await tc.kubectl(NEWEST.path, ["create", "token", SA])).stdout.trim();
    const r = await runKubectl(NEWEST.path, writeTokenKubeconfig(tc, token, "faults"), ["get", "--raw", "/_faults"]);
    assert.match(lastLine(r), /Error from server \(Forbidden\): .*cannot get path "\/_faults"/);
  });
});

describe(
  "exec is authorized like kube-apiserver 1.35: get and create on pods/exec",
  { skip: skipContainers ?? false },
  () => {
    let tc: TestCluster;
    let pod: string;
    let scoped: string;
    before(async () => {
      tc = await startTestCluster({ tls: true });
      for (const args of [
        ["create", "serviceaccount", SA],
        ["create", "rolebinding", SA, `--role=${SA}`, `--serviceaccount=${NAMESPACE}:${SA}`],
        ["create", "-f", "-"],
      ]) {
        const r = await tc.kubectl(
          NEWEST.path,
          args,
          args[1] === "-f" ? { stdin: buildJobManifest({ name: "exec-auth" }) } : {},
        );
        assert.equal(r.code, 0, r.stderr);
      }
      pod = await waitForRunningPod(tc, "exec-auth");
      scoped = writeTokenKubeconfig(tc, (await tc.kubectl(NEWEST.path, ["create", "token", SA])).stdout.trim(), "exec");
    });
    after(async () => {
      await tc?.cluster.stop();
    });

    const cases: ReadonlyArray<{ title: string; rules: object[]; refusal?: RegExp }> = [
      {
        title: "runs with get on pods and get+create on pods/exec",
        rules: [
          { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
          { apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"] },
        ],
      },
      {
        title: "is refused create without it",
        rules: [
          { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
          { apiGroups: [""], resources: ["pods/exec"], verbs: ["get"] },
        ],
        refusal: /cannot create resource "pods\/exec"/,
      },
      {
        title: "is refused get without it, and kubectl's SPDY retry gets the same answer",
        rules: [
          { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
          { apiGroups: [""], resources: ["pods/exec"], verbs: ["create"] },
        ],
        refusal: /cannot get resource "pods\/exec"/,
      },
      {
        title: "is refused before the upgrade without get on the pod itself",
        rules: [{ apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"] }],
        refusal: /cannot get resource "pods" in API group ""/,
      },
    ];
    for (const c of cases) {
      test(c.title, async () => {
        await applyRole(tc, c.rules);
        for (const kubectl of listKubectlBinaries()) {
          const r = await runKubectl(kubectl.path, scoped, ["exec", "-i", pod, "-c", "run", "--", "cat"], {
            stdin: "through\n",
          });
          if (!c.refusal) {
            assert.deepEqual([r.code, r.stdout], [0, "through\n"], r.stderr);
            continue;
          }
          assert.equal(r.code, 1, `kubectl ${kubectl.version}: ${r.stderr}`);
          assert.match(
            lastLine(r),
            new RegExp(
              `^Error from server \\(Forbidden\\): pods "${pod}" is forbidden: User "${USER}" ${c.refusal.source}`,
            ),
            `kubectl ${kubectl.version}`,
          );
        }
      });
    }
  },
);
