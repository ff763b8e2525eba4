// Local-cluster benchmark 2: from the pod seen Running to the first byte of step output, runner against plain kubectl.
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { BenchCluster } from "./local-cluster-env.js";
import { buildDeleteScript, buildFirstOutputScript } from "./local-plain-scripts.js";
import { prepareSmallCheckout, writeStepsFile } from "./local-workflows.js";
import { assertMarkedSucceeded, findMark, runMarkedScript } from "./marked-run.js";
import { buildRunnerArgs, readDryRunManifest, runRunnerTimed, type RunnerInvocation } from "./runner-cli.js";
import { readRunLog } from "./run-log.js";
import { summarizeValues, type Summary } from "./stats.js";
import { assertSucceeded, runTimed } from "./timed-process.js";

export const FIRST_OUTPUT_STEP = "echo hi";

export interface FirstOutputRep {
  /** pod-ready event → first step-output event. */
  readonly runnerMs: number;
  /** Its parts: pod-ready → upload start, the upload phase, upload end → step start, step start → first output. */
  readonly runnerParts: {
    readonly toUpload: number;
    readonly upload: number;
    readonly toStep: number;
    readonly stepToOutput: number;
  };
  /** `@running` (a get pods showed Running) → the first byte of `kubectl exec POD -c run -- echo hi`. */
  readonly plainMs: number;
  /** Breakdown only, after the figure: the same checkout uploaded plainly, then `echo hi` again to its first byte. */
  readonly plainUploadMs: number;
  readonly plainAfterUploadMs: number;
}

export interface FirstOutputResult {
  readonly reps: readonly FirstOutputRep[];
  readonly runner: Summary;
  readonly plain: Summary;
  readonly plainUpload: Summary;
  readonly plainAfterUpload: Summary;
  readonly runnerCommand: string;
  readonly plainScript: string;
}

export async function runLocalFirstOutputBench(
  bench: BenchCluster,
  workDir: string,
  baseEnv: Record<string, string>,
  reps: number,
  log: (line: string) => void,
): Promise<FirstOutputResult> {
  const checkoutDir = await prepareSmallCheckout(workDir);
  const stepsFile = await writeStepsFile(workDir, "first-output-steps.tsv", [["hi", FIRST_OUTPUT_STEP]]);
  const plainScript = buildFirstOutputScript();
  const env = { ...baseEnv, K: bench.kubectlPath, KC: bench.cluster.kubeconfigPath, NS: "default" };
  const invocationFor = (runId: string): RunnerInvocation => ({
    checkoutDir,
    stepsFile,
    outDir: join(workDir, runId),
    kubectlPath: bench.kubectlPath,
    kubeconfigPath: bench.cluster.kubeconfigPath,
    runId,
  });

  const runRunner = async (runId: string): Promise<Pick<FirstOutputRep, "runnerMs" | "runnerParts">> => {
    const invocation = invocationFor(runId);
    await bench.quiesce();
    await runRunnerTimed(invocation, env);
    const runLog = await readRunLog(invocation.outDir);
    const result = JSON.parse(await readFile(join(invocation.outDir, "result.json"), "utf8")) as { status: string };
    const firstOutput = runLog.firstOutputAt.get(0);
    const upload = runLog.phases.upload;
    const step = runLog.steps[0];
    if (result.status !== "success" || firstOutput === undefined || !upload || !step)
      throw new Error(`runner ${runId}: status ${result.status}, no first output, upload or step in log.ndjson`);
    await rm(invocation.outDir, { recursive: true, force: true });
    return {
      runnerMs: firstOutput - runLog.podReadyAt,
      runnerParts: {
        toUpload: upload.startedAt - runLog.podReadyAt,
        upload: upload.durationMs,
        toStep: step.startedAt - upload.endedAt,
        stepToOutput: firstOutput - step.startedAt,
      },
    };
  };

  const runPlain = async (
    runId: string,
  ): Promise<Pick<FirstOutputRep, "plainMs" | "plainUploadMs" | "plainAfterUploadMs">> => {
    const manifestPath = join(workDir, `${runId}.json`);
    const job = await readDryRunManifest(invocationFor(runId), env);
    await writeFile(manifestPath, job.json);
    const plainEnv = {
      ...env,
      JOB: job.jobName,
      SELECTOR: job.selector,
      MANIFEST: manifestPath,
      CHECKOUT: checkoutDir,
    };
    await bench.quiesce();
    try {
      const run = await runMarkedScript(plainScript, plainEnv);
      assertMarkedSucceeded(`plain first-output ${runId}`, run);
      const running = findMark(run, "running");
      const firstByte = run.firstOutputAfter.get(running.index);
      const upload = findMark(run, "upload");
      const uploaded = findMark(run, "uploaded");
      const secondByte = run.firstOutputAfter.get(uploaded.index);
      if (firstByte === undefined || secondByte === undefined || !/^hi$/m.test(run.stdout))
        throw new Error(`plain ${runId}: no "hi" after @running or @uploaded:\n${run.stdout}`);
      return {
        plainMs: firstByte - running.at,
        plainUploadMs: uploaded.at - upload.at,
        plainAfterUploadMs: secondByte - uploaded.at,
      };
    } finally {
      assertSucceeded(`plain delete ${runId}`, await runTimed("sh", ["-c", buildDeleteScript()], { env: plainEnv }));
      await rm(manifestPath, { force: true });
    }
  };

  await runRunner("lfirst-runner-warmup");
  await runPlain("lfirst-plain-warmup");
  const results: FirstOutputRep[] = [];
  for (let rep = 0; rep < reps; rep++) {
    let runner: Pick<FirstOutputRep, "runnerMs" | "runnerParts"> | undefined;
    let plain: Pick<FirstOutputRep, "plainMs" | "plainUploadMs" | "plainAfterUploadMs"> | undefined;
    for (const which of rep % 2 === 0 ? ["runner", "plain"] : ["plain", "runner"]) {
      if (which === "runner") runner = await runRunner(`lfirst-runner-${rep}`);
      else plain = await runPlain(`lfirst-plain-${rep}`);
    }
    if (!runner || !plain) throw new Error("unreachable");
    results.push({ ...runner, ...plain });
    const p = runner.runnerParts;
    log(
      `  first output rep ${rep + 1}/${reps}: runner ${runner.runnerMs} ms (to upload ${p.toUpload}, upload ${p.upload}, to step ${p.toStep}, step → output ${p.stepToOutput}), plain ${plain.plainMs} ms (then plain upload ${plain.plainUploadMs} ms, echo after it ${plain.plainAfterUploadMs} ms)`,
    );
  }
  return {
    reps: results,
    runner: summarizeValues(results.map((r) => r.runnerMs)),
    plain: summarizeValues(results.map((r) => r.plainMs)),
    plainUpload: summarizeValues(results.map((r) => r.plainUploadMs)),
    plainAfterUpload: summarizeValues(results.map((r) => r.plainAfterUploadMs)),
    runnerCommand: `node ${buildRunnerArgs(invocationFor("lfirst-runner-N")).join(" ")}`,
    plainScript,
  };
}
