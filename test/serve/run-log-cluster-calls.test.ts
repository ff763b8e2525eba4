import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { StepOutcome } from "../../src/executor/executor.js";
import { NSID } from "../../src/serve/lexicon-schemas.js";
import { startService, type StartedService } from "../../src/serve/start-service.js";
import { createServeClient, type ServeClient } from "../support/serve-client.js";
import { ScriptedExecutor } from "../support/scripted-executor.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const TOKEN = "t0ken-for-call-log-tests";
const WORKFLOW = ["steps:", "  - name: call", "    command: true", ""].join("\n");

// The service's cluster is one for every run (kubectl here, at a path that does not exist: each call is spawned and fails).
describe("serve's run.log", { timeout: 60_000 }, () => {
  const dir = makeTestTempDir("serve-calls-");
  const checkout = join(dir, "checkout");
  mkdirSync(checkout);
  let started: StartedService;
  let client: ServeClient;

  before(async () => {
    started = await startService(
      {
        listen: { host: "127.0.0.1", port: 0 },
        stateDir: join(dir, "state"),
        token: TOKEN,
        metricsWithoutToken: false,
        limits: { maxRuns: 2, maxQueued: 10, maxWorkflowBytes: 10_000, maxSecrets: 4, maxSecretBytes: 1000 },
        maxBodyBytes: 64 * 1024,
        keepRunsMs: 3_600_000,
        gcIntervalMs: 3_600_000,
        gcStaleAfterMs: 120_000,
        defaults: {
          target: { namespace: "ci" },
          podTimeoutMs: 1000,
          maxOutputBytes: 1 << 20,
          maxLogBytes: 1 << 20,
          checkoutRoot: checkout,
        },
        transport: {
          setting: { target: { namespace: "ci" }, kubectlPath: "/nonexistent/kubectl", transport: "kubectl" },
          env: {},
        },
      },
      {
        warn: () => undefined,
        createExecutor: (ctx) =>
          new ScriptedExecutor(ctx, {
            runStep: async (_index, _deadline, c) => {
              // Both runs call the shared cluster at once, each for a Job named after it.
              await new Promise((r) => setTimeout(r, 50));
              await c.cluster.getJob("ci", `job-of-${c.settings.runId}`).catch(() => undefined);
              return { status: "success", exitCode: 0, timedOut: false } as StepOutcome;
            },
          }),
      },
    );
    client = await createServeClient(started.url, TOKEN);
  });
  after(async () => {
    await started?.stop(1000, AbortSignal.abort());
  });

  it("records each cluster call in the log of the run that made it, as the CLI's run.log does", async () => {
    for (const runId of ["one", "two"]) {
      const { status } = await client.call(NSID.submitRun, {
        body: { workflow: { name: "ci.yml", text: WORKFLOW }, checkout: { dir: checkout }, runId },
      });
      assert.equal(status, 200);
    }
    for (const runId of ["one", "two"]) {
      for (let i = 0; i < 400 && (await client.call(NSID.getRun, { params: { runId } })).body.status !== "success"; i++)
        await new Promise((r) => setTimeout(r, 25));
    }
    const one = readFileSync(join(dir, "state", "runs", "one", "run.log"), "utf8");
    const two = readFileSync(join(dir, "state", "runs", "two", "run.log"), "utf8");
    assert.match(one, /\$ kubectl .*job-of-one/);
    assert.doesNotMatch(one, /job-of-two/);
    assert.match(two, /\$ kubectl .*job-of-two/);
    assert.doesNotMatch(two, /job-of-one/);
  });
});
