// Local-cluster benchmark 3: an empty step's cost, the runner's step against a bare `kubectl exec POD -c run -- sh -c true`.
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { BenchCluster } from "./local-cluster-env.js";
import { buildDeleteScript } from "./local-plain-scripts.js";
import { prepareSmallCheckout, writeStepsFile } from "./local-workflows.js";
import { buildRunnerArgs, runRunnerTimed, type RunnerInvocation } from "./runner-cli.js";
import { readRunLog } from "./run-log.js";
import { summarizeValues, type Summary } from "./stats.js";
import { assertSucceeded, runTimed } from "./timed-process.js";

export const EMPTY_STEPS_PER_RUN = 10;
const IN_POD_SAMPLES = 5;

export interface StepSamples {
  /** The runner's own step durations (step-start → step-end events), `true` steps. */
  readonly runnerMs: readonly number[];
  /** Gaps between one step's end and the next one's start, inside the runner. */
  readonly runnerGapMs: readonly number[];
  /** `kubectl exec POD -c run -- sh -c true`, spawn → exit, against the runner's own (kept) pod. */
  readonly bareMs: readonly number[];
  /** The runner's exact exec without the runner: `kubectl exec POD -c run -- sh /knotless/helper.sh run N` of a fresh `true` step. */
  readonly bareHelperMs: readonly number[];
  /** Without kubectl or the API: `podman exec CONTAINER sh -c true` and `... sh /knotless/helper.sh run N`, from this process. */
  readonly podmanTrueMs: readonly number[];
  readonly podmanHelperMs: readonly number[];
}

export interface StepResult {
  readonly samples: StepSamples;
  readonly runner: Summary;
  readonly bare: Summary;
  readonly bareHelper: Summary;
  readonly podmanTrue: Summary;
  readonly podmanHelper: Summary;
  readonly runnerGap: Summary;
  readonly runs: number;
  readonly runnerCommand: string;
  readonly bareCommand: string;
  readonly bareHelperCommand: string;
}

