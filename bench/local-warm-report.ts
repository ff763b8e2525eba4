// Renders the warm-capacity benchmark as markdown: per run, time to first output and capacity; per scenario, node-seconds.
import { loadavg } from "node:os";
import type { WarmBenchResult, WarmScenario } from "./local-warm-bench.js";
import type { MachineInfo } from "./machine.js";
import { computeMedian } from "./stats.js";

const seconds = (ms: number | null): string => (ms === null ? "–" : (ms / 1000).toFixed(1));

function describeScenario(s: WarmScenario): string {
  const firsts = s.runs.map((r) => r.firstOutputMs);
  return `| ${s.label}${s.extraArgs.length ? ` (\`${s.extraArgs.join(" ")}\`)` : ""} | ${s.runs.map((r) => `${seconds(r.firstOutputMs)} (${r.capacity ?? "?"})`).join(", ")} | ${seconds(computeMedian(firsts))} | ${seconds(firsts.reduce((a, b) => a + b, 0))} | ${s.nodes.length} | ${s.nodeSeconds.toFixed(0)} | ${seconds(s.spanMs)} |`;
}

export function renderWarmReport(
  machine: MachineInfo,
  argv: readonly string[],
  result: WarmBenchResult,
  totalMs: number,
): string {
  const { settings, scenarios } = result;
  const [cold, warm] = scenarios;
  const lines = [
    `## Warm capacity on the local cluster scaling from zero: run of ${machine.date.slice(0, 10)}`,
    "",
    `- date: ${machine.date}; commit ${machine.commit} plus the working tree; kubectl ${settings.kubectlPath}`,
    `- machine: ${machine.nproc} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB memory; node ${machine.node}`,
    `- load average at the start: ${machine.loadAverage.join(", ")}; at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")}`,
    `- command: \`npm run bench${argv.length ? ` -- ${argv.join(" ")}` : ""}\`; whole benchmark ${(totalMs / 1000).toFixed(0)} s`,
    `- runner: \`${result.runnerCommand}\` (the cold scenario without \`--keep-warm\`)`,
    "",
    `The local cluster in its scale-from-zero mode: a node is Ready ${settings.joinSeconds} s after the scale-up and goes ${settings.holdSeconds} s after the last demand; each scenario starts on a fresh cluster with no node. ${settings.runs} runs of one step (\`echo hi\`, a 2-file checkout), ${settings.gapSeconds} s from one run's end to the next one's start (longer than the hold, as between pushes). Time to first output is from the runner's spawn to its first step-output line (log.ndjson); node-seconds are each node's rent (scale-up) to its removal, counted until the cluster had no node again, the tail after the last run included.`,
    "",
    "| scenario | time to first output per run, s (capacity) | median, s | sum, s | nodes rented | node-seconds | first spawn → no node, s |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...scenarios.map(describeScenario),
  ];
  if (cold && warm) {
    const saved =
      cold.runs.reduce((a, r) => a + r.firstOutputMs, 0) - warm.runs.reduce((a, r) => a + r.firstOutputMs, 0);
    const paid = warm.nodeSeconds - cold.nodeSeconds;
    lines.push(
      "",
      `Latency bought: ${(saved / 1000).toFixed(1)} s less waiting for first output over the ${settings.runs} runs (${(saved / 1000 / Math.max(1, settings.runs - 1)).toFixed(1)} s per run after the first); its price: ${paid.toFixed(0)} more node-seconds (${(paid / Math.max(1, saved / 1000)).toFixed(1)} node-seconds per second saved).`,
    );
  }
  return `${lines.join("\n")}\n`;
}
