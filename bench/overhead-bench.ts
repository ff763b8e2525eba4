// Benchmark 1: the runner's whole run of a small workflow against a plain sh script making the same kubectl calls.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { FakeCluster, RecordedCall } from "../test/fixtures/fake-kubectl/harness.js";
import { buildCallTimeline, type CallTimeline } from "./call-timeline.js";
import { buildPlainWorkflowScript } from "./plain-scripts.js";
import { buildRunnerArgs, readDryRunManifest, runRunnerTimed, type RunnerInvocation } from "./runner-cli.js";
import { summarizeValues, type Summary } from "./stats.js";
import { assertSucceeded, runTimed } from "./timed-process.js";

export const OVERHEAD_STEPS: ReadonlyArray<readonly [string, string]> = [
  ["one", "true"],
  ["two", "true"],
  ["three", "true"],
  ["four", "true"],
  ["five", "true"],
  ["hello", "echo hello from the benchmark"],
];

export interface OverheadRep {
  readonly runnerMs: number;
  readonly plainMs: number;
  readonly ratio: number;
  readonly runnerTimeline: CallTimeline;
  readonly plainTimeline: CallTimeline;
}

export interface OverheadResult {
  readonly latencyMs: number;
  readonly reps: readonly OverheadRep[];
  readonly runner: Summary;
  readonly plain: Summary;
  readonly ratio: Summary;
  /** Ratio of the medians. */
  readonly medianRatio: number;
  /** The runner's start-up alone: `--dry-run` (validation and plan, no kubectl call). */
  readonly runnerDryRun: Summary;
  /** `node -e 0`, the floor of any node program's start-up here. */
  readonly nodeStartup: Summary;
  readonly runnerCommand: string;
  readonly plainCommand: string;
  readonly plainScript: string;
}

const TARGET_RATIO = 1.1;

async function prepareWorkflow(dir: string): Promise<{ checkoutDir: string; stepsFile: string }> {
  const checkoutDir = join(dir, "checkout");
  await mkdir(join(checkoutDir, "src"), { recursive: true });
  await writeFile(join(checkoutDir, "README.md"), "# bench\n");
  await writeFile(join(checkoutDir, "src", "main.c"), "int main(void) { return 0; }\n");
  const stepsFile = join(dir, "steps.tsv");
  await writeFile(stepsFile, OVERHEAD_STEPS.map(([name, script]) => `${name}\t${script}`).join("\n") + "\n");
  return { checkoutDir, stepsFile };
}

async function readNewCalls(cluster: FakeCluster, afterSeq: number): Promise<RecordedCall[]> {
  return (await cluster.calls()).filter((c) => c.seq > afterSeq);
}

function lastSeq(calls: readonly RecordedCall[]): number {
  return calls.at(-1)?.seq ?? 0;
}

async function measureStartups(
  env: Record<string, string>,
  invocation: RunnerInvocation,
  reps: number,
): Promise<{ runnerDryRun: Summary; nodeStartup: Summary }> {
  const dry: number[] = [];
  const node: number[] = [];
  for (let i = 0; i < reps; i++) {
    const d = await runTimed(process.execPath, [...buildRunnerArgs(invocation), "--dry-run"], { env });
    assertSucceeded("runner --dry-run", d);
    dry.push(d.wallMs);
    const n = await runTimed(process.execPath, ["-e", "0"], { env });
    node.push(n.wallMs);
  }
  return { runnerDryRun: summarizeValues(dry), nodeStartup: summarizeValues(node) };
}