async function timeMs(action: () => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  await action();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

export async function runLocalStepBench(
  bench: BenchCluster,
  workDir: string,
  baseEnv: Record<string, string>,
  runs: number,
  log: (line: string) => void,
): Promise<StepResult> {
  const checkoutDir = await prepareSmallCheckout(workDir);
  const steps = Array.from({ length: EMPTY_STEPS_PER_RUN }, (_, i) => [`empty${i + 1}`, "true"] as const);
  const stepsFile = await writeStepsFile(workDir, "empty-steps.tsv", steps);
  const { cluster, kubectlPath } = bench;
  const invocationFor = (runId: string): RunnerInvocation => ({
    checkoutDir,
    stepsFile,
    outDir: join(workDir, runId),
    kubectlPath,
    kubeconfigPath: cluster.kubeconfigPath,
    runId,
    extraArgs: ["--keep"],
  });
  const kubectlExec = (pod: string, command: readonly string[]) => [
    "--kubeconfig",
    cluster.kubeconfigPath,
    "--namespace",
    "default",
    "exec",
    pod,
    "-c",
    "run",
    "--",
    ...command,
  ];
  const samples = {
    runnerMs: [] as number[],
    runnerGapMs: [] as number[],
    bareMs: [] as number[],
    bareHelperMs: [] as number[],
    podmanTrueMs: [] as number[],
    podmanHelperMs: [] as number[],
  };
  let nextFreshStep = 100;

  const podExecOk = async (pod: string, command: readonly string[]): Promise<void> => {
    const r = await cluster.podExec("default", pod, command);
    if (r.code !== 0) throw new Error(`podman exec ${command.join(" ")} exited ${r.code}: ${r.stderr}`);
  };
  /** Writes fresh `true` step scripts (as the runner's upload would) in one podman exec, so none runs between samples. */
  const addFreshSteps = async (pod: string, count: number): Promise<number[]> => {
    const indexes = Array.from({ length: count }, () => nextFreshStep++);
    await podExecOk(pod, ["sh", "-c", indexes.map((index) => `echo true > /knotless/steps/${index}.sh`).join("; ")]);
    return indexes;
  };

  for (let run = 0; run < runs; run++) {
    const runId = `lstep-${run}`;
    const invocation = invocationFor(runId);
    await bench.quiesce();
    await runRunnerTimed(invocation, baseEnv);
    const runLog = await readRunLog(invocation.outDir);
    const result = JSON.parse(await readFile(join(invocation.outDir, "result.json"), "utf8")) as {
      status: string;
      job: { pod: string; name: string };
    };
    const pod = result.job.pod;
    const jobEnv = { ...baseEnv, K: kubectlPath, KC: cluster.kubeconfigPath, NS: "default", JOB: result.job.name };
    try {
      if (result.status !== "success" || runLog.steps.length !== EMPTY_STEPS_PER_RUN)
        throw new Error(`runner ${runId}: status ${result.status}, ${runLog.steps.length} steps`);
      samples.runnerMs.push(...runLog.steps.map((s) => s.durationMs));
      for (let i = 1; i < runLog.steps.length; i++)
        samples.runnerGapMs.push(
          (runLog.steps[i] as { startedAt: number }).startedAt - (runLog.steps[i - 1] as { endedAt: number }).endedAt,
        );
      // Same pod, same moment: bare execs, interleaved so neither kind gets the quieter half.
      const freshForKubectl = await addFreshSteps(pod, EMPTY_STEPS_PER_RUN);
      const freshForPodman = await addFreshSteps(pod, IN_POD_SAMPLES);
      for (let i = 0; i < EMPTY_STEPS_PER_RUN; i++) {
        const fresh = freshForKubectl[i] as number;
        const pair = [
          async () => {
            const r = await runTimed(kubectlPath, kubectlExec(pod, ["sh", "-c", "true"]), { env: baseEnv });
            assertSucceeded("bare kubectl exec sh -c true", r);
            samples.bareMs.push(r.wallMs);
          },
          async () => {
            const r = await runTimed(
              kubectlPath,
              kubectlExec(pod, ["sh", "/knotless/helper.sh", "run", String(fresh)]),
              { env: baseEnv },
            );
            assertSucceeded("bare kubectl exec helper.sh run", r);
            if (!/^X 0$/m.test(r.stdout)) throw new Error(`helper run ${fresh} did not end with X 0: ${r.stdout}`);
            samples.bareHelperMs.push(r.wallMs);
          },
        ];
        for (const measure of i % 2 === 0 ? pair : [...pair].reverse()) await measure();
      }
      for (let i = 0; i < IN_POD_SAMPLES; i++) {
        const fresh = freshForPodman[i] as number;
        samples.podmanTrueMs.push(await timeMs(() => podExecOk(pod, ["sh", "-c", "true"])));
        samples.podmanHelperMs.push(
          await timeMs(() => podExecOk(pod, ["sh", "/knotless/helper.sh", "run", String(fresh)])),
        );
      }
    } finally {
      assertSucceeded(`delete ${result.job.name}`, await runTimed("sh", ["-c", buildDeleteScript()], { env: jobEnv }));
      await rm(invocation.outDir, { recursive: true, force: true });
    }
    const med = (xs: readonly number[]) => summarizeValues(xs).median.toFixed(0);
    log(
      `  empty step run ${run + 1}/${runs}: runner step median ${med(runLog.steps.map((s) => s.durationMs))} ms, bare exec ${med(samples.bareMs.slice(-EMPTY_STEPS_PER_RUN))} ms, bare helper exec ${med(samples.bareHelperMs.slice(-EMPTY_STEPS_PER_RUN))} ms`,
    );
  }
  const examplePod = "POD";
  return {
    samples,
    runner: summarizeValues(samples.runnerMs),
    bare: summarizeValues(samples.bareMs),
    bareHelper: summarizeValues(samples.bareHelperMs),
    podmanTrue: summarizeValues(samples.podmanTrueMs),
    podmanHelper: summarizeValues(samples.podmanHelperMs),
    runnerGap: summarizeValues(samples.runnerGapMs),
    runs,
    runnerCommand: `node ${buildRunnerArgs(invocationFor("lstep-N")).join(" ")}`,
    bareCommand: `${kubectlPath} ${kubectlExec(examplePod, ["sh", "-c", "true"]).join(" ")}`,
    bareHelperCommand: `${kubectlPath} ${kubectlExec(examplePod, ["sh", "/knotless/helper.sh", "run", "N"]).join(" ")}`,
  };
}
