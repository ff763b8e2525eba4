// Renders benchmark results as markdown: machine, commands, raw numbers, breakdown and a verdict per target.
import { loadavg } from "node:os";
import type { MachineInfo } from "./machine.js";
import type { BenchOptions } from "./options.js";
import { judgeOverhead, type OverheadResult } from "./overhead-bench.js";
import { computeMedian, formatSummary } from "./stats.js";
import { renderLogs, type LogsMeasurement } from "./logs-bench.js";
import { describeThroughput, type TransferResult } from "./transfer-bench.js";
import type { CallKind, CallTimeline } from "./call-timeline.js";

const RSS_TARGET_MIB = 150;
const THROUGHPUT_TARGET = 0.9;

function renderMachine(machine: MachineInfo, argv: readonly string[]): string[] {
  return [
    `- date: ${machine.date}; commit ${machine.commit} plus the working tree`,
    `- machine: ${machine.nproc} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB memory, Linux ${machine.kernel}`,
    `- node ${machine.node}; ${machine.tar}`,
    `- kubectl: ${machine.kubectl}`,
    `- load average at the start: ${machine.loadAverage.join(", ")} (1, 5, 15 min; other work on the machine shows up here)`,
    `- scratch dir (fake pod volumes, --out dirs, baseline dirs): ${machine.scratch ?? "?"}`,
    `- command: \`npm run bench${argv.length ? ` -- ${argv.join(" ")}` : ""}\``,
  ];
}

const TIMELINE_ROWS: ReadonlyArray<readonly [string, (t: CallTimeline) => number]> = [
  ["spawn → first call recorded (caller start-up + 1 fake start-up)", (t) => t.leadMs],
  ...(["create", "get", "upload", "step", "download", "delete"] as CallKind[]).map(
    (kind) =>
      [
        `inside ${kind === "step" ? "the 6 step execs" : kind} (fake's own clock, latency included)`,
        (t: CallTimeline) => t.insideMs[kind],
      ] as const,
  ),
  ["between calls (caller work + the next fake's start-up)", (t) => t.betweenMs],
  ["last call end → exit", (t) => t.tailMs],
];

function renderOverhead(result: OverheadResult): string[] {
  const verdict = judgeOverhead(result);
  const lines = [
    `### Runner overhead (fake kubectl latencyMs ${result.latencyMs})`,
    "",
    `Workflow: 5 steps of \`true\` and one \`echo\`, a 2-file checkout. Each repetition runs the runner and the plain script once (alternating which goes first), after one unmeasured warm-up round of each; both make the same ${result.reps[0]?.runnerTimeline.calls ?? "?"} kubectl calls (${result.reps[0]?.runnerTimeline.kinds.join(", ") ?? ""}), checked on the fake's call records every repetition.`,
    "",
    `- runner: \`${result.runnerCommand}\``,
    `- plain: \`${result.plainCommand}\` (the script is printed below)`,
    "",
    "| rep | runner ms | plain ms | ratio |",
    "| --- | ---: | ---: | ---: |",
    ...result.reps.map(
      (r, i) => `| ${i + 1} | ${r.runnerMs.toFixed(0)} | ${r.plainMs.toFixed(0)} | ${r.ratio.toFixed(3)} |`,
    ),
    "",
    `- runner: ${formatSummary(result.runner, "ms")}`,
    `- plain: ${formatSummary(result.plain, "ms")}`,
    `- ratio per rep: ${formatSummary(result.ratio, "x", 3)}`,
    `- **${verdict.text}** (ratio of the medians)`,
    "",
    "Where the time goes (median over the repetitions, from the fake kubectl's call records):",
    "",
    "| part | runner ms | plain ms | runner − plain |",
    "| --- | ---: | ---: | ---: |",
    ...TIMELINE_ROWS.map(([label, pick]) => {
      const runner = computeMedian(result.reps.map((r) => pick(r.runnerTimeline)));
      const plain = computeMedian(result.reps.map((r) => pick(r.plainTimeline)));
      return `| ${label} | ${runner.toFixed(0)} | ${plain.toFixed(0)} | ${(runner - plain).toFixed(0)} |`;
    }),
    "",
    "Each gap between calls (median; the next fake's start-up is in both columns):",
    "",
    "| gap | runner ms | plain ms | runner − plain |",
    "| --- | ---: | ---: | ---: |",
    ...(result.reps[0]?.runnerTimeline.gapsMs ?? []).map((_, i) => {
      const kinds = result.reps[0]!.runnerTimeline.kinds;
      const runner = computeMedian(result.reps.map((r) => r.runnerTimeline.gapsMs[i] ?? 0));
      const plain = computeMedian(result.reps.map((r) => r.plainTimeline.gapsMs[i] ?? 0));
      return `| ${kinds[i]} → ${kinds[i + 1]} | ${runner.toFixed(0)} | ${plain.toFixed(0)} | ${(runner - plain).toFixed(0)} |`;
    }),
    "",
    `- the runner's start-up alone (\`--dry-run\`: node, module loading, validation, plan; no kubectl call): ${formatSummary(result.runnerDryRun, "ms")}`,
    `- \`node -e 0\` on this machine: ${formatSummary(result.nodeStartup, "ms")}`,
    "",
    "<details><summary>the plain script</summary>",
    "",
    "```sh",
    result.plainScript.trimEnd(),
    "```",
    "",
    "</details>",
  ];
  return lines;
}

