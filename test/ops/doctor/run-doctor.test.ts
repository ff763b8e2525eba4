// doctor against a scripted kubectl: a healthy namespace-scoped credential, a missing permission, a down cluster, and the rest.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatDoctorJson, formatDoctorReport, runDoctor } from "../../../src/ops/doctor/run-doctor.js";
import { ScriptedKubectl, type RecordedCall } from "../../support/scripted-kubectl.js";
import { makeJwt } from "./kubeconfig-credential.test.js";

const NOW = Date.parse("2026-06-01T12:00:00.000Z");
const FORBIDDEN = (what: string) => ({
  exitCode: 1,
  stderr: `Error from server (Forbidden): ${what} is forbidden: User "system:serviceaccount:ci:knotless" cannot get resource\n`,
});
const REFUSED = {
  exitCode: 1,
  stderr: "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?\n",
};
const CLIENT = JSON.stringify({ clientVersion: { major: "1", minor: "33", gitVersion: "v1.33.1" } });

interface Cluster {
  /** Verbs (`patch jobs`, `create pods/exec`) the credential may not use in the namespace. */
  readonly denied?: readonly string[];
  readonly admin?: boolean;
  readonly scoped?: boolean;
  readonly token?: string;
  readonly namespaceMissing?: boolean;
}

/** The answers of a SelfSubjectAccessReview List: allowed unless the verb is denied. */
function answerReviews(call: RecordedCall, cluster: Cluster): string {
  const list = JSON.parse(call.stdin ?? "{}") as {
    items?: Array<{ spec: { resourceAttributes: Record<string, string> } }>;
    kind?: string;
  };
  if (list.kind !== "List")
    return JSON.stringify({
      status: { userInfo: { username: cluster.scoped ? "system:serviceaccount:ci:knotless" : "admin" } },
    });
  return (list.items ?? [])
    .map((item) => {
      const a = item.spec.resourceAttributes;
      const what = `${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ""}`;
      const allowed = a.verb === "*" ? (cluster.admin ?? false) : !(cluster.denied ?? []).includes(what);
      return JSON.stringify({ ...item, status: { allowed } }, null, 4);
    })
    .join("\n");
}

function scriptCluster(cluster: Cluster = {}): ScriptedKubectl {
  const kubectl = new ScriptedKubectl({ binary: "/usr/bin/kubectl" });
  const user = cluster.token === undefined ? { "client-certificate-data": "eA==" } : { token: cluster.token };
  kubectl.on("version", { stdout: CLIENT }, (call) => call.command.includes("--client"));
  kubectl.on("version", {
    stdout: JSON.stringify({
      ...JSON.parse(CLIENT),
      serverVersion: { major: "1", minor: "32", gitVersion: "v1.32.3+k3s1" },
    }),
  });
  kubectl.on("config view", {
    stdout: JSON.stringify({
      clusters: [{ cluster: { server: "https://gw.example" } }],
      users: [{ user }],
      contexts: [{ context: { namespace: "ci" } }],
    }),
  });
  kubectl.on(
    "get namespace",
    cluster.scoped
      ? FORBIDDEN('namespaces "ci"')
      : cluster.namespaceMissing
        ? { exitCode: 1, stderr: 'Error from server (NotFound): namespaces "ci" not found\n' }
        : { stdout: JSON.stringify({ status: { phase: "Active" } }) },
  );
  kubectl.on(
    "create",
    cluster.namespaceMissing
      ? { exitCode: 1, stderr: 'Error from server (NotFound): namespaces "ci" not found\n' }
      : { stdout: "{}" },
    (call) => call.command.includes("--dry-run=server"),
  );
  kubectl.on("create", (call) => ({ stdout: answerReviews(call, cluster) }));
  kubectl.on("get nodes", cluster.scoped ? FORBIDDEN("nodes") : { stdout: JSON.stringify({ items: [] }) });
  return kubectl;
}

const OPTIONS = {
  target: {},
  requestTimeoutMs: 5000,
  callTimeoutMs: 5000,
  expiryWarningMs: 24 * 3_600_000,
  now: () => NOW,
};
const statusOf = (report: Awaited<ReturnType<typeof runDoctor>>) =>
  Object.fromEntries(report.checks.map((c) => [c.name, c.status]));

