// Child process of the masking benchmark: decodes and masks N bytes of generated output, then prints its peak RSS.
// Usage: node dist/bench/mask-rss-child.js BYTES mask|plain  →  {"bytes":…,"ms":…,"maxRssKiB":…,"relayRssKiB":…,"chars":…} on stdout
import { readFileSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import { SecretMasker } from "../src/secrets/mask-stream.js";
import { makeBenchSecrets, makeOutputPool, type OutputPool } from "./mask-output.js";

const POOL_BYTES = 4 * 1024 * 1024;
/** Sample VmRSS every this many reads (4 MiB). */
const SAMPLE_EVERY = 64;

/** The process's resident set now, in KiB (VmRSS). */
function readRssKiB(): number {
  return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? Number.NaN);
}

/**
 * Feeds `total` bytes of the pool through a StringDecoder and, with a masker, a mask stream; returns the characters
 * that came out and the highest VmRSS sampled meanwhile (the child's maxRSS also counts building the pool).
 */
function relayBytes(
  pool: OutputPool,
  total: number,
  masker: SecretMasker | undefined,
): { bytes: number; chars: number; relayRssKiB: number } {
  const decoder = new StringDecoder("utf8");
  const stream = masker?.createStream();
  let bytes = 0;
  let chars = 0;
  let reads = 0;
  let relayRssKiB = readRssKiB();
  while (bytes < total) {
    for (const read of pool.reads) {
      const text = decoder.write(read);
      chars += (stream ? stream.write(text) : text).length;
      bytes += read.length;
      if (++reads % SAMPLE_EVERY === 0) relayRssKiB = Math.max(relayRssKiB, readRssKiB());
    }
  }
  if (stream) chars += stream.end().length;
  return { bytes, chars, relayRssKiB: Math.max(relayRssKiB, readRssKiB()) };
}

function main(argv: readonly string[]): number {
  const total = Number(argv[0]);
  const mode = argv[1];
  if (!Number.isSafeInteger(total) || total <= 0 || (mode !== "mask" && mode !== "plain")) {
    process.stderr.write("usage: mask-rss-child.js BYTES mask|plain\n");
    return 2;
  }
  const secrets = makeBenchSecrets();
  const pool = makeOutputPool(secrets, POOL_BYTES);
  const started = process.hrtime.bigint();
  const { bytes, chars, relayRssKiB } = relayBytes(
    pool,
    total,
    mode === "mask" ? new SecretMasker(secrets) : undefined,
  );
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  process.stdout.write(
    `${JSON.stringify({ bytes, ms, maxRssKiB: process.resourceUsage().maxRSS, relayRssKiB, chars })}\n`,
  );
  return 0;
}

process.exitCode = main(process.argv.slice(2));
