// End to end: workflow services on the local cluster through the real CLI: PostgreSQL ready before the first step
// and used by it, and a service that never becomes ready failing the run fast with its name and last log lines.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason } from "../support/local-cluster-e2e.js";
import { makeWorkspace, readResult, runCli } from "../support/run-cli.js";

const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const POSTGRES_IMAGE = "localhost/knotless-postgres:bookworm";
const BUSYBOX = "docker.io/library/busybox:1.36";

function findSkipReason(): string | false {
  const podman = findPodmanSkipReason();
  if (podman) return podman;
  const postgres = spawnSync("podman", ["image", "exists", POSTGRES_IMAGE], { stdio: "ignore" }).status === 0;
  return postgres
    ? false
    : `the local ${POSTGRES_IMAGE} image is not there (scripts/setup-containers.sh builds it with debootstrap, unless KNOTLESS_SKIP_POSTGRES=1)`;
}

describe("workflow services on the local cluster", { skip: findSkipReason(), timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await startLocalCluster({ namespace: "ci" });
  });
  after(async () => {
    await cluster?.stop();
  });

  it("starts PostgreSQL as a native sidecar, ready before the first step, which queries it on localhost; its log tail reaches run.log", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const workflow = join(dir, "postgres.yml");
    writeFileSync(
      workflow,
      [
        `image: ${POSTGRES_IMAGE}`,
        "services:",
        "  - name: postgres",
        `    image: ${POSTGRES_IMAGE}`,
        "    environment: {POSTGRES_DB: ci}",
        "    args: [-c, fsync=off]",
        "    ports: [5432]",
        "    readiness: {tcp: 5432, timeout: 90s}",
        "steps:",
        "  - name: query",
        "    command: psql -h 127.0.0.1 -U postgres -d ci -tAc 'select 40 + 2'",
        "",
      ].join("\n"),
    );
    const out = join(dir, "pg");
    const run = await runCli(
      [
        "run",
        "--workflow",
        workflow,
        "--checkout",
        ws.checkout,
        "--out",
        out,
        "--run-id",
        "svc-pg",
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        KUBECTL,
      ],
      { timeoutMs: 400_000 },
    );
    const log = readFileSync(join(out, "run.log"), "utf8");
    assert.equal(run.code, 0, `${run.stderr}\n${log}`);
    assert.match(run.stdout, /^42$/m);
    assert.deepEqual(
      readResult(out).steps.map((step) => [step.name, step.status]),
      [["query", "success"]],
    );
    assert.match(log, /ok services \([^)]*\): 1 service ready: postgres after /);
    assert.ok(
      log.indexOf("ok services") < log.indexOf("step 1: query"),
      "the services were ready before the first step started",
    );
    assert.match(
      log,
      /service postgres, its last log lines at the end of the run:\n(.*\| .*\n)*.*\| .*database system is ready to accept connections/,
    );
    const job = cluster
      .objectHistory()
      .changes.find(
        (change) => change.resource === "jobs.batch" && change.object.metadata.name.includes("svc-pg"),
      )?.object;
    assert.deepEqual(
      job?.spec.template.spec.initContainers?.map((c: any) => [c.name, c.restartPolicy]),
      [["postgres", "Always"]],
      "a native sidecar on a 1.30 server",
    );
    await assertNothingLeft(cluster);
  });

  it("fails the run as infrastructure (exit 3) when a service never becomes ready, naming it with its last log lines, and leaves nothing behind", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const workflow = join(dir, "broken.yml");
    writeFileSync(
      workflow,
      [
        `image: ${BUSYBOX}`,
        "services:",
        "  - name: broken-db",
        `    image: ${BUSYBOX}`,
        "    command: [sh, -c, 'echo starting broken-db; echo FATAL: the data directory is missing; sleep 300']",
        "    ports: [5432]",
        "    readiness: {tcp: 5432, timeout: 4s}",
        "steps:",
        "  - name: never",
        "    command: echo the step ran",
        "",
      ].join("\n"),
    );
    const out = join(dir, "broken");
    const started = Date.now();
    const run = await runCli(
      [
        "run",
        "--workflow",
        workflow,
        "--checkout",
        ws.checkout,
        "--out",
        out,
        "--run-id",
        "svc-broken",
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        KUBECTL,
        "--transport",
        "api",
      ],
      { timeoutMs: 300_000 },
    );
    const elapsed = Date.now() - started;
    const log = readFileSync(join(out, "run.log"), "utf8");
    assert.equal(run.code, 3, `${run.stderr}\n${log}`);
    assert.doesNotMatch(run.stdout, /the step ran/);
    const result = readResult(out);
    assert.match(
      String(result.error),
      /service broken-db \(docker.io\/library\/busybox:1.36\) did not become ready: not ready after .*readiness: tcp 5432, timeout 4\.0s.*FATAL: the data directory is missing/s,
    );
    assert.equal(result.errorReason, "service-not-ready");
    assert.match(run.stdout + run.stderr, /service broken-db .*did not become ready/);
    assert.match(
      log,
      /service broken-db, its last log lines:\n.*\| starting broken-db\n.*\| FATAL: the data directory is missing/,
    );
    assert.ok(
      elapsed < 120_000,
      `failed within the readiness timeout and the pod's start, not the run's timeout (${elapsed} ms)`,
    );
    await assertNothingLeft(cluster);
  });
});
