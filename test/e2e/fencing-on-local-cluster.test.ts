// Fencing on the local cluster: instance A's Lease renewals fail while A lives, B (--adopt) takes A's run, and A stops driving it without touching its Job.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { NSID } from "../../src/serve/lexicon-schemas.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason, waitUntil } from "../support/local-cluster-e2e.js";
import { createServeClient, type ServeClient } from "../support/serve-client.js";
import {
  buildLocalServeArgs,
  startServeProcess,
  writeServeToken,
  type ServeProcess,
} from "../support/serve-process.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const skip = findPodmanSkipReason();
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const TOKEN = "e2e-fencing-token-16+";
const LEASE_SECONDS = 3;
const STEPS = 8;
const RUN_ID = "fenced-1";

/** Eight steps of about two seconds each; each notes once in /outputs that it ran, so a second start would show. */
const WORKFLOW = `steps:\n${Array.from(
  { length: STEPS },
  (_, i) =>
    `  - name: s${i + 1}\n    command: "echo ran ${i + 1} >> /outputs/ran.txt; for j in 1 2 3 4; do echo step ${i + 1} line $j; sleep 0.5; done"\n`,
).join("")}`;

/** A's Lease renewals only (PUT of its Lease): held up past the renewal's own bound, so each fails while A lives on. */
const A_LEASE_RENEWALS = "^PUT /apis/coordination\\.k8s\\.io/v1/namespaces/[^/]+/leases/knotless-instance-a(\\?|$)";

