// Renders the local-cluster benchmarks as markdown: machine, tools, commands, raw numbers and a verdict per figure.
import type { FirstOutputResult } from "./local-first-output-bench.js";
import type { Leftovers, ToolVersions } from "./local-cluster-env.js";
import { OVERHEAD_SEGMENTS, type LocalOverheadResult, type OverheadSegment } from "./local-overhead-bench.js";
import { IN_POD_PACK, IN_POD_TAR, type OutputsResult } from "./local-outputs-bench.js";
import type { StepResult } from "./local-step-bench.js";
import type { MachineInfo } from "./machine.js";
import { computeMedian, formatSummary, type Summary } from "./stats.js";

const OVERHEAD_TARGET = 1.1;
const THROUGHPUT_TARGET = 0.9;
const MIB = 1024 * 1024;

export interface LocalReportInput {
  readonly machine: MachineInfo;
  readonly tools: ToolVersions;
  readonly argv: readonly string[];
  readonly scratch: string;
  readonly totalMs: number;
  /** Wall time of each benchmark, ms. */
  readonly elapsed: ReadonlyArray<readonly [string, number]>;
  readonly loadAtEnd: readonly number[];
  readonly leftovers: Leftovers;
  readonly overhead?: LocalOverheadResult;
  readonly firstOutput?: FirstOutputResult;
  readonly step?: StepResult;
  readonly outputs?: OutputsResult;
}

const SEGMENT_LABELS: Record<OverheadSegment, string> = {
  created: "spawn → Job created",
  running: "→ a `get pods` shows Running",
  uploaded: "→ checkout uploaded",
  steps: "→ the 6 steps done",
  downloaded: "→ /outputs downloaded",
  deleted: "→ Job deleted",
  exit: "→ process exit",
};

function ms(value: number): string {
  return Number.isFinite(value) ? value.toFixed(0) : "?";
}

function compare(runner: Summary, plain: Summary): string {
  const diff = runner.median - plain.median;
  return `runner − plain = ${diff >= 0 ? "+" : ""}${diff.toFixed(0)} ms, ratio ${(runner.median / plain.median).toFixed(2)}x (medians)`;
}

function renderOverhead(r: LocalOverheadResult): string[] {
  const met = r.medianRatio <= OVERHEAD_TARGET;
  const median = (pick: (rep: LocalOverheadResult["reps"][number]) => number) => computeMedian(r.reps.map(pick));
  return [
    "### 1. The core's overhead benchmark on the local cluster",
    "",
    "Workflow: 5 steps of `true` and one `echo`, a 2-file checkout. One unmeasured warm-up round of each side, then each repetition runs the runner and the plain script once, alternating which goes first; before each run the bench waits (untimed) until no Job, pod or podman container is left. The plain script makes the same calls as the runner's call plan (`create`, `get pods` polled every 250 ms, `exec -i` upload, one `exec` per step, `exec` download, `delete`); its `@marker` lines are builtin echos timestamped by the bench as they arrive.",
    "",
    `- runner: \`${r.runnerCommand}\``,
    '- plain: `sh -c "$SCRIPT"` with the script below (env K, KC, NS, JOB, SELECTOR and MANIFEST from the runner\'s --dry-run, CHECKOUT, DEST)',
    "",
    "| rep | runner ms | plain ms | ratio | runner calls | plain calls |",
    "| --- | ---: | ---: | ---: | --- | --- |",
    ...r.reps.map(
      (x, i) =>
        `| ${i + 1} | ${ms(x.runner.wallMs)} | ${ms(x.plain.wallMs)} | ${(x.runner.wallMs / x.plain.wallMs).toFixed(3)} | ${x.runner.callSummary} | ${x.plain.callSummary} |`,
    ),
    "",
    `- runner: ${formatSummary(r.runner, "ms")}`,
    `- plain: ${formatSummary(r.plain, "ms")}`,
    `- ratio per rep: ${formatSummary(r.ratio, "x", 3)}`,
    `- **${met ? "MET" : "MISSED"}: ratio of the medians ${r.medianRatio.toFixed(3)}x against the core's target of at most ${OVERHEAD_TARGET.toFixed(2)}x** (${compare(r.runner, r.plain)})`,
    "",
    "Where the time goes (median over the repetitions of each segment; boundaries from the runner's log.ndjson and the plain script's markers):",
    "",
    "| segment | runner ms | plain ms | runner − plain |",
    "| --- | ---: | ---: | ---: |",
    ...OVERHEAD_SEGMENTS.map((segment) => {
      const a = median((x) => x.runner.segments[segment]);
      const b = median((x) => x.plain.segments[segment]);
      return `| ${SEGMENT_LABELS[segment]} | ${ms(a)} | ${ms(b)} | ${ms(a - b)} |`;
    }),
    "",
    `- the runner's start-up (spawn → its run-start event: node, module loading, validation): ${ms(median((x) => x.runner.startupMs))} ms median`,
    `- pod Running in the API server's store → the \`get pods\` that showed it: runner ${ms(median((x) => x.runner.noticeLagMs))} ms, plain ${ms(median((x) => x.plain.noticeLagMs))} ms (medians; the runner polls every 250 ms for its first second, then less often (\`podPollMs\`), the script every 250 ms)`,
    "",
    ...renderPlainScript(r.plainScript),
  ];
}

