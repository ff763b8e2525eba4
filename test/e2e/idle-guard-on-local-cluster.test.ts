// The pod's idle guard through the real CLI on the local cluster (slow transfers through a throttling kubectl, the rest through the api default), with --pod-idle-timeout 10s
// and a beat every 2 s (KNOTLESS_EXECUTOR_TIMINGS): long live runs keep their pod; a runner killed with SIGKILL leaves a pod that stops itself, and says why.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { makeWorkspace, readResult, runCli, startCli } from "../support/run-cli.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason, waitUntil } from "../support/local-cluster-e2e.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const skip =
  E2E_KUBECTLS.length === 0 ? "no kubectl 1.30 or 1.33 under /usr/lib/google-cloud-sdk/bin" : findPodmanSkipReason();
/** The idle timeout, and the beat it is five of (the least is three): the production beat of 5 s would need 15 s or more. */
const IDLE_SECONDS = 10;
const IDLE = `${IDLE_SECONDS}s`;
const BEAT_SECONDS = 2;
/** Every CLI call of this file beats as often, so the short idle timeout is accepted and kept. */
const env = { KNOTLESS_EXECUTOR_TIMINGS: JSON.stringify({ beatSeconds: BEAT_SECONDS }) };
/** Each step lasts three idle timeouts. */
const STEP_SECONDS = 3 * IDLE_SECONDS;
/** Bytes a second the throttling kubectl lets through the upload's stdin and the download's stdout. */
const THROTTLE_RATE = 64 * 1024;
/** 1 MiB at 64 KiB/s: each transfer takes about 16 s, longer than the idle timeout. */
const TRANSFER_BYTES = 1024 * 1024;

/**
 * A kubectl that slows the upload (stdin of the exec that runs `tar -xf - -C /`) and the download (stdout of
 * `pack-outputs`) to THROTTLE_RATE, passing every other call through untouched.
 */
function writeThrottlingKubectl(real: string): string {
  const path = join(makeTestTempDir("throttled-kubectl-"), "kubectl");
  writeFileSync(
    path,
    `#!${process.execPath}
const { spawn } = require("node:child_process");
const rate = ${THROTTLE_RATE};
const args = process.argv.slice(2);
const up = args.some((arg) => arg.includes("tar -xf - -C /"));
const down = args.includes("pack-outputs");
const child = spawn(${JSON.stringify(real)}, args, { stdio: [up ? "pipe" : "inherit", down ? "pipe" : "inherit", "inherit"] });
const pace = (from, to, done) => {
  from.on("data", (chunk) => { from.pause(); to.write(chunk); setTimeout(() => from.resume(), (chunk.length / rate) * 1000); });
  from.on("end", () => (done ? done() : to.end()));
};
let pending = down ? 2 : 1;
let code = 1;
const finish = () => { if (--pending === 0) process.exit(code); };
if (up) { child.stdin.on("error", () => {}); pace(process.stdin, child.stdin); }
if (down) pace(child.stdout, process.stdout, () => process.stdout.write("", finish));
child.on("exit", (c, signal) => { code = c ?? (signal ? 128 : 1); finish(); });
`,
  );
  chmodSync(path, 0o755);
  return path;
}