/** Alternates runner and plain-script runs (runner first on even reps, plain first on odd ones). */
export async function runOverheadBench(
  cluster: FakeCluster,
  workDir: string,
  latencyMs: number,
  reps: number,
  log: (line: string) => void,
): Promise<OverheadResult> {
  await cluster.setFaults({ latencyMs });
  const { checkoutDir, stepsFile } = await prepareWorkflow(workDir);
  const plainScript = buildPlainWorkflowScript(OVERHEAD_STEPS.map(([, script]) => script));
  const plainScriptPath = join(workDir, "plain-workflow.sh");
  await writeFile(plainScriptPath, plainScript);
  const invocationFor = (runId: string): RunnerInvocation => ({
    checkoutDir,
    stepsFile,
    outDir: join(workDir, runId),
    kubectlPath: cluster.kubectlPath,
    kubeconfigPath: cluster.kubeconfigPath,
    runId,
    // The plain script has no counterpart of the look for a warm placeholder (one list call): leave it out, as
    // `--skip-warm` does on clusters that never have one. The cancel watch and heartbeat run beside the path and are
    // counted apart (CallTimeline.backgroundCalls).
    extraArgs: ["--skip-warm"],
  });
  const env = { ...cluster.env };

  const runOnceRunner = async (rep: number | string): Promise<{ ms: number; timeline: CallTimeline }> => {
    const before = lastSeq(await cluster.calls());
    const spawnedAt = Date.now();
    const timed = await runRunnerTimed(invocationFor(`ovh-runner-${rep}`), env);
    const calls = await readNewCalls(cluster, before);
    return { ms: timed.wallMs, timeline: buildCallTimeline(calls, spawnedAt, spawnedAt + timed.wallMs) };
  };
  const runOncePlain = async (rep: number | string): Promise<{ ms: number; timeline: CallTimeline }> => {
    const runId = `ovh-plain-${rep}`;
    const manifestPath = join(workDir, `${runId}.json`);
    const job = await readDryRunManifest(invocationFor(runId), env);
    await writeFile(manifestPath, job.json);
    const plainEnv = {
      ...env,
      K: cluster.kubectlPath,
      KC: cluster.kubeconfigPath,
      NS: "default",
      JOB: job.jobName,
      SELECTOR: job.selector,
      MANIFEST: manifestPath,
      CHECKOUT: checkoutDir,
      DEST: join(workDir, runId, "outputs"),
    };
    const before = lastSeq(await cluster.calls());
    const spawnedAt = Date.now();
    const timed = await runTimed("sh", [plainScriptPath], { env: plainEnv });
    assertSucceeded("the plain script", timed);
    if (!timed.stdout.includes("hello from the benchmark"))
      throw new Error(`the plain script did not print the echo step's output:\n${timed.stdout}`);
    const calls = await readNewCalls(cluster, before);
    return { ms: timed.wallMs, timeline: buildCallTimeline(calls, spawnedAt, spawnedAt + timed.wallMs) };
  };

  // One unmeasured round warms the page cache and node's compile cache for both.
  await runOnceRunner("warmup");
  await runOncePlain("warmup");
  const results: OverheadRep[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const order = rep % 2 === 0 ? ["runner", "plain"] : ["plain", "runner"];
    let runner: { ms: number; timeline: CallTimeline } | undefined;
    let plain: { ms: number; timeline: CallTimeline } | undefined;
    for (const which of order) {
      if (which === "runner") runner = await runOnceRunner(rep);
      else plain = await runOncePlain(rep);
    }
    if (!runner || !plain) throw new Error("unreachable");
    if (runner.timeline.calls !== plain.timeline.calls) {
      throw new Error(
        `the runner made ${runner.timeline.calls} kubectl calls (${runner.timeline.kinds.join(", ")}) but the plain script ${plain.timeline.calls} (${plain.timeline.kinds.join(", ")})`,
      );
    }
    results.push({
      runnerMs: runner.ms,
      plainMs: plain.ms,
      ratio: runner.ms / plain.ms,
      runnerTimeline: runner.timeline,
      plainTimeline: plain.timeline,
    });
    log(
      `  overhead rep ${rep + 1}/${reps}: runner ${runner.ms.toFixed(0)} ms, plain ${plain.ms.toFixed(0)} ms, ratio ${(runner.ms / plain.ms).toFixed(3)} (${runner.timeline.calls} calls each; the runner's ${runner.timeline.backgroundCalls} beside them)`,
    );
  }
  const startups = await measureStartups(env, invocationFor("ovh-dry"), Math.max(3, reps));
  const runner = summarizeValues(results.map((r) => r.runnerMs));
  const plain = summarizeValues(results.map((r) => r.plainMs));
  const exampleRunner = buildRunnerArgs(invocationFor("ovh-runner-N"));
  return {
    latencyMs,
    reps: results,
    runner,
    plain,
    ratio: summarizeValues(results.map((r) => r.ratio)),
    medianRatio: runner.median / plain.median,
    ...startups,
    runnerCommand: `node ${exampleRunner.join(" ")}`,
    plainCommand: `sh plain-workflow.sh  (env K, KC, NS, JOB, SELECTOR, MANIFEST from --dry-run, CHECKOUT, DEST)`,
    plainScript,
  };
}

export function judgeOverhead(result: OverheadResult): { met: boolean; text: string } {
  const met = result.medianRatio <= TARGET_RATIO;
  return {
    met,
    text: `${met ? "MET" : "MISSED"}: median ratio ${result.medianRatio.toFixed(3)}x against a target of at most ${TARGET_RATIO.toFixed(2)}x`,
  };
}