/** The plain script a figure was compared with, folded away under its figure. */
function renderPlainScript(script: string): string[] {
  return ["<details><summary>the plain script</summary>", "", "```sh", script.trimEnd(), "```", "", "</details>", ""];
}

function renderFirstOutput(r: FirstOutputResult): string[] {
  const part = (pick: (p: FirstOutputResult["reps"][number]["runnerParts"]) => number) =>
    ms(computeMedian(r.reps.map((x) => pick(x.runnerParts))));
  return [
    "### 2. Pod Running → first step output",
    "",
    `Runner: a one-step workflow (\`${"echo hi"}\`, the same 2-file checkout), from its \`pod-ready\` event (a \`get pods\` showed Running) to its first \`step-output\` event, both from log.ndjson. Plain: a script that creates the same Job, polls \`get pods\` every 250 ms, prints \`@running\` when one shows Running, then runs \`kubectl exec POD -c run -- echo hi\`; measured from \`@running\` to the first byte of \`hi\` arriving on its stdout. One warm-up round of each, then alternating order.`,
    "",
    `- runner: \`${r.runnerCommand}\``,
    "",
    "| rep | runner ms | of which: → upload start | upload | upload end → step start | step start → first output | plain ms | plain upload (after) | plain echo after upload |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...r.reps.map(
      (x, i) =>
        `| ${i + 1} | ${x.runnerMs} | ${x.runnerParts.toUpload} | ${x.runnerParts.upload} | ${x.runnerParts.toStep} | ${x.runnerParts.stepToOutput} | ${x.plainMs} | ${x.plainUploadMs} | ${x.plainAfterUploadMs} |`,
    ),
    "",
    `- runner: ${formatSummary(r.runner, "ms")}; medians of its parts: to upload ${part((p) => p.toUpload)}, upload ${part((p) => p.upload)}, to step ${part((p) => p.toStep)}, step start → first output ${part((p) => p.stepToOutput)} ms`,
    `- plain: ${formatSummary(r.plain, "ms")}`,
    `- **${compare(r.runner, r.plain)}**`,
    `- the runner must upload the checkout before its first step; the plain script's same upload afterwards (\`tar -cf - -C CHECKOUT . | kubectl exec -i POD -c run -- tar -xf - -C /work\`) took ${formatSummary(r.plainUpload, "ms")}, and \`echo hi\` after it ${formatSummary(r.plainAfterUpload, "ms")}: plain upload + echo ≈ ${ms(r.plainUpload.median + r.plainAfterUpload.median)} ms against the runner's ${ms(r.runner.median)} ms`,
    "",
    ...renderPlainScript(r.plainScript),
  ];
}