describe("fencing of a live instance whose Lease lapsed, on the local cluster", { skip, timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  const dir = makeTestTempDir("fencing-e2e-");
  const checkout = join(dir, "checkout");
  mkdirSync(checkout);
  writeFileSync(join(checkout, "README"), "a checkout\n");
  const tokenFile = writeServeToken(dir, TOKEN);
  const serving: ServeProcess[] = [];
  const start = async (instance: string, extra: readonly string[] = []) => {
    const serve = await startServeProcess(
      buildLocalServeArgs(
        {
          dir,
          stateDir: join(dir, `state-${instance}`),
          tokenFile,
          kubeconfig: cluster.kubeconfigPath,
          kubectl: KUBECTL,
        },
        ["--instance", instance, "--lease-duration", `${LEASE_SECONDS}s`, ...extra],
      ),
      { KNOTLESS_HEARTBEAT_INTERVAL: "5s" },
    );
    serving.push(serve);
    return { serve, client: await createServeClient(serve.url, TOKEN) };
  };
  const viewOf = async (client: ServeClient) => {
    const answer = await client.call(NSID.getRun, { params: { runId: RUN_ID } });
    return answer.status === 200
      ? (answer.body as { status: string; reason?: string; instance?: string; adoptedFrom?: string })
      : undefined;
  };
  const logOf = (instance: string): string => {
    try {
      return readFileSync(join(dir, `state-${instance}`, "runs", RUN_ID, "log.ndjson"), "utf8");
    } catch {
      return "";
    }
  };

  before(async () => {
    cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
  });
  after(async () => {
    for (const serve of serving) serve.child.kill("SIGTERM");
    await Promise.all(serving.map((serve) => serve.exited));
    await cluster?.stop();
  });

  it("A stops driving the run B adopted once its Lease lapsed: each step runs once, B alone writes a result and deletes the Job, A records the run as adopted by B, and nothing is left", async () => {
    const a = await start("a");
    const answer = await a.client.call(NSID.submitRun, {
      body: {
        workflow: { name: ".tangled/workflows/ci.yml", text: WORKFLOW },
        checkout: { dir: checkout },
        trigger: { event: "push", ref: "refs/heads/main", repo: "did:plc:e2e/repo" },
        runId: RUN_ID,
      },
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    await waitUntil("A's run printed step 1's lines", () => logOf("a").includes("step 1 line 2"), 120_000);

    // A lives on and reaches the cluster for everything but its Lease, whose renewals now fail: B adopts its run.
    cluster.setFaults({ latency: { ms: 60_000, match: A_LEASE_RENEWALS } });
    const b = await start("b", ["--adopt"]);
    await waitUntil("B adopted the run", async () => (await viewOf(b.client)) !== undefined, 60_000);
    await waitUntil(
      "the run over on B",
      async () => !["pending", "running"].includes((await viewOf(b.client))?.status ?? "running"),
      180_000,
    );
    await waitUntil(
      "the run over on A",
      async () => !["pending", "running"].includes((await viewOf(a.client))?.status ?? "running"),
      60_000,
    );

    const onB = (await b.client.call(NSID.getRun, { params: { runId: RUN_ID } })).body as {
      status: string;
      adoptedFrom?: string;
      result?: { status: string; steps: Array<{ status: string }> };
    };
    assert.equal(onB.status, "success", JSON.stringify(onB));
    assert.equal(onB.adoptedFrom, "a");
    assert.equal(onB.result?.steps.length, STEPS);

    // A ended the run as adopted by B, wrote no result of its own, and its log's last line says so.
    const onA = await viewOf(a.client);
    assert.equal(onA?.status, "failed", JSON.stringify(onA));
    assert.equal(onA?.instance, "b", JSON.stringify(onA));
    assert.match(onA?.reason ?? "", /adopted by instance b while this service's Lease had lapsed/);
    assert.equal(existsSync(join(dir, "state-a", "runs", RUN_ID, "result.json")), false, "A wrote a result");
    const lastOfA = JSON.parse(logOf("a").trim().split("\n").at(-1)!) as { event?: string; content?: string };
    assert.equal(lastOfA.event, "notice", JSON.stringify(lastOfA));
    assert.match(lastOfA.content ?? "", /was adopted by instance b/);
    // A neither tore the run down nor deleted its Job: B's teardown did.
    const tornDown = (log: string): boolean =>
      log
        .split("\n")
        .filter(Boolean)
        .some((line) => {
          const parsed = JSON.parse(line) as { kind?: string; step?: number; name?: string };
          return parsed.kind === "control" && parsed.step === -1 && parsed.name === "teardown";
        });
    assert.equal(tornDown(logOf("a")), false, "A tore the run down");
    assert.equal(tornDown(logOf("b")), true, "B did not tear the run down");

    // Each step ran exactly once in the pod.
    const ran = readFileSync(join(dir, "state-b", "runs", RUN_ID, "outputs", "ran.txt"), "utf8")
      .trim()
      .split("\n");
    assert.deepEqual(
      ran,
      Array.from({ length: STEPS }, (_, i) => `ran ${i + 1}`),
    );

    // A's Lease renewed again does not take the run back.
    // (B deletes A's expired Lease once it took A's runs, and A makes it anew: its renewals are PUTs, a create is not.)
    assert.match(a.serve.output(), /the Lease knotless-instance-a is renewed again/);
    cluster.clearFaults();
    // A few renewal intervals without the fault: A's last renewal succeeded, so its clean stop deletes its Lease.
    await sleep((3 * (LEASE_SECONDS * 1000)) / 3 + 500);
    assert.equal((await viewOf(a.client))?.status, "failed");

    for (const serve of serving) serve.child.kill("SIGTERM");
    await Promise.all(serving.map((serve) => serve.exited));
    serving.length = 0;
    const said = `A said:\n${a.serve.output()}\nB said:\n${b.serve.output()}`;
    await assertNothingLeft(cluster);
    const { stdout } = await promisify(execFile)(KUBECTL, [
      "--kubeconfig",
      cluster.kubeconfigPath,
      "get",
      "leases.coordination.k8s.io",
      "-A",
      "-o",
      "name",
    ]);
    assert.equal(stdout.trim(), "", `a Lease was left; ${said}`);
  });
});
