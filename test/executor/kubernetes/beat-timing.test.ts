// The executor's beatSeconds timing reaches the pod (the staged helper and the upload's own beat), and the CLI takes an
// idle timeout as short as three of those beats: how the idle guard's end-to-end test runs in a fraction of the time.
import assert from "node:assert/strict";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { readExecutorTimings } from "../../../src/cli/executor-timings.js";
import { readPodIdleTimeout } from "../../../src/cli/pod-idle-timeout.js";
import { InputError } from "../../../src/core/errors.js";
import { DEFAULT_TIMINGS } from "../../../src/executor/kubernetes/context.js";
import { stageRunnerFiles, uploadFiles } from "../../../src/executor/kubernetes/upload.js";
import { BEAT_SECONDS } from "../../../src/pod/keep-alive.js";
import { scanUploadTrees } from "../../../src/transfer/scan-tree.js";
import { makeTempDir } from "../../transfer/tree-helpers.js";
import { NODE_NAME, POD_NAME, podList, runningPod } from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";
import { honestPod } from "./upload-pod.js";

describe("the beat of a runner exec as an executor timing", () => {
  let workspace = "";
  const staged: string[] = [];
  before(async () => {
    workspace = await makeTempDir("beat");
    await mkdir(join(workspace, "checkout"));
    await writeFile(join(workspace, "checkout", "README"), "hi\n");
  });
  after(async () => {
    for (const dir of [...staged, workspace]) await rm(dir, { recursive: true, force: true });
  });

  it("is the production beat of 5 s unless a test shortens it", () => {
    assert.equal(DEFAULT_TIMINGS.beatSeconds, BEAT_SECONDS);
    assert.equal(BEAT_SECONDS, 5);
  });

  it("beats in the staged helper and in the upload's exec as often as the timing says", async () => {
    const { ctx, kubectl } = buildTestContext({
      timings: { beatSeconds: 2 },
      settings: { checkoutDir: join(workspace, "checkout") },
    });
    const staging = await stageRunnerFiles(ctx.settings, ctx.timings.beatSeconds);
    staged.push(staging);
    assert.match(await readFile(join(staging, "knotless", "helper.sh"), "utf8"), /^BEAT_SECONDS=2$/m);
    kubectl.on("get pods", podList(runningPod()));
    kubectl.on("exec", honestPod({}));
    await uploadFiles(
      ctx,
      { name: POD_NAME, node: NODE_NAME },
      staging,
      scanUploadTrees(join(workspace, "checkout"), undefined),
      undefined,
    );
    const upload = kubectl.calls.find((call) => call.command[0] === "exec");
    assert.match(upload?.command.at(-1) ?? "", /^BEAT_SECONDS=2$/m, "the upload's exec beats every 2 s");
    const unchanged = await stageRunnerFiles(ctx.settings);
    staged.push(unchanged);
    assert.match(await readFile(join(unchanged, "knotless", "helper.sh"), "utf8"), /^BEAT_SECONDS=5$/m);
  });

  it("lets --pod-idle-timeout be as short as three beats, and no shorter", () => {
    assert.equal(readPodIdleTimeout("6s", 2), 6000);
    assert.throws(
      () => readPodIdleTimeout("5s", 2),
      (error) =>
        error instanceof InputError &&
        /--pod-idle-timeout expects at least 6s \(a running exec beats every 2s\), got "5s"/.test(error.message),
    );
    assert.throws(() => readPodIdleTimeout("10s"), /at least 15s \(a running exec beats every 5s\)/);
  });

  it("is read from KNOTLESS_EXECUTOR_TIMINGS as a whole number of seconds over 0, refused otherwise", () => {
    assert.equal(readExecutorTimings({ KNOTLESS_EXECUTOR_TIMINGS: '{"beatSeconds":2}' }).beatSeconds, 2);
    for (const bad of ["0", "1.5", '"2"', "-1"])
      assert.throws(
        () => readExecutorTimings({ KNOTLESS_EXECUTOR_TIMINGS: `{"beatSeconds":${bad}}` }),
        (error) =>
          error instanceof InputError && /beatSeconds to be a whole number of seconds > 0, got /.test(error.message),
        bad,
      );
  });
});