function renderStep(r: StepResult): string[] {
  const s = r.samples;
  return [
    "### 3. Per-step overhead: an empty step",
    "",
    `${r.runs} runner run(s) of ${s.runnerMs.length / r.runs} steps of \`true\` each, with \`--keep\`; right after each run, against the same pod: ${s.bareMs.length / r.runs} bare \`kubectl exec POD -c run -- sh -c true\` and as many bare \`kubectl exec POD -c run -- sh /knotless/helper.sh run N\` (the runner's own exec for a fresh \`true\` step, without the runner), interleaved, each timed from spawn to exit; then, without kubectl or the API server, \`podman exec\` of \`sh -c true\` and of \`helper.sh run N\`. The runner's figure is its step duration (step-start → step-end event).`,
    "",
    `- runner: \`${r.runnerCommand}\``,
    `- bare: \`${r.bareCommand}\``,
    `- bare helper: \`${r.bareHelperCommand}\``,
    "",
    "| sample | raw ms |",
    "| --- | --- |",
    `| runner step durations | ${s.runnerMs.join(", ")} |`,
    `| bare \`kubectl exec … sh -c true\` | ${s.bareMs.map(ms).join(", ")} |`,
    `| bare \`kubectl exec … helper.sh run N\` | ${s.bareHelperMs.map(ms).join(", ")} |`,
    `| \`podman exec … sh -c true\` | ${s.podmanTrueMs.map(ms).join(", ")} |`,
    `| \`podman exec … helper.sh run N\` | ${s.podmanHelperMs.map(ms).join(", ")} |`,
    `| runner: step end → next step start | ${s.runnerGapMs.join(", ")} |`,
    "",
    `- runner step: ${formatSummary(r.runner, "ms")}`,
    `- bare exec: ${formatSummary(r.bare, "ms")}`,
    `- **${compare(r.runner, r.bare)}**`,
    `- split: bare helper exec ${formatSummary(r.bareHelper, "ms")} → the runner process's own share ≈ ${ms(r.runner.median - r.bareHelper.median)} ms, the helper's in-pod share ≈ ${ms(r.bareHelper.median - r.bare.median)} ms (via kubectl); without kubectl: podman exec \`helper.sh run N\` ${ms(r.podmanHelper.median)} ms vs \`sh -c true\` ${ms(r.podmanTrue.median)} ms (medians, n=${r.podmanTrue.n})`,
    `- between steps inside the runner: ${formatSummary(r.runnerGap, "ms")}`,
    "",
  ];
}

function throughput(bytes: number, millis: number): string {
  return `${(bytes / MIB / (millis / 1000)).toFixed(1)} MiB/s`;
}

