// Cancel in each stage of a run (upload, a step, outputs download, cache save) through serve's cancelRun and through
// `run`'s SIGTERM with each transport, the stage held by the local cluster's latency fault: each run ends within 15 s.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type FaultConfig, type LocalCluster } from "../../local-cluster/index.js";
import { NSID } from "../../src/serve/lexicon-schemas.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason, waitUntil } from "../support/local-cluster-e2e.js";
import { readResult, startCli, type StartedCli } from "../support/run-cli.js";
import { createServeClient } from "../support/serve-client.js";
import { startServeProcess, writeServeToken } from "../support/serve-process.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const skip = findPodmanSkipReason();
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const TOKEN = "e2e-stage-cancel-token";
const REPO = "did:plc:e2e/stage-cancel";
/** The bound issue 34 sets for a cancel in any stage, from the cancel to the run's end with its Job deleted. */
const CANCEL_BOUND_MS = 15_000;

/**
 * Each stage, held where the pod cannot answer a cancel: its exec's upgrade kept unanswered by the API server (`stall`
 * matches the exec's request line), or, for a step, the step itself running.
 */
const STAGES = [
  { stage: "upload", command: "echo one", stall: String.raw`exec\?.*tar\+-xf` },
  { stage: "step", command: "echo step-waits; sleep 300", stall: undefined },
  { stage: "outputs", command: "echo one > /outputs/one.txt", stall: String.raw`exec\?.*pack-outputs` },
  {
    stage: "cache-save",
    command: "mkdir -p /work/deps && echo x > /work/deps/x",
    stall: String.raw`exec\?.*cache-save`,
  },
] as const;
type Stage = (typeof STAGES)[number];

/** The stage's workflow: one step, and a cache whose key no run has saved (a miss, so the run saves it). */
const workflowOf = ({ command }: Stage, runId: string): string =>
  `caches:\n  - key: ${runId}-${process.pid}\n    paths: [/work/deps]\nsteps:\n  - name: main\n    command: ${JSON.stringify(command)}\n`;

/** One latency fault holding every stalled row's exec, each matched only in its own run's pod. */
function stallFaults(rows: ReadonlyArray<{ runId: string; stage: Stage }>): FaultConfig {
  const stalled = rows.filter((row) => row.stage.stall !== undefined);
  const match = stalled.map(({ runId, stage }) => `pods/knotless-run-${runId}-[^/]+/${stage.stall}`).join("|");
  return { latency: { ms: 300_000, match, count: stalled.length } };
}