describe("the pod's idle guard on the local cluster", { skip, concurrency: 2, timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await startLocalCluster({});
  });
  after(async () => {
    if (cluster) await assertNothingLeft(cluster);
    await cluster?.stop();
  });
  const kubectl = E2E_KUBECTLS.at(-1)!;

  it("keeps the pod through a step printing every second for 30 s, a silent one of 30 s, and an upload and a download of ~16 s each", async () => {
    const ws = makeWorkspace(
      [
        `chatty\ti=0; while [ $i -lt ${STEP_SECONDS} ]; do echo tick $i; sleep 1; i=$((i+1)); done`,
        `silent\tsleep ${STEP_SECONDS}; echo quiet-done`,
        `outputs\thead -c ${TRANSFER_BYTES} /work/payload.bin > /outputs/payload.bin`,
        "",
      ].join("\n"),
    );
    const payload = randomBytes(TRANSFER_BYTES);
    writeFileSync(join(ws.checkout, "payload.bin"), payload);
    const started = Date.now();
    const run = await runCli(
      [
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        "--run-id",
        "idle-long",
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--pod-idle-timeout",
        IDLE,
        "--transport",
        "kubectl",
        "--kubectl",
        writeThrottlingKubectl(kubectl),
      ],
      { env, timeoutMs: 480_000 },
    );
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const result = readResult(ws.out);
    assert.equal(result.status, "success");
    assert.deepEqual(
      result.steps.map((step) => step.status),
      ["success", "success", "success"],
    );
    assert.match(run.stdout, new RegExp(`tick ${STEP_SECONDS - 1}`));
    assert.match(run.stdout, /quiet-done/);
    const phases = readFileSync(join(ws.out, "log.ndjson"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map(
        (line) =>
          JSON.parse(line) as { kind: string; step: number; status?: string; name?: string; durationMs?: number },
      )
      .filter((line) => line.kind === "control" && line.step === -1 && line.status === "end");
    for (const phase of ["upload", "download"]) {
      const durationMs = phases.find((line) => line.name === phase)?.durationMs ?? 0;
      assert.ok(
        durationMs > IDLE_SECONDS * 1000,
        `the ${phase} took ${durationMs} ms, not longer than the idle timeout`,
      );
    }
    assert.ok(
      Date.now() - started > (2 * STEP_SECONDS + 2 * IDLE_SECONDS) * 1000,
      "the steps and both transfers outlasted the idle timeout several times",
    );
    assert.ok(payload.equals(readFileSync(join(ws.out, "outputs", "payload.bin"))), "the download is whole");
  });

  it("stops a pod whose runner was killed with SIGKILL mid-step within about 15 s, and list and gc say why", async () => {
    const killedEnv = { ...env, KNOTLESS_HEARTBEAT_INTERVAL: "1s" };
    const ws = makeWorkspace("wait\techo step-waits; sleep 600\n");
    const runner = startCli(
      [
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        "--run-id",
        "idle-killed",
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--pod-idle-timeout",
        IDLE,
        "--kubectl",
        kubectl,
      ],
      { env: killedEnv },
    );
    await runner.waitFor(/^step-waits$/m, 120_000);
    runner.kill("SIGKILL");
    const killedAt = (await runner.exited).endedAt;
    const podOf = () =>
      cluster
        .objects("pods")
        .find((pod) =>
          (pod as { metadata?: { name?: string } }).metadata?.name?.startsWith("knotless-run-idle-killed"),
        ) as
        | { status?: { phase?: string; containerStatuses?: Array<{ state?: { terminated?: { exitCode?: number } } }> } }
        | undefined;
    const tookMs = await waitUntil("the pod stopped itself", () => podOf()?.status?.phase === "Failed", 60_000);
    // The guard polls every 2 s (a quarter of the idle timeout); the rest is slack for a loaded machine.
    assert.ok(
      Date.now() - killedAt < 30_000,
      `the pod ended ${Date.now() - killedAt} ms after its runner died (idle timeout 10 s, poll 2 s)`,
    );
    // The last beat may come up to a beat before the runner died, never sooner.
    assert.ok(
      tookMs >= (IDLE_SECONDS - BEAT_SECONDS) * 1000,
      `the pod ended only ${tookMs} ms after its runner died: sooner than its idle timeout`,
    );
    assert.equal(
      podOf()?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode,
      75,
      "the run container's exit code says the guard stopped it",
    );

    const list = await runCli(["list", "--kubeconfig", cluster.kubeconfigPath, "--kubectl", kubectl], {
      env: killedEnv,
    });
    assert.match(
      list.stdout,
      /^idle-killed +run +failed .* RunnerIdle: the pod stopped itself after 10\.0s without runner activity/m,
      list.stdout,
    );
    const gc = await runCli(["gc", "--kubeconfig", cluster.kubeconfigPath, "--kubectl", kubectl], { env: killedEnv });
    assert.equal(gc.code, 0, gc.stdout + gc.stderr);
    assert.match(
      gc.stdout,
      /^removed +run idle-killed \(Job knotless-run-idle-killed\): finished: Failed.*; its pod ended: RunnerIdle: the pod stopped itself after 10\.0s/m,
      gc.stdout,
    );
  });
});
