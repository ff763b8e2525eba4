// The scoped credential proven minimal and sufficient on the local cluster (TLS, RBAC, podman) through the API transport (the default) and the real kubectl 1.30 and 1.33.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { parse } from "yaml";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { buildRoleRules } from "../../src/ops/credentials/credential-objects.js";
import { readOurJob } from "../../src/executor/kubernetes/create-job.js";
import { DEFAULT_TIMINGS } from "../../src/executor/kubernetes/context.js";
import { buildListJobsArgs } from "../../src/cluster/kubectl/kubectl-args.js";
import { collectCallPermissions, type ApiPermission } from "../../src/cluster/permissions.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import { openApiCluster } from "../../src/cluster/api/open-api-cluster.js";
import { ForbiddenError } from "../../src/cluster/errors.js";
import { buildInstanceLease } from "../../src/manifests/instance-lease.js";
import { exampleSettings } from "../support/example-settings.js";
import { makeWorkspace, readResult, REPO_ROOT, runCli, startCli, type CliRun } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

/** Async on purpose: the cluster serves from this process, so a synchronous kubectl call would deadlock. */
const execFileAsync = promisify(execFile);
const SDK = "/usr/lib/google-cloud-sdk/bin";
const KUBECTLS = ["1.30", "1.33"]
  .map((version) => ({ version, path: join(SDK, `kubectl.${version}`) }))
  .filter((k) => existsSync(k.path));
const NEWEST = KUBECTLS.at(-1)?.path ?? "kubectl";
/** A way to the cluster as the tests name it: the API transport, or a real kubectl through --transport kubectl. */
interface Via {
  readonly name: string;
  /** The kubectl binary, absent for the API transport. */
  readonly path?: string;
  readonly version?: string;
}
const API: Via = { name: "the api transport" };
const VIA_KUBECTLS: Via[] = KUBECTLS.map((k) => ({ name: `kubectl ${k.version}`, path: k.path, version: k.version }));
const transportArgs = (via: Via): string[] =>
  via.path ? ["--transport", "kubectl", "--kubectl", via.path] : ["--transport", "api"];
const NAMESPACE = "ci";
const NAME = "knotless-runner";
const USER = `system:serviceaccount:${NAMESPACE}:${NAME}`;
const EXAMPLE_STEPS = readFileSync(join(REPO_ROOT, "examples", "hello", "steps.tsv"), "utf8");

function podmanWorks(): boolean {
  return spawnSync("podman", ["image", "exists", "docker.io/library/busybox:1.36"], { stdio: "ignore" }).status === 0;
}
const skip =
  podmanWorks() && KUBECTLS.length > 0
    ? false
    : "podman with the local busybox image, or the pinned kubectl binaries, are not available";

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) assert.fail(`${what} not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A kubectl in front of the real one that records every argv, one argument per line, so a test can look for the token in them. */
function writeRecordingKubectl(real: string): { path: string; argv: () => string } {
  const dir = makeTestTempDir("recording-kubectl-");
  const path = join(dir, "kubectl");
  writeFileSync(path, `#!/bin/sh\nprintf '%s\\n' "$@" >> "$0.argv"\nexec ${real} "$@"\n`);
  chmodSync(path, 0o755);
  return { path, argv: () => (existsSync(`${path}.argv`) ? readFileSync(`${path}.argv`, "utf8") : "") };
}

function tokenOf(kubeconfig: string): string {
  return (parse(readFileSync(kubeconfig, "utf8")) as { users: [{ user: { token: string } }] }).users[0].user.token;
}