describe("runDoctor", () => {
  it("passes a namespace-scoped credential: namespace checked by a dry-run create, nodes not visible, token expiry from its JWT", async () => {
    const token = makeJwt({ exp: NOW / 1000 + 30 * 86_400, sub: "system:serviceaccount:ci:knotless" });
    const kubectl = scriptCluster({ scoped: true, token });
    const report = await runDoctor(kubectl.cluster(), OPTIONS);
    assert.equal(report.namespace, "ci", "the context's namespace");
    assert.deepEqual(statusOf(report), {
      kubectl: "ok",
      cluster: "ok",
      namespace: "ok",
      "permission events": "ok",
      "permission pods": "ok",
      "permission pods/exec": "ok",
      "permission pods/log": "ok",
      "permission jobs.batch": "ok",
      "permission leases.coordination.k8s.io": "ok",
      "permission poddisruptionbudgets.policy": "ok",
      credential: "ok",
      nodes: "skip",
    });
    const text = formatDoctorReport(report);
    assert.match(
      text,
      /^ok +namespace +ci accepts Jobs \(namespaces are not readable by this credential; checked with a server-side dry run\)$/m,
    );
    assert.match(text, /^ok +permission jobs\.batch +create, delete, get, list, patch, watch in ci$/m);
    assert.match(
      text,
      /^ok +credential +user system:serviceaccount:ci:knotless; token \(JWT for system:serviceaccount:ci:knotless\), expires in 720h00m \(2026-07-01T12:00:00\.000Z\)$/m,
    );
    assert.match(text, /^skip +nodes +not visible to this credential/m);
    assert.match(text, /^doctor: ready$/m);
    assert.ok(!text.includes(token), "the token is never printed");
    const reviews = kubectl.calls.find(
      (call) => call.command[0] === "create" && call.stdin?.includes("SelfSubjectAccessReview"),
    );
    assert.ok(reviews && reviews.args.includes("--validate=false"), "the reviews go through create -f -, as JSON");
  });

  it("fails a credential missing one permission, naming the verb: the RBAC work's 'no', as kubectl would get it", async () => {
    const report = await runDoctor(scriptCluster({ scoped: true, denied: ["patch jobs"] }).cluster(), OPTIONS);
    const jobs = report.checks.find((c) => c.name === "permission jobs.batch")!;
    assert.deepEqual(jobs, {
      name: "permission jobs.batch",
      status: "fail",
      summary: "missing in ci: patch (needs create, delete, get, list, patch, watch)",
    });
    assert.equal(JSON.parse(formatDoctorJson(report)).ok, false);
    assert.match(formatDoctorReport(report), /^doctor: 1 failed, 0 warnings$/m);
  });

  describe("with --cache-pvc", () => {
    const claim = (spec: object, status: object, metadata: object = {}) => ({
      stdout: JSON.stringify({ metadata: { name: "cache", ...metadata }, spec, status }),
    });
    const RWX = { accessModes: ["ReadWriteMany"] };
    const BOUND = { phase: "Bound", capacity: { storage: "20Gi" } };
    const checkWith = async (reply: { stdout?: string; exitCode?: number; stderr?: string }) => {
      const kubectl = scriptCluster({ admin: true }).on("get persistentvolumeclaims", reply);
      const report = await runDoctor(kubectl.cluster(), { ...OPTIONS, cacheClaim: "cache" });
      const [call] = kubectl.callsTo("get persistentvolumeclaims");
      assert.deepEqual(call?.command.slice(0, 3), ["get", "persistentvolumeclaims", "cache"]);
      assert.ok(
        call?.args.includes("--namespace") && call.args[call.args.indexOf("--namespace") + 1] === "ci",
        "in the namespace checked",
      );
      return report.checks.find((c) => c.name === "cache claim");
    };

    it("passes a Bound ReadWriteMany claim and says its size", async () => {
      assert.deepEqual(await checkWith(claim(RWX, BOUND)), {
        name: "cache claim",
        status: "ok",
        summary: "cache exists (Bound, 20Gi, ReadWriteMany)",
      });
    });

    it("fails a claim that does not exist or is being deleted", async () => {
      const missing = await checkWith({
        exitCode: 1,
        stderr: 'Error from server (NotFound): persistentvolumeclaims "cache" not found\n',
      });
      assert.equal(missing?.status, "fail");
      assert.match(missing!.summary, /^cache does not exist in ci: create it once/);
      assert.equal((await checkWith(claim(RWX, BOUND, { deletionTimestamp: "2026-06-01T00:00:00Z" })))?.status, "fail");
    });

    it("warns of a claim only one node can mount, or one not Bound", async () => {
      assert.match(
        (await checkWith(claim({ accessModes: ["ReadWriteOnce"] }, BOUND)))!.summary,
        /only pods on one node can mount it/,
      );
      assert.equal((await checkWith(claim(RWX, { phase: "Pending" })))?.status, "warn");
    });

    it("skips a claim the credential may not read: a run itself never reads it", async () => {
      assert.equal((await checkWith(FORBIDDEN('persistentvolumeclaims "cache"')))?.status, "skip");
    });

    it("is no check, and no call, without --cache-pvc", async () => {
      const kubectl = scriptCluster({ admin: true });
      const report = await runDoctor(kubectl.cluster(), OPTIONS);
      assert.equal(
        report.checks.some((c) => c.name === "cache claim"),
        false,
      );
      assert.deepEqual(kubectl.callsTo("get persistentvolumeclaims"), []);
    });
  });

  it("warns of a cluster-admin credential and points at the credentials command", async () => {
    const report = await runDoctor(scriptCluster({ admin: true }).cluster(), OPTIONS);
    const credential = report.checks.find((c) => c.name === "credential")!;
    assert.equal(credential.status, "warn");
    assert.match(credential.summary, /cluster-admin .*knotless-runner-k8s credentials/);
    assert.equal(
      report.checks.find((c) => c.name === "nodes")!.summary,
      "none now: the first run waits for one to be rented (scale from zero, minutes)",
    );
    assert.ok(!report.checks.some((c) => c.status === "fail"));
  });

  it("fails an expired token and warns of one that expires within a day", async () => {
    const expired = await runDoctor(scriptCluster({ token: makeJwt({ exp: NOW / 1000 - 60 }) }).cluster(), OPTIONS);
    assert.equal(expired.checks.find((c) => c.name === "credential")!.status, "fail");
    const soon = await runDoctor(scriptCluster({ token: makeJwt({ exp: NOW / 1000 + 3600 }) }).cluster(), OPTIONS);
    assert.equal(soon.checks.find((c) => c.name === "credential")!.status, "warn");
    const opaque = await runDoctor(scriptCluster({ token: "static-token" }).cluster(), OPTIONS);
    assert.match(opaque.checks.find((c) => c.name === "credential")!.summary, /token, expiry unknown/);
  });

  it("fails a namespace that does not exist, whether it can be read or only probed", async () => {
    for (const scoped of [false, true]) {
      const report = await runDoctor(scriptCluster({ namespaceMissing: true, scoped }).cluster(), OPTIONS);
      const check = report.checks.find((c) => c.name === "namespace")!;
      assert.equal(check.status, "fail");
      assert.match(check.summary, /^ci does not exist/);
    }
  });

  it("fails once and skips the rest when the cluster cannot be reached", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("version", { stdout: CLIENT }, (call) => call.command.includes("--client"));
    kubectl.on("config view", {
      stdout: JSON.stringify({
        clusters: [{ cluster: { server: "http://127.0.0.1:1" } }],
        users: [{ user: {} }],
        contexts: [{ context: {} }],
      }),
    });
    for (const command of ["version", "get", "create"]) kubectl.on(command, REFUSED);
    const report = await runDoctor(kubectl.cluster(), OPTIONS);
    assert.equal(report.checks.find((c) => c.name === "cluster")!.status, "fail");
    assert.match(
      report.checks.find((c) => c.name === "cluster")!.summary,
      /^not reachable at http:\/\/127\.0\.0\.1:1: The connection/,
    );
    assert.deepEqual([...new Set(report.checks.slice(2).map((c) => c.status))], ["skip"]);
  });

  it("fails once and skips the rest when the API server does not accept the credential", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("version", { stdout: CLIENT }, (call) => call.command.includes("--client"));
    kubectl.on("config view", {
      stdout: JSON.stringify({
        clusters: [{ cluster: { server: "https://gw.example" } }],
        users: [{ user: { token: "revoked" } }],
        contexts: [{ context: {} }],
      }),
    });
    for (const command of ["version", "get", "create"])
      kubectl.on(command, { exitCode: 1, stderr: "error: You must be logged in to the server (Unauthorized)\n" });
    const report = await runDoctor(kubectl.cluster(), OPTIONS);
    assert.deepEqual(
      report.checks.find((c) => c.name === "cluster"),
      {
        name: "cluster",
        status: "fail",
        summary:
          "reachable at https://gw.example, but it does not accept the credential (unknown, expired or revoked): error: You must be logged in to the server (Unauthorized)",
      },
    );
    assert.deepEqual(
      [...new Set(report.checks.slice(2).map((c) => `${c.status}: ${c.summary}`))],
      ["skip: the API server does not accept the credential"],
    );
  });

  it("bounds every call: a cluster that never answers fails the check within the call timeout", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("version", { stdout: CLIENT }, (call) => call.command.includes("--client"));
    kubectl.on("config view", { stdout: "{}" });
    for (const command of ["version", "get", "create"]) kubectl.on(command, { hang: true });
    const started = Date.now();
    const report = await runDoctor(kubectl.cluster(), { ...OPTIONS, callTimeoutMs: 200 });
    // The calls hang for ever without the bound; 20 s is what a busy machine cannot add to the 200 ms.
    assert.ok(Date.now() - started < 20_000, `${Date.now() - started} ms`);
    assert.match(report.checks.find((c) => c.name === "cluster")!.summary, /no answer within 200ms/);
  });

  it("fails the kubectl check and stops when kubectl cannot run", async () => {
    const kubectl = new ScriptedKubectl({ binary: "/nowhere/kubectl" });
    kubectl.on("", { spawnError: "ENOENT" });
    const report = await runDoctor(kubectl.cluster(), OPTIONS);
    assert.deepEqual(
      report.checks.map((c) => [c.name, c.status]),
      [
        ["kubectl", "fail"],
        ["cluster", "skip"],
      ],
    );
    assert.match(report.checks[0]!.summary, /cannot run kubectl at "\/nowhere\/kubectl": ENOENT/);
  });

  it("names the api transport instead of kubectl, and fails a server before 1.30 naming --transport kubectl", async () => {
    const asApi = (
      cluster: ReturnType<ScriptedKubectl["cluster"]>,
      server?: { gitVersion: string; major: number; minor: number },
    ) =>
      new Proxy(cluster, {
        get(target, prop) {
          if (prop === "describeTransport") return async () => ({ name: "api" });
          if (prop === "getServerVersion" && server) return async () => server;
          const value = Reflect.get(target, prop) as unknown;
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const healthy = await runDoctor(asApi(scriptCluster({ admin: false }).cluster()), OPTIONS);
    const transport = healthy.checks.find((c) => c.name === "transport");
    assert.equal(transport?.status, "ok");
    assert.match(transport?.summary ?? "", /^api: the Kubernetes API spoken in-process \(no kubectl\)/);
    assert.equal(
      healthy.checks.some((c) => c.name === "kubectl"),
      false,
    );
    assert.equal(statusOf(healthy).cluster, "ok");
    const old = await runDoctor(
      asApi(scriptCluster().cluster(), { gitVersion: "v1.29.4", major: 1, minor: 29 }),
      OPTIONS,
    );
    const cluster = old.checks.find((c) => c.name === "cluster");
    assert.equal(cluster?.status, "fail");
    assert.match(
      cluster?.summary ?? "",
      /v1\.29\.4: the api transport's exec \(WebSocket v5\.channel\.k8s\.io\) needs 1\.30 or later; use --transport kubectl/,
    );
  });
});