function renderOutputs(r: OutputsResult): string[] {
  const ratio = r.plain.median / r.runner.median;
  const met = ratio >= THROUGHPUT_TARGET;
  const h = r.hostParts;
  return [
    "### 4. The 200 MB outputs round trip",
    "",
    `A runner run (\`--keep\`) whose one step writes ${r.files} files of ${r.bytes / r.files} bytes (${r.bytes} bytes) into /outputs with one busybox awk process; the runner's figure is its \`download\` phase (log.ndjson: the \`pack-outputs\` exec, hashing on both sides, the hostile-archive extractor writing into <out>/outputs). Right after, from the same pod and files, in rotating order: the plain download, and two kubectl execs whose stdout goes to /dev/null (the runner's \`${"sh /knotless/helper.sh pack-outputs"}\`, and plain \`tar -cf - -C /outputs .\`) to split pod side + transport from the host side; then the same two inside the pod alone through \`podman exec\`. Destinations are on the scratch dir. Every download is checked: ${r.files} files, ${r.bytes} bytes.`,
    "",
    `- runner: \`${r.runnerCommand}\``,
    `- plain: \`${r.plainCommand}\``,
    "",
    "| rep | runner download ms | plain ms | kubectl pack-outputs → /dev/null ms | kubectl tar → /dev/null ms | in pod: pack-outputs ms | in pod: tar ms | runner peak RSS MiB | fill step ms |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...r.reps.map(
      (x, i) =>
        `| ${i + 1} | ${x.runnerMs} | ${ms(x.plainMs)} | ${ms(x.packOutputsDiscardMs)} | ${ms(x.tarDiscardMs)} | ${ms(x.inPodPackMs)} | ${ms(x.inPodTarMs)} | ${(x.runnerPeakRssKiB / 1024).toFixed(1)} | ${x.fillMs} |`,
    ),
    "",
    `- runner download: ${formatSummary(r.runner, "ms")} = ${throughput(r.bytes, r.runner.median)}`,
    `- plain: ${formatSummary(r.plain, "ms")} = ${throughput(r.bytes, r.plain.median)}`,
    `- **${met ? "MET" : "MISSED"}: download throughput ${ratio.toFixed(2)}x of plain tar (the core's target ≥ ${THROUGHPUT_TARGET}x); ${compare(r.runner, r.plain)}**`,
    `- pod side + transport, host side discarded: the runner's pack-outputs exec ${formatSummary(r.packOutputsDiscard, "ms")}; plain tar exec ${formatSummary(r.tarDiscard, "ms")}`,
    `- inside the pod alone (podman exec from the bench, no kubectl, no transport): \`${IN_POD_PACK}\` ${formatSummary(r.inPodPack, "ms")}; \`${IN_POD_TAR}\` ${formatSummary(r.inPodTar, "ms")}`,
    `- host side alone (once, in the bench's process, on the downloaded tree): \`tar -cf\` into a sha256 tap + extractOutputs ${ms(h.extractMs)} ms (${throughput(r.bytes, h.extractMs)}) vs \`tar -cf - | tar -xf -\` ${ms(h.tarExtractMs)} ms (${throughput(r.bytes, h.tarExtractMs)})`,
    `- runner peak RSS: ${formatSummary(r.peakRssMiB, "MiB", 1)}`,
    "",
    "<details><summary>the fill step</summary>",
    "",
    "```sh",
    r.fillStep,
    "```",
    "",
    "</details>",
    "",
  ];
}

export function renderLocalReport(input: LocalReportInput): string {
  const { machine, tools, leftovers } = input;
  const left = [...leftovers.containers, ...leftovers.pods, ...leftovers.volumes];
  const lines = [
    `## On the local cluster: run of ${machine.date.slice(0, 10)}`,
    "",
    `- date: ${machine.date}; commit ${machine.commit} plus the working tree`,
    `- machine: ${machine.nproc} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB memory, Linux ${machine.kernel}; node ${machine.node}; ${machine.tar}`,
    `- kubectl: ${tools.kubectl}; ${tools.podman}, runtime ${tools.runtime}; image docker.io/library/busybox:1.36 (local busybox-static)`,
    "- cluster: local-cluster/ started in the bench's own process (`startLocalCluster()`); every kubectl, the runner and the plain scripts are child processes",
    `- load average at the start: ${machine.loadAverage.join(", ")}; at the end: ${input.loadAtEnd.map((l) => l.toFixed(2)).join(", ")} (1, 5, 15 min)`,
    `- scratch dir (--out dirs, plain download destinations): ${input.scratch}`,
    `- command: \`npm run bench${input.argv.length ? ` -- ${input.argv.join(" ")}` : ""}\``,
    `- local-cluster benchmarks: ${(input.totalMs / 1000).toFixed(0)} s (${input.elapsed.map(([name, t]) => `${name} ${(t / 1000).toFixed(0)} s`).join(", ")}); left in podman by this cluster afterwards: ${left.length === 0 ? "nothing (containers, pods, volumes)" : left.join(", ")}`,
    "",
  ];
  if (input.overhead) lines.push(...renderOverhead(input.overhead));
  if (input.firstOutput) lines.push(...renderFirstOutput(input.firstOutput));
  if (input.step) lines.push(...renderStep(input.step));
  if (input.outputs) lines.push(...renderOutputs(input.outputs));
  return lines.join("\n").trimEnd() + "\n";
}

/** The report when the local-cluster benchmarks could not run here. */
export function renderLocalSkipped(reason: string): string {
  return `## On the local cluster\n\nSkipped: ${reason}\n`;
}
