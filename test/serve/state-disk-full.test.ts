import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { StepOutcome } from "../../src/executor/executor.js";
import { NSID } from "../../src/serve/lexicon-schemas.js";
import { startService, type StartedService } from "../../src/serve/start-service.js";
import { createServeClient, type ServeClient } from "../support/serve-client.js";
import { ScriptedExecutor, untilAborted } from "../support/scripted-executor.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const TOKEN = "t0ken-for-disk-full-tests";
const WORKFLOW = ["steps:", "  - name: talk", "    command: echo a lot", ""].join("\n");

/** Fills the file system under `dir` with one file until it refuses more (ENOSPC); returns the file. */
function fillDisk(dir: string): string {
  const path = join(dir, "filler");
  const fd = openSync(path, "w");
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    closeSync(fd);
  }
  return path;
}

// A real full disk: a 4 MiB tmpfs mounted for the test (we run as root), the service's state directory on it.
describe("serve on a full state disk", { timeout: 60_000 }, () => {
  const dir = makeTestTempDir("serve-disk-full-");
  const mount = join(dir, "mnt");
  const checkout = join(dir, "checkout");
  mkdirSync(mount);
  mkdirSync(checkout);
  let mounted = false;
  let started: StartedService;
  let client: ServeClient;
  const warnings: string[] = [];
  const executors: ScriptedExecutor[] = [];
  /** Lets the running step talk (once the disk is full). */
  let letTalk: () => void = () => undefined;
  const talk = new Promise<void>((resolve) => (letTalk = resolve));

  before(async () => {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mount]);
    mounted = true;
    started = await startService(
      {
        listen: { host: "127.0.0.1", port: 0 },
        stateDir: join(mount, "state"),
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
        warn: (message) => warnings.push(message),
        createExecutor: (ctx) => {
          const executor = new ScriptedExecutor(ctx, {
            runStep: async (index, _deadline, c) => {
              if (c.settings.runId !== "talker")
                return { status: "success", exitCode: 0, timedOut: false } as StepOutcome;
              await talk;
              for (let i = 0; i < 64; i++)
                c.emit({ kind: "step-output", index, stream: "stdout", text: `${"x".repeat(1023)}\n` });
              // Bounded: a run that is not stopped by its full disk ends here as a success, and the test fails.
              // Unref'd: once the run is stopped, the timer does not keep the file alive for its 5 s (the server does meanwhile).
              await Promise.race([untilAborted(c.signal), new Promise((r) => setTimeout(r, 5000).unref())]);
              return { status: "success", exitCode: 0, timedOut: false } as StepOutcome;
            },
          });
          executors.push(executor);
          return executor;
        },
      },
    );
    client = await createServeClient(started.url, TOKEN);
  });
  after(async () => {
    try {
      await started?.stop(1000, AbortSignal.abort());
    } finally {
      if (mounted) execFileSync("umount", ["-l", mount]);
    }
  });

  const submit = (runId: string): Promise<Response> =>
    client.fetch(`/xrpc/${NSID.submitRun}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ workflow: { name: "ci.yml", text: WORKFLOW }, checkout: { dir: checkout }, runId }),
    });
  const waitForStatus = async (
    runId: string,
    final: (status: string) => boolean,
  ): Promise<{ status: string; reason?: string }> => {
    for (let i = 0; i < 400; i++) {
      const { body } = await client.call(NSID.getRun, { params: { runId } });
      if (final(body.status)) return body;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`run ${runId} never ended`);
  };

  it("fails a run that cannot write its log with a reason that says the disk is full, and deletes its Job", async () => {
    assert.equal((await submit("before")).status, 200);
    assert.equal((await waitForStatus("before", (s) => s === "success")).status, "success");
    assert.equal((await submit("talker")).status, 200);
    await waitForStatus("talker", (s) => s === "running");
    const filler = fillDisk(mount);
    try {
      letTalk();
      const run = await waitForStatus("talker", (s) => s !== "running");
      assert.equal(run.status, "failed");
      assert.match(
        run.reason ?? "",
        /^the runner's disk is full: no space left to write (run\.log|log\.ndjson|result\.json)\b/,
      );
      assert.ok(executors.at(-1)!.calls.includes("teardown"), executors.at(-1)!.calls.join(", "));

      const refused = await submit("while-full");
      assert.equal(refused.status, 503);
      assert.equal(((await refused.json()) as { error: string }).error, "StateUnwritable");
      assert.ok(client.lexicons.errors(NSID.submitRun).includes("StateUnwritable"), "submitRun's lexicon declares it");
      assert.ok(Number(refused.headers.get("retry-after")) > 0);
      // Reads go on: a finished run, the list, and a finished run's log.
      assert.equal((await client.call(NSID.getRun, { params: { runId: "before" } })).body.status, "success");
      assert.ok((await client.call(NSID.listRuns, {})).body.runs.some((r: { runId: string }) => r.runId === "before"));
      assert.ok((await client.followNdjson("/logs/before")).length > 0);
    } finally {
      rmSync(filler);
    }
    // Space is back: the next submit is taken and runs, with no restart.
    assert.equal((await submit("after")).status, 200);
    assert.equal((await waitForStatus("after", (s) => s !== "pending" && s !== "running")).status, "success");
  });

  it("refuses a submit with 503 and Retry-After when the database itself cannot be written, and takes the next once there is room", async () => {
    const filler = fillDisk(mount);
    try {
      const refused = await submit("full-db");
      assert.equal(refused.status, 503);
      assert.ok(Number(refused.headers.get("retry-after")) > 0);
      assert.equal((await client.call(NSID.getRun, { params: { runId: "before" } })).status, 200);
    } finally {
      rmSync(filler);
    }
    assert.equal((await submit("full-db")).status, 200);
  });
});