describe("cancel in every stage of a run on the local cluster", { skip, concurrency: 1, timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  const dir = makeTestTempDir("stage-cancel-");
  const checkout = join(dir, "checkout");
  mkdirSync(checkout);
  writeFileSync(join(checkout, "README"), "a checkout\n");
  before(async () => {
    cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
  });
  after(async () => {
    await cluster?.stop();
  });

  /** Resolves once the row's stage is held: its exec's upgrade stalled, or its step said it waits. */
  const waitForStall = async (runId: string, stage: Stage, stepSaid: () => Promise<unknown>): Promise<void> => {
    if (stage.stall === undefined) return void (await stepSaid());
    await waitUntil(
      `the ${stage.stage} stall of ${runId}`,
      () => cluster.faultFirings().some((f) => f.fault === "latency" && f.subject.includes(`knotless-run-${runId}-`)),
      120_000,
    );
  };

  it("ends runs held in each stage within 15 s of serve's cancelRun, recorded cancelled, their Jobs deleted", async (t) => {
    const rows = STAGES.map((stage) => ({ runId: `sc-${stage.stage}`, stage }));
    cluster.setFaults(stallFaults(rows));
    const serve = await startServeProcess([
      ...["--listen", "127.0.0.1:0", "--state-dir", join(dir, "state"), "--token-file", writeServeToken(dir, TOKEN)],
      ...["--kubeconfig", cluster.kubeconfigPath, "--skip-warm", "--max-runs", String(rows.length)],
      ...["--checkout-root", dir, "--cache-dir", join(dir, "serve-cache")],
    ]);
    try {
      const client = await createServeClient(serve.url, TOKEN);
      for (const { runId, stage } of rows) {
        const submitted = await client.call(NSID.submitRun, {
          body: {
            workflow: { name: "ci.yml", text: workflowOf(stage, runId) },
            checkout: { dir: checkout },
            trigger: { event: "push", ref: "refs/heads/main", repo: REPO },
            runId,
          },
        });
        assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
      }
      await Promise.all(
        rows.map(({ runId, stage }) =>
          waitForStall(runId, stage, () =>
            client.followWs(`/logs/${runId}`, {
              until: (frames) => frames.some((f) => JSON.parse(f).content === "step-waits\n"),
            }),
          ),
        ),
      );
      await new Promise((r) => setTimeout(r, 500)); // well inside the stalls
      const ended = await Promise.all(
        rows.map(async ({ runId, stage }) => {
          const sent = Date.now();
          const cancel = await client.call(NSID.cancelRun, { body: { runId } });
          assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
          let status = "";
          await waitUntil(
            `run ${runId} over`,
            async () =>
              !["pending", "running"].includes(
                (status = (await client.call(NSID.getRun, { params: { runId } })).body.status),
              ),
            60_000,
          );
          return { stage: stage.stage, status, ms: Date.now() - sent, jobLeft: jobExists(cluster, runId) };
        }),
      );
      t.diagnostic(`ms from cancelRun to the run's end: ${ended.map((e) => `${e.stage} ${e.ms}`).join(", ")}`);
      assert.deepEqual(
        ended.map(({ stage, status, ms, jobLeft }) => ({ stage, status, inBound: ms < CANCEL_BOUND_MS, jobLeft })),
        rows.map(({ stage }) => ({ stage: stage.stage, status: "cancelled", inBound: true, jobLeft: false })),
        `ms from cancelRun to the run's end: ${ended.map((e) => `${e.stage} ${e.ms}`).join(", ")}`,
      );
    } finally {
      cluster.setFaults({});
      serve.child.kill("SIGTERM");
      assert.equal((await serve.exited).code, 0, serve.output());
    }
    await assertNothingLeft(cluster);
  });

  it("ends `run` held in each stage within 15 s of SIGTERM with the kubectl transport (and in the cache save with the API one): exit 130, Job deleted", async (t) => {
    const rows = [
      ...STAGES.map((stage) => ({ runId: `kc-${stage.stage}`, stage, transport: "kubectl" })),
      { runId: "api-cache-save", stage: STAGES[3], transport: "api" },
    ];
    cluster.setFaults(stallFaults(rows));
    const started = rows.map(({ runId, stage, transport }) => {
      const root = join(dir, runId);
      mkdirSync(root);
      writeFileSync(join(root, "ci.yml"), workflowOf(stage, runId));
      return startCli(
        [
          ...["run", "--workflow", join(root, "ci.yml"), "--checkout", checkout, "--out", join(root, "out")],
          ...["--run-id", runId, "--event", "manual", "--repo", REPO, "--cache-dir", join(dir, "run-cache")],
          ...["--kubeconfig", cluster.kubeconfigPath, "--transport", transport, "--kubectl", KUBECTL],
        ],
        { timeoutMs: 240_000 },
      );
    });
    try {
      await Promise.all(
        rows.map(({ runId, stage }, i) =>
          waitForStall(runId, stage, () => started[i]!.waitFor(/^step-waits$/m, 120_000)),
        ),
      );
      await new Promise((r) => setTimeout(r, 500)); // well inside the stalls
      const ended = await Promise.all(
        started.map(async (cli: StartedCli, i) => {
          const sent = Date.now();
          cli.kill("SIGTERM");
          const end = await cli.exited;
          const { runId, stage, transport } = rows[i]!;
          return {
            row: `${transport} ${stage.stage}`,
            code: end.code,
            status: readResult(join(dir, runId, "out")).status,
            ms: end.endedAt - sent,
            jobLeft: jobExists(cluster, runId),
            stderr: end.stderr,
          };
        }),
      );
      t.diagnostic(`ms from SIGTERM to the exit: ${ended.map((e) => `${e.row} ${e.ms}`).join(", ")}`);
      assert.deepEqual(
        ended.map(({ row, code, status, ms, jobLeft }) => ({
          row,
          code,
          status,
          inBound: ms < CANCEL_BOUND_MS,
          jobLeft,
        })),
        rows.map(({ stage, transport }) => ({
          row: `${transport} ${stage.stage}`,
          code: 130,
          status: "cancelled",
          inBound: true,
          jobLeft: false,
        })),
        ended.map((e) => `${e.row}: ${e.ms} ms after SIGTERM\n${e.stderr}`).join("\n"),
      );
    } finally {
      cluster.setFaults({});
      for (const cli of started) cli.kill("SIGKILL");
    }
    await assertNothingLeft(cluster);
  });
});

function jobExists(cluster: LocalCluster, runId: string): boolean {
  return cluster.objects("jobs.batch").some((job) => job.metadata.name === `knotless-run-${runId}`);
}
