// Benchmark: secret masking throughput, the masker's peak RSS at two output sizes, and the output relay with and without it.
import { mkdtemp, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { fileURLToPath } from "node:url";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { createEventEmitter } from "../src/events/run-events.js";
import { createHumanLogSink, createNdjsonLogSink } from "../src/events/sinks.js";
import { FollowFrameParser } from "../src/pod/follow-frames.js";
import { MASK, SecretMasker, type MaskStream } from "../src/secrets/mask-stream.js";
import { buildSecretForms } from "../src/secrets/secret-forms.js";
import { measureAlternatives, type AlternativeTiming } from "./mask-alternatives.js";
import { makeBenchSecrets, makeOutputPool, READ_BYTES, type OutputPool } from "./mask-output.js";
import { computeMedian, summarizeValues, type Summary } from "./stats.js";
import { assertSucceeded, runTimed } from "./timed-process.js";

const MIB = 1024 * 1024;
const POOL_BYTES = 4 * MIB;
const CHILD = fileURLToPath(new URL("./mask-rss-child.js", import.meta.url));

export interface MaskSizes {
  readonly throughputBytes: number;
  readonly rssSmallBytes: number;
  readonly rssLargeBytes: number;
  readonly relayBytes: number;
  /** Output each alternative search algorithm is timed on. */
  readonly alternativesBytes: number;
  /** Repetitions of the throughput measurement. */
  readonly reps: number;
  /** Masked/plain pairs of relay runs: the relay's own time swings by ±10 % between runs, so more, shorter ones. */
  readonly relayReps: number;
}

/** The sizes (1 GiB of output; RSS at 100 MiB and 1 GiB; the relay, whose logs are written, at 128 MiB); --quick is smaller. */
export function pickMaskSizes(quick: boolean): MaskSizes {
  return quick
    ? {
        throughputBytes: 128 * MIB,
        rssSmallBytes: 16 * MIB,
        rssLargeBytes: 160 * MIB,
        relayBytes: 32 * MIB,
        alternativesBytes: 16 * MIB,
        reps: 2,
        relayReps: 2,
      }
    : {
        throughputBytes: 1024 * MIB,
        rssSmallBytes: 100 * MIB,
        rssLargeBytes: 1024 * MIB,
        relayBytes: 128 * MIB,
        alternativesBytes: 64 * MIB,
        reps: 3,
        relayReps: 5,
      };
}

export interface RssRun {
  readonly bytes: number;
  readonly mode: "mask" | "plain";
  /** The child's maxRSS: building the pool included. */
  readonly maxRssKiB: number;
  /** The highest VmRSS sampled while it decoded and masked. */
  readonly relayRssKiB: number;
  readonly ms: number;
}

/** One relay run: wall time, the process's CPU time (every thread: the log writes run in the thread pool), and the masker's share. */
export interface RelayRun {
  readonly wallMs: number;
  readonly cpuMs: number;
  /** Time spent inside the mask streams' write and end calls (0 without a masker). */
  readonly maskMs: number;
  readonly runLogBytes: number;
  readonly ndjsonBytes: number;
}

export interface RelayRep {
  readonly masked: RelayRun;
  readonly plain: RelayRun;
}

export interface MaskResult {
  readonly sizes: MaskSizes;
  readonly secrets: number;
  readonly forms: number;
  readonly shortestForm: number;
  readonly longestForm: number;
  readonly poolBytes: number;
  readonly poolSecretLines: number;
  readonly throughputMBps: Summary;
  readonly rss: readonly RssRun[];
  readonly relay: readonly RelayRep[];
  /** Plain relay time / masked relay time, of the medians (= masked throughput / plain throughput): wall and CPU. */
  readonly relayWallRatio: number;
  readonly relayCpuRatio: number;
  readonly pairedRelayWallRatio: Summary;
  readonly alternatives: readonly AlternativeTiming[];
}

/** Checks the masker on the pool before timing it: every secret line masked once, no form left, nothing else changed. */
function verifyPool(pool: OutputPool, masker: SecretMasker, secrets: readonly string[]): void {
  const text = pool.texts.join("");
  const stream = masker.createStream();
  const streamed = pool.texts.map((t) => stream.write(t)).join("") + stream.end();
  const whole = masker.maskText(text);
  if (streamed !== whole) throw new Error("mask bench: streaming the pool differs from masking it whole");
  const masks = whole.split(MASK).length - 1 - (text.split(MASK).length - 1);
  if (masks !== pool.secretLines)
    throw new Error(`mask bench: ${masks} masks in the pool, expected ${pool.secretLines}`);
  for (const form of buildSecretForms(secrets))
    if (whole.includes(form)) throw new Error("mask bench: a secret form is left in the masked pool");
  if (whole.split("\n").length !== text.split("\n").length)
    throw new Error("mask bench: masking changed the line count");
}

/** Masks `total` bytes of the pool's texts through one stream; returns MB/s (10^6 bytes of UTF-8 output per second). */
function measureThroughput(pool: OutputPool, masker: SecretMasker, total: number): number {
  const stream = masker.createStream();
  let bytes = 0;
  let length = 0;
  const started = process.hrtime.bigint();
  while (bytes < total) {
    for (let i = 0; i < pool.texts.length; i++) {
      length += stream.write(pool.texts[i]!).length;
      bytes += pool.reads[i]!.length;
    }
  }
  length += stream.end().length;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (length === 0) throw new Error("mask bench: no output");
  return bytes / 1e6 / seconds;
}

async function measureRss(bytes: number, mode: "mask" | "plain"): Promise<RssRun> {
  const run = await runTimed(process.execPath, [CHILD, String(bytes), mode]);
  assertSucceeded(`mask-rss-child ${bytes} ${mode}`, run);
  const report = JSON.parse(run.stdout) as { maxRssKiB: number; relayRssKiB: number; ms: number };
  return { bytes, mode, maxRssKiB: report.maxRssKiB, relayRssKiB: report.relayRssKiB, ms: report.ms };
}

/**
 * The pool as the pod helper's `follow` frames (`O <len>\n` + bytes; every fourth frame a short stderr one), cut
 * at line ends so that no character is split between the two streams, then into 64 KiB reads as kubectl's stdout
 * delivers them.
 */
function makeFrameReads(pool: OutputPool): Buffer[] {
  const parts: Buffer[] = [];
  for (let at = 0, n = 0; at < pool.bytes.length; n++) {
    const want = n % 4 === 3 ? 4 * 1024 : 256 * 1024;
    const newline = pool.bytes.indexOf(0x0a, Math.min(pool.bytes.length - 1, at + want));
    const end = newline < 0 ? pool.bytes.length : newline + 1;
    parts.push(Buffer.from(`${n % 4 === 3 ? "E" : "O"} ${end - at}\n`), pool.bytes.subarray(at, end));
    at = end;
  }
  const stream = Buffer.concat(parts);
  const reads: Buffer[] = [];
  for (let at = 0; at < stream.length; at += READ_BYTES) reads.push(stream.subarray(at, at + READ_BYTES));
  return reads;
}

/**
 * The runner's output path, in process: frames → FollowFrameParser → StringDecoder per stream → (masker) →
 * step-output events → run.log and log.ndjson sinks writing files, one event-loop turn per read as from a pipe.
 * Timed until both files are closed.
 */
async function measureRelay(
  reads: readonly Buffer[],
  total: number,
  masker: SecretMasker | undefined,
  dir: string,
): Promise<RelayRun> {
  const runLog = join(dir, "run.log");
  const ndjsonLog = join(dir, "log.ndjson");
  const started = process.hrtime.bigint();
  const cpuAtStart = process.cpuUsage();
  let maskNs = 0n;
  const mask = (stream: MaskStream, text: string, end: boolean): string => {
    const at = process.hrtime.bigint();
    const out = end ? stream.write(text) + stream.end() : stream.write(text);
    maskNs += process.hrtime.bigint() - at;
    return out;
  };
  const human = createHumanLogSink(runLog, { clusterCalls: false });
  const ndjson = createNdjsonLogSink(ndjsonLog);
  const emit = createEventEmitter([human.sink, ndjson.sink]);
  emit({ kind: "step-start", index: 0, name: "build", command: "make" });
  const parser = new FollowFrameParser();
  const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  const masks = masker ? { stdout: masker.createStream(), stderr: masker.createStream() } : undefined;
  let bytes = 0;
  while (bytes < total) {
    for (const read of reads) {
      for (const frame of parser.push(read)) {
        if (frame.type !== "stdout" && frame.type !== "stderr") continue;
        bytes += frame.data.length;
        const decoded = decoders[frame.type].write(frame.data);
        const text = masks ? mask(masks[frame.type], decoded, false) : decoded;
        if (text) emit({ kind: "step-output", index: 0, stream: frame.type, text });
      }
      await yieldToLoop();
    }
  }
  for (const stream of ["stdout", "stderr"] as const) {
    const decoded = decoders[stream].end();
    const text = masks ? mask(masks[stream], decoded, true) : decoded;
    if (text) emit({ kind: "step-output", index: 0, stream, text });
  }
  emit({ kind: "step-end", index: 0, name: "build", status: "success", exitCode: 0, durationMs: 0, timedOut: false });
  await Promise.all([human.close(), ndjson.close()]);
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  const cpu = process.cpuUsage(cpuAtStart);
  const [runLogStat, ndjsonStat] = await Promise.all([stat(runLog), stat(ndjsonLog)]);
  await Promise.all([rm(runLog), rm(ndjsonLog)]);
  return {
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    maskMs: Number(maskNs) / 1e6,
    runLogBytes: runLogStat.size,
    ndjsonBytes: ndjsonStat.size,
  };
}

export async function runMaskBench(quick: boolean, scratch: string, log: (line: string) => void): Promise<MaskResult> {
  const sizes = pickMaskSizes(quick);
  const secrets = makeBenchSecrets();
  const forms = buildSecretForms(secrets);
  const masker = new SecretMasker(secrets);
  const pool = makeOutputPool(secrets, POOL_BYTES);
  verifyPool(pool, masker, secrets);
  log(
    `masking: ${secrets.length} secrets, ${forms.length} forms; pool of ${pool.bytes.length} bytes with ${pool.secretLines} secret lines, verified`,
  );

  measureThroughput(pool, masker, pool.bytes.length * 4); // warm-up
  const throughput: number[] = [];
  for (let rep = 0; rep < sizes.reps; rep++) {
    throughput.push(measureThroughput(pool, masker, sizes.throughputBytes));
    log(`  throughput rep ${rep + 1}: ${throughput.at(-1)!.toFixed(0)} MB/s`);
  }

  const alternatives = measureAlternatives(pool, forms, sizes.alternativesBytes);
  for (const a of alternatives) log(`  ${a.name}: ${a.mbps.toFixed(0)} MB/s (${a.matches} matches in the pool)`);

  const rss: RssRun[] = [];
  for (const [bytes, mode] of [
    [sizes.rssSmallBytes, "mask"],
    [sizes.rssLargeBytes, "mask"],
    [sizes.rssLargeBytes, "plain"],
  ] as const) {
    rss.push(await measureRss(bytes, mode));
    log(
      `  ${bytes / MIB} MiB ${mode}: peak RSS ${(rss.at(-1)!.maxRssKiB / 1024).toFixed(1)} MiB, while masking ${(rss.at(-1)!.relayRssKiB / 1024).toFixed(1)} MiB`,
    );
  }

  const dir = await mkdtemp(join(scratch, "knotless-mask-bench-"));
  try {
    const reads = makeFrameReads(pool);
    await measureRelay(reads, pool.bytes.length * 2, masker, dir); // warm-up
    const relay: RelayRep[] = [];
    for (let rep = 0; rep < sizes.relayReps; rep++) {
      // Alternate which goes first: load on a shared machine drifts.
      const first = rep % 2 === 0 ? masker : undefined;
      const a = await measureRelay(reads, sizes.relayBytes, first, dir);
      const b = await measureRelay(reads, sizes.relayBytes, first ? undefined : masker, dir);
      const [masked, plain] = first ? [a, b] : [b, a];
      relay.push({ masked, plain });
      log(
        `  relay rep ${rep + 1}: masked ${masked.wallMs.toFixed(0)} ms (CPU ${masked.cpuMs.toFixed(0)}, masker ${masked.maskMs.toFixed(0)}), plain ${plain.wallMs.toFixed(0)} ms (CPU ${plain.cpuMs.toFixed(0)})`,
      );
    }
    const ratioOfMedians = (pick: (run: RelayRun) => number): number =>
      computeMedian(relay.map((r) => pick(r.plain))) / computeMedian(relay.map((r) => pick(r.masked)));
    return {
      sizes,
      secrets: secrets.length,
      forms: forms.length,
      shortestForm: Math.min(...forms.map((f) => f.length)),
      longestForm: masker.longestFormLength,
      poolBytes: pool.bytes.length,
      poolSecretLines: pool.secretLines,
      throughputMBps: summarizeValues(throughput),
      rss,
      relay,
      relayWallRatio: ratioOfMedians((run) => run.wallMs),
      relayCpuRatio: ratioOfMedians((run) => run.cpuMs),
      pairedRelayWallRatio: summarizeValues(relay.map((r) => r.plain.wallMs / r.masked.wallMs)),
      alternatives,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