function renderTransfer(results: readonly TransferResult[]): string[] {
  const lines = [
    "### Big transfer",
    "",
    `Each size: a generated checkout (deterministic content; half the bytes in one large blob per 1,250 files, the rest in small files of 0–2x the average size, three directory levels), streamed in by the runner, copied with the step \`cp -a /work/. /outputs/\`, streamed back out. Upload times are the runner's \`scan\` phase (the checkout listed and checked before the Job is created; tar packs from that list) plus its \`upload\` phase, download times its \`download\` phase, all from \`log.ndjson\` (kubectl spawn and latency included, as in the baseline); the runner process's peak RSS is its VmHWM polled every 20 ms from /proc. The baseline runs the same calls as plain shell pipelines, each timed from \`sh\` spawn to exit. Runner and baseline alternate which goes first.`,
    "",
  ];
  for (const r of results) {
    const uploadMet = r.uploadRatio >= THROUGHPUT_TARGET;
    const downloadMet = r.downloadRatio >= THROUGHPUT_TARGET;
    const rssMet = r.peakRssMiB.max <= RSS_TARGET_MIB;
    lines.push(
      `#### ${r.size.label} (${r.checkout.bytes} bytes, ${r.checkout.files} files, ${r.checkout.dirs} dirs)`,
      "",
      r.size.role === "issue"
        ? "The size the issue states its targets for (throughput ≥ 0.9x of plain tar, peak RSS ≤ 150 MiB)."
        : "A size beyond the issue's 1 GiB checkout: the same bars, where fixed costs or many small files weigh more.",
      "",
      `- runner: \`${r.runnerCommand}\``,
      `- plain upload: \`${r.plainCommands.upload}\``,
      `- plain download: \`${r.plainCommands.download}\``,
      "",
      "| rep | runner scan + upload ms (scan) | plain upload ms | runner download ms | plain download ms | runner peak RSS MiB (VmHWM) | max VmRSS in upload / step / download MiB | runner wall ms |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
      ...r.reps.map(
        (x, i) =>
          `| ${i + 1} | ${x.runnerUploadMs} (${x.runnerScanMs}) | ${x.plainUploadMs.toFixed(0)} | ${x.runnerDownloadMs} | ${x.plainDownloadMs.toFixed(0)} | ${(x.runnerPeakRssKiB / 1024).toFixed(1)} | ${[x.rssByPhaseKiB.upload, x.rssByPhaseKiB.step, x.rssByPhaseKiB.download].map((k) => (k / 1024).toFixed(1)).join(" / ")} | ${x.runnerWallMs.toFixed(0)} |`,
      ),
      "",
      `- upload: runner ${formatSummary(r.runnerUpload, "ms")} = ${describeThroughput(r.checkout.bytes, r.runnerUpload.median)}; plain ${formatSummary(r.plainUpload, "ms")} = ${describeThroughput(r.checkout.bytes, r.plainUpload.median)}`,
      `- download: runner ${formatSummary(r.runnerDownload, "ms")} = ${describeThroughput(r.checkout.bytes, r.runnerDownload.median)}; plain ${formatSummary(r.plainDownload, "ms")} = ${describeThroughput(r.checkout.bytes, r.plainDownload.median)}`,
      `- **upload throughput ${uploadMet ? "MET" : "MISSED"}: ${r.uploadRatio.toFixed(2)}x of plain tar (target ≥ ${THROUGHPUT_TARGET}x)**`,
      `- **download throughput ${downloadMet ? "MET" : "MISSED"}: ${r.downloadRatio.toFixed(2)}x of plain tar (target ≥ ${THROUGHPUT_TARGET}x)**`,
      `- for reference: the upload phase without the scan ${r.uploadPhaseRatio.toFixed(2)}x; each repetition's plain / runner time (paired, less swayed by load drifting between repetitions): upload ${formatSummary(r.pairedUploadRatio, "x", 2)}, download ${formatSummary(r.pairedDownloadRatio, "x", 2)}`,
      `- host-side parts alone (no kubectl, no pod; measured once in the bench's own node process): packTrees ${r.parts.packMs.toFixed(0)} ms (${describeThroughput(r.checkout.bytes, r.parts.packMs)}) vs \`tar -cf - -C DIR . | cat > /dev/null\` ${r.parts.tarPackMs.toFixed(0)} ms (${describeThroughput(r.checkout.bytes, r.parts.tarPackMs)}); \`tar -cf\` into extractOutputs ${r.parts.extractMs.toFixed(0)} ms (${describeThroughput(r.checkout.bytes, r.parts.extractMs)}) vs \`tar -cf - -C DIR . | tar -xf - -C DEST\` ${r.parts.tarExtractMs.toFixed(0)} ms (${describeThroughput(r.checkout.bytes, r.parts.tarExtractMs)})`,
      `- **peak RSS ${rssMet ? "MET" : "MISSED"}: at most ${r.peakRssMiB.max.toFixed(1)} MiB over ${r.peakRssMiB.n} run(s) (target ≤ ${RSS_TARGET_MIB} MiB)**`,
      "",
    );
  }
  return lines;
}

export function renderReport(
  machine: MachineInfo,
  options: BenchOptions,
  argv: readonly string[],
  overhead: OverheadResult | undefined,
  transfers: readonly TransferResult[],
  totalMs: number,
  logs?: readonly LogsMeasurement[],
): string {
  const lines = [
    "## Run of " + machine.date.slice(0, 10) + (options.quick ? " (--quick)" : ""),
    "",
    ...renderMachine(machine, argv),
    `- load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")}`,
    `- whole benchmark: ${(totalMs / 1000).toFixed(0)} s`,
    "",
  ];
  if (overhead) lines.push(...renderOverhead(overhead), "");
  if (transfers.length > 0) lines.push(...renderTransfer(transfers));
  if (logs && logs.length > 0) lines.push(...renderLogs(logs), "");
  return lines.join("\n").trimEnd() + "\n";
}
