// Renders the masking benchmark as markdown: what was measured, the raw figures and a verdict per target.
import { loadavg } from "node:os";
import type { MachineInfo } from "./machine.js";
import type { MaskResult } from "./mask-bench.js";
import { computeMedian, formatSummary } from "./stats.js";

const THROUGHPUT_TARGET_MBPS = 200;
const RELAY_TARGET = 0.9;
/** "Independent of the output size": ten times the output may cost at most this much more peak RSS. */
const RSS_GROWTH_LIMIT = 0.1;
const MIB = 1024 * 1024;

const formatMiB = (kib: number): string => (kib / 1024).toFixed(1);
const judge = (met: boolean): string => (met ? "met" : "NOT met");

export function renderMaskReport(
  machine: MachineInfo,
  argv: readonly string[],
  result: MaskResult,
  totalMs: number,
): string {
  const { sizes } = result;
  const [small, large, plain] = result.rss;
  const growth = small && large ? large.relayRssKiB / small.relayRssKiB - 1 : Number.NaN;
  const throughput = result.throughputMBps.median;
  const maskShare =
    computeMedian(result.relay.map((r) => r.masked.maskMs)) / computeMedian(result.relay.map((r) => r.masked.cpuMs));
  const lines = [
    `## Secret masking: run of ${machine.date.slice(0, 10)}`,
    "",
    `- date: ${machine.date}; commit ${machine.commit} plus the working tree`,
    `- machine: ${machine.nproc} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB memory; node ${machine.node}`,
    `- load average at the start: ${machine.loadAverage.join(", ")}; at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")}`,
    `- command: \`npm run bench${argv.length ? ` -- ${argv.join(" ")}` : ""}\`; whole benchmark ${(totalMs / 1000).toFixed(0)} s`,
    "",
    `${result.secrets} secrets (tokens, keys, passwords with symbols, non-ASCII, JWTs) give ${result.forms} forms of ${result.shortestForm} to ${result.longestForm} characters (plain, base64 in both alphabets, padded, unpadded and at the three alignments). The output is generated: a ${(result.poolBytes / MIB).toFixed(1)} MiB pool of build-log lines (words, URLs, paths, hashes, base64 blobs, non-ASCII), ${result.poolSecretLines} of them carrying a secret form or a base64 blob with a secret inside, repeated; checked before timing (every secret line masked once, no form left, the streamed result equal to masking the pool whole). Output is fed in 64 KiB reads.`,
    "",
    "| target | measured | verdict |",
    "| --- | --- | --- |",
    `| masking throughput ≥ ${THROUGHPUT_TARGET_MBPS} MB/s (${sizes.throughputBytes / MIB} MiB through one stream, already decoded) | ${formatSummary(result.throughputMBps, "MB/s")} | **${judge(throughput >= THROUGHPUT_TARGET_MBPS)}** |`,
    `| peak RSS independent of the output size (child process decoding and masking; ≤ ${RSS_GROWTH_LIMIT * 100} % more for ${sizes.rssLargeBytes / sizes.rssSmallBytes}x the output) | highest VmRSS while masking: ${small ? formatMiB(small.relayRssKiB) : "?"} MiB at ${sizes.rssSmallBytes / MIB} MiB, ${large ? formatMiB(large.relayRssKiB) : "?"} MiB at ${sizes.rssLargeBytes / MIB} MiB (${(growth * 100).toFixed(1)} %); without a masker ${plain ? formatMiB(plain.relayRssKiB) : "?"} MiB | **${judge(growth <= RSS_GROWTH_LIMIT)}** |`,
    `| output relay with masking ≥ ${RELAY_TARGET}x without (${sizes.relayBytes / MIB} MiB of step output to run.log and log.ndjson), by the process's CPU time | CPU ${result.relayCpuRatio.toFixed(3)}x; wall ${result.relayWallRatio.toFixed(3)}x (ratios of the medians; wall per rep ${formatSummary(result.pairedRelayWallRatio, "x", 3)}); the masker's own share ${(maskShare * 100).toFixed(1)} % of the masked relay's CPU | **${judge(result.relayCpuRatio >= RELAY_TARGET)}** (wall: ${judge(result.relayWallRatio >= RELAY_TARGET)}) |`,
    "",
    `Peak RSS (maxRSS of a child process, \`node dist/bench/mask-rss-child.js BYTES mask|plain\`: the pool, a StringDecoder and, in \`mask\` mode, the masker; decode + mask time for reference):`,
    "",
    "| output | mode | peak RSS MiB (maxRSS, building the pool included) | highest VmRSS while decoding and masking, MiB | decode (+ mask) MB/s |",
    "| ---: | --- | ---: | ---: | ---: |",
    ...result.rss.map(
      (r) =>
        `| ${r.bytes / MIB} MiB | ${r.mode} | ${formatMiB(r.maxRssKiB)} | ${formatMiB(r.relayRssKiB)} | ${(r.bytes / 1e6 / (r.ms / 1000)).toFixed(0)} |`,
    ),
    "",
    `- the masker's own share (mask − plain at ${sizes.rssLargeBytes / MIB} MiB, VmRSS while masking): ${small && large && plain ? formatMiB(large.relayRssKiB - plain.relayRssKiB) : "?"} MiB`,
    "",
    "Output relay, in process: the pod helper's frames (256 KiB stdout frames, every fourth a 4 KiB stderr one) in 64 KiB reads → `FollowFrameParser` → `StringDecoder` per stream → masker → `step-output` events → `createHumanLogSink` and `createNdjsonLogSink` writing files in the scratch dir, one event-loop turn per read; timed until both files are closed. Masked and plain alternate which goes first. The verdict counts the process's CPU time (user + system, every thread): on a shared 2-core machine the wall time also counts the wait for a CPU, which has nothing to do with the masker. The masker column is the wall time inside the mask streams' calls (under load it includes waits for a CPU too).",
    "",
    "| rep | masked wall ms | plain wall ms | wall plain / masked | masked CPU ms | plain CPU ms | CPU plain / masked | masker ms | run.log MiB | log.ndjson MiB |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...result.relay.map(
      ({ masked, plain }, i) =>
        `| ${i + 1} | ${masked.wallMs.toFixed(0)} | ${plain.wallMs.toFixed(0)} | ${(plain.wallMs / masked.wallMs).toFixed(3)} | ${masked.cpuMs.toFixed(0)} | ${plain.cpuMs.toFixed(0)} | ${(plain.cpuMs / masked.cpuMs).toFixed(3)} | ${masked.maskMs.toFixed(0)} | ${(masked.runLogBytes / MIB).toFixed(0)} | ${(masked.ndjsonBytes / MIB).toFixed(0)} |`,
    ),
    "",
    `- relay throughput, masked: ${(sizes.relayBytes / 1e6 / (computeMedian(result.relay.map((r) => r.masked.wallMs)) / 1000)).toFixed(0)} MB/s of step output by the wall clock, ${(sizes.relayBytes / 1e6 / (computeMedian(result.relay.map((r) => r.masked.cpuMs)) / 1000)).toFixed(0)} MB/s per CPU second (medians)`,
    "",
    `The search algorithms considered (src/secrets/form-matcher.ts), each run on ${sizes.alternativesBytes / MIB} MiB of the same output, one 64 KiB text at a time, without the streaming around it:`,
    "",
    "| search | MB/s | matches in one pass over the pool |",
    "| --- | ---: | ---: |",
    ...result.alternatives.map((a) => `| ${a.name} | ${a.mbps.toFixed(0)} | ${a.matches} |`),
  ];
  return `${lines.join("\n")}\n`;
}
