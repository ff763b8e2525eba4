import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import type { RunEvent } from "../../src/events/run-events.js";
import type { ClosableSink } from "../../src/events/sinks.js";
import { launchRun, openRunLogFiles } from "../../src/run/launch.js";
import { exampleSettings } from "../support/example-settings.js";
import { ScriptedExecutor } from "../support/scripted-executor.js";

/** A cluster over a kubectl that must never be spawned: the scripted executor stands in for the cluster. */
const NO_CLUSTER = new KubectlCluster(
  new Kubectl({
    binary: "kubectl",
    spawn: () => {
      throw new Error("this test spawns no kubectl");
    },
  }),
  {},
);

/** A sink that records its events and whether it was closed; `failClose` makes its close reject, as a full disk's does. */
function recordingSink(failClose = false): ClosableSink & { events: RunEvent[]; closed: boolean } {
  const recorder = {
    events: [] as RunEvent[],
    closed: false,
    sink: (event: RunEvent) => void recorder.events.push(event),
    close: async () => {
      recorder.closed = true;
      if (failClose) throw new Error("no space left on device");
    },
    closeSync: () => undefined,
  };
  return recorder;
}

let root = "";
before(async () => {
  root = await mkdtemp(join(tmpdir(), "knotless-launch-"));
  await writeFile(join(root, "README"), "readme\n");
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("launchRun", () => {
  it("runs the workflow with the logs first and the other sinks after, writes result.json and closes the logs", async () => {
    const outDir = join(root, "out-1");
    await mkdir(outDir);
    const controls = { controller: new AbortController(), force: new AbortController() };
    const logFiles = openRunLogFiles(outDir, controls);
    const extra: RunEvent[] = [];
    const result = await launchRun({
      ...controls,
      settings: { ...exampleSettings({ steps: ["build"] }), checkoutDir: root, outDir },
      cluster: NO_CLUSTER,
      logs: logFiles,
      sinks: [(event) => void extra.push(event)],
      createExecutor: (ctx) => new ScriptedExecutor(ctx, {}),
      warn: (message) => assert.fail(`unexpected warning: ${message}`),
    });
    assert.equal(result.status, "success");
    assert.equal(JSON.parse(readFileSync(join(outDir, "result.json"), "utf8")).status, "success");
    assert.ok(
      extra.some((event) => event.kind === "run-end"),
      "the other sinks saw the run end",
    );
    const lines = readFileSync(join(outDir, "log.ndjson"), "utf8").trim().split("\n");
    assert.ok(
      lines.length > 1 && existsSync(join(outDir, "run.log")),
      "both log files were written and flushed by their close",
    );
  });

  it("tells `warn` of a log that cannot be closed, and the run's result stands", async () => {
    const outDir = join(root, "out-2");
    await mkdir(outDir);
    const failing = recordingSink(true);
    const warnings: string[] = [];
    const result = await launchRun({
      controller: new AbortController(),
      force: new AbortController(),
      settings: { ...exampleSettings({ steps: ["build"] }), checkoutDir: root, outDir },
      cluster: NO_CLUSTER,
      logs: [failing],
      createExecutor: (ctx) => new ScriptedExecutor(ctx, {}),
      warn: (message) => warnings.push(message),
    });
    assert.equal(result.status, "success");
    assert.ok(failing.closed && failing.events.length > 0);
    assert.deepEqual(warnings, ["no space left on device"]);
  });

  it("closes the logs when result.json cannot be written, and rejects with why", async () => {
    const outDir = join(root, "out-3");
    await writeFile(outDir, "a file where the out directory should be\n");
    const log = recordingSink();
    let finished: string | undefined;
    await assert.rejects(
      launchRun({
        controller: new AbortController(),
        force: new AbortController(),
        settings: { ...exampleSettings({ steps: ["build"] }), checkoutDir: root, outDir },
        cluster: NO_CLUSTER,
        logs: [log],
        createExecutor: (ctx) => new ScriptedExecutor(ctx, {}),
        onFinished: (ended) => (finished = ended.status),
        warn: () => undefined,
      }),
      /ENOTDIR|EEXIST|not a directory/,
    );
    assert.ok(finished !== undefined, "the run ended before result.json was written");
    assert.equal(log.closed, true);
  });
});