describe("the scoped credential on the local cluster", { skip, concurrency: 1, timeout: 2_400_000 }, () => {
  let cluster: LocalCluster;
  /** The scoped kubeconfig the tests after the first one run with. */
  let scoped: string;
  const admin = (args: readonly string[], stdin?: string): Promise<{ stdout: string; stderr: string }> => {
    const child = execFileAsync(NEWEST, ["--kubeconfig", cluster.kubeconfigPath, "--namespace", NAMESPACE, ...args], {
      encoding: "utf8",
    });
    child.child.stdin?.end(stdin ?? "");
    return child;
  };
  const credentials = (args: readonly string[], via: Via = API): Promise<CliRun> =>
    runCli([
      "credentials",
      "--namespace",
      NAMESPACE,
      "--kubeconfig",
      cluster.kubeconfigPath,
      ...transportArgs(via),
      ...args,
    ]);
  const runScoped = (
    steps: string,
    via: Via = API,
    extra: readonly string[] = [],
  ): Promise<{ cli: CliRun; out: string; ms: number }> => {
    const ws = makeWorkspace(steps);
    const started = Date.now();
    return runCli(
      [
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--shared-steps",
        ws.sharedSteps,
        "--out",
        ws.out,
        "--kubeconfig",
        scoped,
        ...transportArgs(via),
        ...extra,
      ],
      { timeoutMs: 300_000 },
    ).then((cli) => ({ cli, out: ws.out, ms: Date.now() - started }));
  };
  /** Replaces the Role with one of these permissions (what a Role without one rule looks like). */
  const applyRole = async (permissions: readonly ApiPermission[]): Promise<void> => {
    const role = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: NAME, namespace: NAMESPACE },
      rules: buildRoleRules(permissions),
    };
    await admin(["apply", "-f", "-"], JSON.stringify(role));
  };
  const assertNothingLeft = async (): Promise<void> => {
    await waitFor("podman containers gone", async () => (await cluster.podmanContainers()).length === 0, 30_000);
    assert.deepEqual(
      cluster.objects("jobs.batch").map((j) => j.metadata.name),
      [],
    );
    await waitFor("pods gone from the server", () => cluster.objects("pods").length === 0, 30_000);
    await waitFor(
      "budgets gone from the server",
      () => cluster.objects("poddisruptionbudgets.policy").length === 0,
      30_000,
    );
  };

  before(async () => {
    cluster = await startLocalCluster({ tls: true, namespace: NAMESPACE, imageBackOffSeconds: 1 });
    scoped = join(makeTestTempDir("scoped-"), "runner.kubeconfig");
  });
  after(async () => {
    await cluster?.stop();
  });

  for (const kubectl of KUBECTLS) {
    it(`creates the ServiceAccount, a Role of exactly the runner's permissions and its binding, writes a 0600 kubeconfig, and changes nothing the second time (kubectl ${kubectl.version})`, async () => {
      const recording = writeRecordingKubectl(kubectl.path);
      const first = await credentials(["--out", scoped], { name: kubectl.version, path: recording.path });
      assert.equal(first.code, 0, first.stderr);
      assert.match(
        first.stdout,
        /serviceaccount\/knotless-runner (created|unchanged)\n\s+role\.rbac\.authorization\.k8s\.io\/knotless-runner (created|unchanged)/,
      );
      assert.equal(statSync(scoped).mode & 0o777, 0o600);

      const [account] = cluster.objects("serviceaccounts", NAMESPACE).filter((o) => o.metadata.name === NAME);
      assert.ok(account, "the ServiceAccount is stored");
      const [role] = cluster
        .objects("roles.rbac.authorization.k8s.io", NAMESPACE)
        .filter((o) => o.metadata.name === NAME);
      assert.deepEqual(role?.rules, buildRoleRules(collectCallPermissions()));
      const [binding] = cluster
        .objects("rolebindings.rbac.authorization.k8s.io", NAMESPACE)
        .filter((o) => o.metadata.name === NAME);
      assert.deepEqual(binding?.subjects, [{ kind: "ServiceAccount", name: NAME, namespace: NAMESPACE }]);
      assert.deepEqual(cluster.objects("clusterrolebindings.rbac.authorization.k8s.io"), [], "no cluster-scoped grant");

      const firstToken = tokenOf(scoped);
      const issued = cluster.issuedTokens().at(-1)!;
      assert.equal(issued.serviceAccount, NAME);
      assert.ok(Math.abs(issued.expiresAt - issued.issuedAt - 24 * 3_600_000) < 1000, "24h by default");

      const second = await credentials(["--out", scoped], { name: kubectl.version, path: recording.path });
      assert.equal(second.code, 0, second.stderr);
      for (const ref of ["serviceaccount", "role.rbac.authorization.k8s.io", "rolebinding.rbac.authorization.k8s.io"])
        assert.match(second.stdout, new RegExp(`${ref}/knotless-runner unchanged`));
      assert.match(second.stdout, /objects unchanged; a fresh token was issued and the file rewritten/);
      const secondToken = tokenOf(scoped);
      assert.notEqual(secondToken, firstToken, "rotation: a fresh token");
      assert.equal(statSync(scoped).mode & 0o777, 0o600);

      for (const token of [firstToken, secondToken]) {
        for (const said of [first.stdout, first.stderr, second.stdout, second.stderr, recording.argv()])
          assert.ok(!said.includes(token), "the token is never printed nor in argv");
      }
      const whoami = await execFileAsync(kubectl.path, ["--kubeconfig", scoped, "auth", "whoami", "-o", "json"], {
        encoding: "utf8",
      });
      assert.equal(JSON.parse(whoami.stdout).status.userInfo.username, USER);
    });

    it(`runs the example's four steps with the scoped kubeconfig through kubectl ${kubectl.version} and leaves nothing behind`, async () => {
      const { cli, out } = await runScoped(EXAMPLE_STEPS, { name: kubectl.version, path: kubectl.path });
      assert.equal(cli.code, 0, cli.stderr);
      const result = readResult(out);
      assert.deepEqual(
        result.steps.map((s) => s.status),
        ["success", "success", "success", "success"],
      );
      assert.equal(result.job.namespace, NAMESPACE, "the namespace pinned in the kubeconfig");
      assert.match(cli.stdout, /hello from a shared step/);
      await assertNothingLeft();
    });
  }

  it("honours --duration and refuses to write into an existing file with looser permissions, touching nothing", async () => {
    const other = join(makeTestTempDir("loose-"), "runner.kubeconfig");
    writeFileSync(other, "", { mode: 0o644 });
    const refused = await credentials(["--out", other, "--name", "never-made"]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /exists with mode 0644/);
    assert.deepEqual(
      cluster.objects("serviceaccounts", NAMESPACE).filter((o) => o.metadata.name === "never-made"),
      [],
    );
    assert.equal(readFileSync(other, "utf8"), "");
    const fresh = join(makeTestTempDir("short-"), "runner.kubeconfig");
    const short = await credentials(["--out", fresh, "--name", "short-lived", "--duration", "30m"]);
    assert.equal(short.code, 0, short.stderr);
    const issued = cluster.issuedTokens().at(-1)!;
    assert.ok(Math.abs(issued.expiresAt - issued.issuedAt - 30 * 60_000) < 1000);
    assert.equal((await credentials(["--revoke", "--name", "short-lived", "--out", fresh])).code, 0);
  });

  it("reports a failing step's exit code with the scoped kubeconfig", async () => {
    const { cli, out } = await runScoped("ok\ttrue\nfail\texit 4\nlater\ttrue\n");
    assert.equal(cli.code, 1, cli.stderr);
    assert.deepEqual(
      readResult(out).steps.map((s) => [s.status, s.exitCode]),
      [
        ["success", 0],
        ["failed", 4],
        ["skipped", null],
      ],
    );
    await assertNothingLeft();
  });

  it("stops a timed-out step that ignores SIGTERM with the scoped kubeconfig", async () => {
    const { cli, out } = await runScoped("stubborn\ttrap '' TERM; (trap '' TERM; sleep 1000) & sleep 1000\n", API, [
      "--step-timeout",
      "3s",
    ]);
    assert.equal(cli.code, 1, cli.stderr);
    const result = readResult(out);
    assert.equal(result.status, "timeout");
    assert.equal(result.steps[0]!.timedOut, true);
    assert.equal(result.error, null);
    await assertNothingLeft();
  });

  it("cancels a run from another process, and gc removes one whose runner was killed with SIGKILL while sparing the live one, with the scoped kubeconfig", async () => {
    const waiting = "wait\techo step-waits; sleep 300\n";
    const env = { KNOTLESS_HEARTBEAT_INTERVAL: "1s" };
    const start = (runId: string) => {
      const ws = makeWorkspace(waiting);
      return startCli(
        [
          "run",
          "--checkout",
          ws.checkout,
          "--steps",
          ws.stepsFile,
          "--out",
          ws.out,
          "--kubeconfig",
          scoped,
          "--run-id",
          runId,
        ],
        { env, timeoutMs: 180_000 },
      );
    };
    const ops = (args: readonly string[]) => runCli([...args, "--kubeconfig", scoped], { env });
    const live = start("scoped-live");
    const doomed = start("scoped-killed");
    await Promise.all([live.waitFor(/^step-waits$/m), doomed.waitFor(/^step-waits$/m)]);
    doomed.kill("SIGKILL");
    await doomed.exited;
    // Far wider than gc's minimum window (twice the 1 s interval): on a loaded CI machine a live run's heartbeat was
    // once seen 7 s old.
    await new Promise((r) => setTimeout(r, 11_000));
    const gc = await ops(["gc", "--stale-after", "10s"]);
    assert.equal(gc.code, 0, gc.stdout + gc.stderr);
    assert.match(
      gc.stdout,
      /^removed +run scoped-killed \(Job knotless-run-scoped-killed\): heartbeat \S+ ago, stale after 10.0s: its runner is gone/m,
      gc.stdout,
    );
    assert.match(
      gc.stdout,
      /^spared +run scoped-live \(Job knotless-run-scoped-live\): heartbeat \S+ ago: its runner is alive/m,
      gc.stdout,
    );
    await waitFor("the killed run's Job gone", () => cluster.objects("jobs.batch", NAMESPACE).length === 1, 15_000);
    const cancel = await ops(["cancel", "scoped-live"]);
    assert.equal(cancel.code, 0, cancel.stdout + cancel.stderr);
    const ended = await live.exited;
    assert.equal(ended.code, 130, ended.stderr);
    await assertNothingLeft();
  });

  it("leaves, claims, tops up and releases warm placeholders with the scoped kubeconfig: they are Jobs, so the Role needs no other verb", async () => {
    const warmJobs = (): string[] =>
      cluster
        .objects("jobs.batch", NAMESPACE)
        .filter((j) => j.metadata.labels?.["knotless.dev/role"] === "warm")
        .map((j) => j.metadata.name);
    const kept = await runScoped("a\ttrue\n", API, ["--keep-warm", "1m"]);
    assert.equal(kept.cli.code, 0, kept.cli.stderr);
    assert.doesNotMatch(kept.cli.stdout + kept.cli.stderr, /forbidden/i);
    assert.deepEqual(warmJobs(), ["knotless-warm-0"], "the run left its placeholder");
    const claimed = await runScoped("a\ttrue\n");
    assert.equal(claimed.cli.code, 0, claimed.cli.stderr);
    assert.equal(readResult(claimed.out).capacity, "warm", "the next run claimed it (list and delete on jobs)");
    await waitFor("the claimed placeholder gone", () => warmJobs().length === 0, 30_000);
    const warm = await runCli(["warm", "--count", "1", "--for", "1m", "--kubeconfig", scoped]);
    assert.equal(warm.code, 0, `${warm.stdout}\n${warm.stderr}`);
    assert.deepEqual(warmJobs(), ["knotless-warm-0"]);
    const release = await runCli(["warm", "--release", "--kubeconfig", scoped]);
    assert.equal(release.code, 0, `${release.stdout}\n${release.stderr}`);
    await waitFor("the released placeholder gone", () => warmJobs().length === 0, 30_000);
    await assertNothingLeft();
  });

  /** Every rule of the Role, one verb at a time: what a run without it does, and the words it must fail with. */
  const RULES = collectCallPermissions().flatMap((rule) => rule.verbs.map((verb) => ({ rule, verb })));
  const denial = (verb: string, resource: string, group: string): RegExp =>
    new RegExp(
      `User "${USER}" cannot ${verb} resource "${resource.replace("/", "\\/")}" in API group "${group}" in the namespace "${NAMESPACE}"`,
    );

  it("has one rule per resource and verb the runner declares, none other", () => {
    assert.deepEqual(
      RULES.map(({ rule, verb }) => `${verb} ${rule.apiGroup}/${rule.resource}`),
      [
        "list /events",
        "watch /events",
        "get /pods",
        "list /pods",
        "watch /pods",
        "create /pods/exec",
        "get /pods/exec",
        "get /pods/log",
        "create batch/jobs",
        "delete batch/jobs",
        "get batch/jobs",
        "list batch/jobs",
        "patch batch/jobs",
        "watch batch/jobs",
        "create coordination.k8s.io/leases",
        "delete coordination.k8s.io/leases",
        "get coordination.k8s.io/leases",
        "list coordination.k8s.io/leases",
        "update coordination.k8s.io/leases",
        "create policy/poddisruptionbudgets",
        "delete policy/poddisruptionbudgets",
        "list policy/poddisruptionbudgets",
      ],
    );
  });

  for (const [index, { rule, verb }] of RULES.entries()) {
    // pods/exec through both kubectls (1.30 upgrades with SPDY, 1.33 with WebSocket, authorized as different verbs);
    // every other rule through one of them, the two taking turns: a refusal of get on pods does not depend on the
    // client's version, and each of these runs costs ~10 s of a CI run.
    // The API transport (the default) is refused every rule.
    const versionsFor: Via[] = [
      API,
      ...(rule.resource === "pods/exec" ? VIA_KUBECTLS : [VIA_KUBECTLS[index % VIA_KUBECTLS.length]!]),
    ];
    const without = collectCallPermissions()
      .map((r) => (r.resource === rule.resource ? { ...r, verbs: r.verbs.filter((v) => v !== verb) } : r))
      .filter((r) => r.verbs.length > 0);
    const title = `without ${verb} on ${rule.resource}`;
    const expected = denial(verb, rule.resource, rule.apiGroup);

    if (rule.resource === "leases") {
      // Only serve's instances hold Leases (serve --instance, --adopt): a run makes no Lease call, so each verb is
      // proven by the call that needs it, through the API transport (kubectl's builders have their own tests).
      it(`${title}, the instance Lease's ${verb} is refused naming ${verb} and leases`, async () => {
        await applyRole(without);
        const api = await openApiCluster({ files: [scoped], explicit: true }, { env: {} });
        const lease = buildInstanceLease(NAMESPACE, { instance: "scoped", durationSeconds: 15, now: Date.now() });
        const calls: Record<string, () => Promise<unknown>> = {
          get: () => api.getLease(NAMESPACE, "knotless-instance-scoped"),
          list: () => api.listLeases(NAMESPACE, "knotless.dev/instance"),
          create: () => api.createLease(NAMESPACE, lease),
          update: () => api.updateLease(NAMESPACE, { ...lease, metadata: { ...lease.metadata, resourceVersion: "1" } }),
          delete: () => api.deleteLease(NAMESPACE, "knotless-instance-scoped"),
        };
        try {
          await assert.rejects(
            calls[verb]!(),
            (error) => error instanceof ForbiddenError && error.verb === verb && expected.test(error.message),
          );
        } finally {
          await api.close();
        }
      });
      continue;
    }

    if (rule.resource === "jobs" && (verb === "get" || verb === "list")) {
      // No step of a normal run makes these calls: `get job` reads back a create that may or may not have happened,
      // `get jobs` lists the runner's Jobs (orphans). They are proven by the runner's own code and builders.
      it(`${title}, the runner's ${verb === "get" ? "read-back of an unconfirmed create" : "listing of its Jobs"} is refused naming ${verb} and jobs`, async () => {
        await applyRole(without);
        const target = { kubeconfig: scoped, namespace: NAMESPACE };
        const api = await openApiCluster({ files: [scoped], explicit: true }, { env: {} });
        try {
          if (verb === "get") {
            const ctx = {
              settings: { ...exampleSettings({ steps: [] }), target },
              timings: DEFAULT_TIMINGS,
              cluster: api,
              emit: () => {},
              signal: new AbortController().signal,
              requestCancel: () => {},
              cleanupSignal: () => new AbortController().signal,
            };
            const found = await readOurJob(ctx, "token");
            assert.ok(found.kind === "unreadable" && found.refused === "forbidden", "through the api transport");
            assert.match(found.kind === "unreadable" ? found.reason : "", expected);
          } else {
            await assert.rejects(
              api.listJobs(NAMESPACE, "app.kubernetes.io/managed-by=knotless-runner-k8s"),
              (error) => error instanceof ForbiddenError && error.verb === "list" && expected.test(error.message),
            );
          }
        } finally {
          await api.close();
        }
        for (const kubectl of KUBECTLS) {
          const client = new Kubectl({ binary: kubectl.path, env: process.env });
          if (verb === "get") {
            const ctx = {
              settings: { ...exampleSettings({ steps: [] }), target },
              timings: DEFAULT_TIMINGS,
              cluster: new KubectlCluster(client, target),
              emit: () => {},
              signal: new AbortController().signal,
              requestCancel: () => {},
              cleanupSignal: () => new AbortController().signal,
            };
            const found = await readOurJob(ctx, "token");
            assert.equal(found.kind, "unreadable", kubectl.version);
            assert.ok(found.kind === "unreadable" && found.refused === "forbidden");
            assert.match(found.kind === "unreadable" ? found.reason : "", expected);
          } else {
            const listed = await client.run(
              buildListJobsArgs(target, "app.kubernetes.io/managed-by=knotless-runner-k8s"),
            );
            assert.equal(listed.exitCode, 1, kubectl.version);
            assert.match(
              listed.stderr,
              new RegExp(`^Error from server \\(Forbidden\\): jobs\\.batch is forbidden: ${expected.source}`, "m"),
            );
          }
        }
      });
      continue;
    }

    if (rule.resource === "pods/log") {
      // Only a workflow's services have their logs read (their last lines): a run without services never asks.
      it(`${title}, a run without services succeeds and a service's log read is refused naming get and pods/log (api and kubectl)`, async () => {
        await applyRole(without);
        const plain = await runScoped("a\ttrue\n");
        assert.equal(plain.cli.code, 0, `${plain.cli.stdout}\n${plain.cli.stderr}`);
        // kubectl logs reads the pod before its log: the pod must exist for the log's refusal to be what answers.
        const pod = {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "log-target", namespace: NAMESPACE },
          spec: {
            terminationGracePeriodSeconds: 0,
            containers: [{ name: "postgres", image: "busybox:1.36", command: ["sleep", "60"] }],
          },
        };
        await admin(["apply", "-f", "-"], JSON.stringify(pod));
        const target = { kubeconfig: scoped, namespace: NAMESPACE };
        const bounds = { tailLines: 10, limitBytes: 4096 };
        const api = await openApiCluster({ files: [scoped], explicit: true }, { env: {} });
        try {
          await assert.rejects(
            api.readContainerLog(NAMESPACE, "log-target", "postgres", bounds),
            (error) => error instanceof ForbiddenError && expected.test(error.message),
          );
        } finally {
          await api.close();
        }
        for (const kubectl of KUBECTLS) {
          const cluster = new KubectlCluster(new Kubectl({ binary: kubectl.path, env: process.env }), target);
          await assert.rejects(
            cluster.readContainerLog(NAMESPACE, "log-target", "postgres", bounds),
            (error) => error instanceof ForbiddenError && expected.test(error.message),
            kubectl.version,
          );
        }
        await admin(["delete", "pod", "log-target", "--wait=false"]);
        await assertNothingLeft();
      });
      continue;
    }

    if (rule.resource === "poddisruptionbudgets" && verb === "delete") {
      // Teardown deletes the budget after the Job; refused, it warns, and the budget goes with its Job (owner reference).
      it(`${title}, the run succeeds, warns naming ${verb} and poddisruptionbudgets, and the budget goes with its Job (api and kubectl)`, async () => {
        await applyRole(without);
        for (const via of [API, VIA_KUBECTLS.at(-1)!]) {
          const { cli, out } = await runScoped("a\ttrue\n", via);
          assert.equal(cli.code, 0, `${via.name}: ${cli.stdout}\n${cli.stderr}`);
          assert.match(readFileSync(join(out, "run.log"), "utf8"), expected, via.name);
          await assertNothingLeft();
        }
      });
      continue;
    }

    if (rule.resource === "poddisruptionbudgets" && verb === "list") {
      // Only gc lists budgets (its orphans): it warns naming the permission and goes on with the Jobs.
      it(`${title}, gc warns naming ${verb} and poddisruptionbudgets and still does its work (api and kubectl)`, async () => {
        await applyRole(without);
        for (const via of [API, VIA_KUBECTLS.at(-1)!]) {
          const gc = await runCli(["gc", "--kubeconfig", scoped, ...transportArgs(via)]);
          assert.equal(gc.code, 0, `${via.name}: ${gc.stdout}\n${gc.stderr}`);
          assert.match(
            gc.stdout,
            new RegExp(
              `^warning: listing the PodDisruptionBudgets: .*${expected.source}.*; orphaned PodDisruptionBudgets were not looked for$`,
              "m",
            ),
            via.name,
          );
        }
      });
      continue;
    }

    if (rule.resource === "jobs" && verb === "watch") {
      // The cancel watch serves the operators, not the steps: without it the run still succeeds and says in its log
      // that a cancel requested through the cluster will not reach it.
      it(`${title}, the run warns naming ${verb} and jobs, and the steps still run (api and kubectl)`, async () => {
        await applyRole(without);
        for (const via of [API, VIA_KUBECTLS.at(-1)!]) {
          const ws = makeWorkspace("slow\tsleep 4\n");
          const runId = `no-${verb}-${Date.now()}`;
          const cli = await runCli(
            [
              "run",
              "--checkout",
              ws.checkout,
              "--steps",
              ws.stepsFile,
              "--out",
              ws.out,
              "--kubeconfig",
              scoped,
              ...transportArgs(via),
              "--run-id",
              runId,
            ],
            { timeoutMs: 120_000 },
          );
          assert.equal(cli.code, 0, `${via.name}: ${cli.stdout}\n${cli.stderr}`);
          assert.match(readFileSync(join(ws.out, "run.log"), "utf8"), expected, via.name);
          await assertNothingLeft();
        }
      });
      continue;
    }

    if (rule.resource === "pods" && verb === "watch") {
      // Only the API transport watches pods (its pod wait shares one watch per namespace); kubectl polls with list.
      it(`${title}, a run through kubectl still succeeds and one through the API transport fails at once with exit 3, forbidden, naming watch and pods`, async () => {
        await applyRole(without);
        const polled = await runScoped("a\ttrue\n", VIA_KUBECTLS.at(-1)!);
        assert.equal(polled.cli.code, 0, `${polled.cli.stdout}\n${polled.cli.stderr}`);
        const ws = makeWorkspace("a\ttrue\n");
        const cli = await runCli(
          [
            "run",
            "--checkout",
            ws.checkout,
            "--steps",
            ws.stepsFile,
            "--out",
            ws.out,
            "--kubeconfig",
            scoped,
            "--transport",
            "api",
            "--run-id",
            `no-watch-pods-${Date.now()}`,
          ],
          { timeoutMs: 120_000 },
        );
        assert.equal(cli.code, 3, `${cli.stdout}\n${cli.stderr}`);
        assert.equal(readResult(ws.out).errorReason, "forbidden");
        assert.match(cli.stdout + cli.stderr, expected);
        await assertNothingLeft();
      });
      continue;
    }

    if (rule.resource === "events" && verb === "watch") {
      // Only the API transport watches events (its pod wait shares one watch per namespace); kubectl polls with list.
      it(`${title}, a run through kubectl still succeeds and one through the API transport fails with exit 3, forbidden, naming watch and events`, async () => {
        await applyRole(without);
        // Hold the pod Pending long enough for its events to be looked at.
        cluster.setFaults({ schedulingDelay: { seconds: 4 } });
        try {
          const polled = await runScoped("a\ttrue\n", VIA_KUBECTLS.at(-1)!);
          assert.equal(polled.cli.code, 0, `${polled.cli.stdout}\n${polled.cli.stderr}`);
          const { cli, out, ms } = await runScoped("a\ttrue\n", API);
          assert.equal(cli.code, 3, `${cli.stdout}\n${cli.stderr}`);
          assert.ok(ms < 60_000, `it took ${ms} ms: no retrying a refusal`);
          assert.equal(readResult(out).errorReason, "forbidden");
          assert.match(readResult(out).error ?? "", /cannot read the events of Pod \S+/);
          assert.match(cli.stdout + cli.stderr, expected);
        } finally {
          cluster.setFaults({});
        }
        await assertNothingLeft();
      });
      continue;
    }

    if (rule.resource === "jobs" && verb === "patch") {
      // Without patch the heartbeat is never refreshed, so gc would take the live run for abandoned and delete it:
      // the run fails at setup instead (the cases below). `cancel` patches too, and is refused.
      it(`${title}, cancel of a run's Job is refused with exit 3 naming patch and jobs`, async () => {
        await applyRole(without);
        const ws = makeWorkspace("a\ttrue\n");
        const runId = `no-patch-cancel-${Date.now()}`;
        // --keep leaves the Job of the run that fails at setup, for cancel to find.
        const cli = await runCli(
          [
            "run",
            "--checkout",
            ws.checkout,
            "--steps",
            ws.stepsFile,
            "--out",
            ws.out,
            "--kubeconfig",
            scoped,
            "--run-id",
            runId,
            "--keep",
          ],
          { timeoutMs: 120_000 },
        );
        assert.equal(cli.code, 3, `${cli.stdout}\n${cli.stderr}`);
        const job = readResult(ws.out).job.name;
        assert.deepEqual(
          cluster.objects("jobs.batch", NAMESPACE).map((j) => j.metadata.name),
          [job],
        );
        const cancel = await runCli(["cancel", runId, "--kubeconfig", scoped]);
        assert.equal(cancel.code, 3, `${cancel.stdout}\n${cancel.stderr}`);
        assert.match(cancel.stderr + cancel.stdout, expected);
        await admin(["delete", "job", job, "--cascade=background"]);
        await assertNothingLeft();
      });
    }

    // kubectl reads the pod (GET pods/NAME) before each exec; the API transport opens the exec directly and never
    // reads a pod by name, so the Role's get on pods is kubectl's alone: without it a run through api succeeds.
    if (rule.resource === "pods" && verb === "get") {
      it(`${title}, a run through the api transport does not need it and succeeds`, async () => {
        await applyRole(without);
        const { cli } = await runScoped("a\techo ran\n", API);
        assert.equal(cli.code, 0, `${cli.stdout}\n${cli.stderr}`);
        await assertNothingLeft();
      });
    }
    for (const via of versionsFor.filter((v) => !(v === API && rule.resource === "pods" && verb === "get"))) {
      it(`${title}, a run through ${via.name} fails at once with exit 3, forbidden, naming ${verb} and ${rule.resource}`, async () => {
        await applyRole(without);
        // Without events list the run must still fail: hold the pod Pending long enough for the events to be read.
        cluster.setFaults(rule.resource === "events" ? { schedulingDelay: { seconds: 4 } } : {});
        const { cli, out, ms } = await runScoped("a\techo ran\nb\ttrue\n", via);
        cluster.setFaults({});
        assert.equal(cli.code, 3, `${cli.stdout}\n${cli.stderr}`);
        assert.ok(ms < 60_000, `it took ${ms} ms: no retrying a refusal`);
        const result = readResult(out);
        assert.equal(result.errorReason, "forbidden", result.error ?? "");
        assert.match(result.error ?? "", expected);
        assert.match(cli.stderr + cli.stdout, expected);
        if (verb === "patch") {
          assert.match(
            result.error ?? "",
            /cannot set the run's heartbeat on Job \S+ \(it needs patch on jobs\.batch; without it gc would take the live run for abandoned\)/,
          );
        }
        if (verb === "delete") {
          // The steps ran; the Job is left, and the message names the command that deletes it.
          assert.deepEqual(
            result.steps.map((s) => s.status),
            ["success", "success"],
          );
          const binary = via.version ? `\\S*kubectl\\.${via.version.replace(".", "\\.")}` : "kubectl";
          // The API transport names the context it used; kubectl leaves it to the kubeconfig.
          assert.match(
            result.error ?? "",
            new RegExp(
              `delete it with: ${binary} --kubeconfig \\S+ (--context \\S+ )?--namespace ci delete job ${result.job.name} --cascade=background`,
            ),
          );
          assert.deepEqual(
            cluster.objects("jobs.batch", NAMESPACE).map((j) => j.metadata.name),
            [result.job.name],
          );
          await admin(["delete", "job", result.job.name, "--cascade=background"]);
        } else {
          assert.ok(
            result.steps.every((s) => s.status !== "success"),
            "no step ran without the permission",
          );
        }
        await assertNothingLeft();
      });
    }
  }

  it("doctor with the scoped kubeconfig fails with exit 3 naming the one verb its Role lacks", async () => {
    const without = collectCallPermissions().map((r) =>
      r.resource === "pods/exec" ? { ...r, verbs: r.verbs.filter((v) => v !== "create") } : r,
    );
    await applyRole(without);
    const doctor = await runCli(["doctor", "--kubeconfig", scoped, "--namespace", NAMESPACE]);
    assert.equal(doctor.code, 3, `${doctor.stdout}\n${doctor.stderr}`);
    const failed = doctor.stdout.split("\n").filter((line) => /^\s*fail\b/.test(line));
    assert.equal(failed.length, 1, doctor.stdout);
    assert.match(failed[0]!, /pods\/exec/);
    assert.match(failed[0]!, /\bcreate\b/);
  });

  it("restores the full Role when credentials runs again, and the run works", async () => {
    const again = await credentials(["--out", scoped]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /role\.rbac\.authorization\.k8s\.io\/knotless-runner configured/);
    const { cli } = await runScoped("a\ttrue\n");
    assert.equal(cli.code, 0, cli.stderr);
    await assertNothingLeft();
  });

  it("cannot read secrets, touch another namespace or the cluster scope", async () => {
    await admin(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "db" },
        stringData: { password: "hunter2" },
      }),
    );
    for (const kubectl of KUBECTLS) {
      const as = (args: readonly string[], stdin?: string) =>
        new Promise<string>((resolve) => {
          const child = execFile(
            kubectl.path,
            ["--kubeconfig", scoped, ...args],
            { encoding: "utf8" },
            (_error, _stdout, stderr) => resolve(stderr),
          );
          child.stdin?.end(stdin ?? "");
        });
      assert.match(await as(["get", "secrets"]), denial("list", "secrets", ""));
      assert.match(
        await as(["get", "secret", "db", "-o", "json"]),
        /secrets "db" is forbidden: .* cannot get resource "secrets"/,
      );
      assert.match(await as(["get", "configmaps"]), denial("list", "configmaps", ""));
      assert.match(
        await as(["get", "pods", "--namespace", "default"]),
        /cannot list resource "pods" in API group "" in the namespace "default"/,
      );
      assert.match(
        await as(
          ["create", "--namespace", "default", "-f", "-"],
          JSON.stringify({
            apiVersion: "batch/v1",
            kind: "Job",
            metadata: { name: "x" },
            spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "a", image: "busybox" }] } } },
          }),
        ),
        /cannot create resource "jobs" in API group "batch" in the namespace "default"/,
      );
      assert.match(
        await as(["get", "jobs", "--all-namespaces"]),
        /cannot list resource "jobs" in API group "batch" at the cluster scope/,
      );
      assert.match(await as(["get", "roles"]), denial("list", "roles", "rbac.authorization.k8s.io"));
      assert.match(await as(["create", "token", NAME]), /cannot create resource "serviceaccounts\/token"/);
    }
  });

  it("fails a run with an expired token at once with exit 3, unauthorized", async () => {
    assert.ok(cluster.expireTokens({ namespace: NAMESPACE, serviceAccount: NAME }) >= 1);
    for (const via of [API, ...VIA_KUBECTLS]) {
      const { cli, out, ms } = await runScoped("a\ttrue\n", via);
      assert.equal(cli.code, 3, `${via.name}: ${cli.stderr}`);
      assert.ok(ms < 60_000, `${ms} ms`);
      const result = readResult(out);
      assert.equal(result.errorReason, "unauthorized", result.error ?? "");
      assert.match(
        result.error ?? "",
        /unknown, expired or revoked; `knotless-runner-k8s credentials` issues a fresh one/,
      );
    }
    assert.deepEqual(cluster.objects("jobs.batch"), []);
  });

  it("revokes everything, after which the kubeconfig fails the same way, and a second revoke changes nothing", async () => {
    const fresh = await credentials(["--out", scoped]);
    assert.equal(fresh.code, 0, fresh.stderr);
    const kept = join(makeTestTempDir("kept-"), "copy.kubeconfig");
    writeFileSync(kept, readFileSync(scoped), { mode: 0o600 });
    const revoked = await credentials(["--revoke", "--out", scoped]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(
      revoked.stdout,
      /serviceaccount\/knotless-runner deleted[\s\S]*role\.rbac\.authorization\.k8s\.io\/knotless-runner deleted[\s\S]*rolebinding\.rbac\.authorization\.k8s\.io\/knotless-runner deleted/,
    );
    assert.ok(!existsSync(scoped), "the kubeconfig is removed");
    for (const key of [
      "serviceaccounts",
      "roles.rbac.authorization.k8s.io",
      "rolebindings.rbac.authorization.k8s.io",
    ]) {
      assert.deepEqual(
        cluster.objects(key, NAMESPACE).filter((o) => o.metadata.name === NAME),
        [],
        key,
      );
    }
    scoped = kept;
    const { cli, out } = await runScoped("a\ttrue\n");
    assert.equal(cli.code, 3, cli.stderr);
    assert.equal(readResult(out).errorReason, "unauthorized");
    const twice = await credentials(["--revoke"]);
    assert.equal(twice.code, 0, twice.stderr);
    assert.match(twice.stdout, /nothing to revoke/);
  });
});
