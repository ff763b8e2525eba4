// The benchmark's command-line options (`npm run bench -- [options]`), validated once.
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TransferSize {
  readonly label: string;
  readonly bytes: number;
  readonly files: number;
  readonly reps: number;
}

export interface BenchOptions {
  readonly quick: boolean;
  readonly only: "all" | "overhead" | "transfer";
  /** Per-call latency given to the fake kubectl (its `latencyMs` fault). */
  readonly latencyMs: number;
  readonly overheadReps: number;
  readonly transferSizes: readonly TransferSize[];
  /** Where generated checkouts are cached between runs. */
  readonly cacheDir: string;
  /** Also write the markdown report here. */
  readonly reportPath?: string;
  /** Remove the checkout cache at the end. */
  readonly cleanCache: boolean;
  /** Where the fake cluster's pod volumes, the runner's --out dirs and the baseline's dirs go; undefined = pick one. */
  readonly scratchDir?: string;
}

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

export const USAGE = `usage: npm run bench -- [--quick] [--only overhead|transfer] [--reps N] [--transfer-reps N] [--latency MS]
                          [--cache DIR] [--scratch DIR] [--report FILE] [--clean-cache]
  --quick        small sizes (64 MiB / 3,200 files and 16 MiB / 800 files) and fewer repetitions
  --only         run one of the two benchmarks
  --reps N       repetitions of the overhead benchmark (default 7, quick 3)
  --transfer-reps N  repetitions per transfer size (default 1 at 1 GiB and 3 at 128 MiB, quick 1)
  --latency MS   per-call latency of the fake kubectl (default 100)
  --cache DIR    where generated checkouts are kept between runs (default ${join(tmpdir(), "knotless-bench-cache")})
  --scratch DIR  where pod volumes, --out dirs and baseline dirs go (default /dev/shm when it has room, else the temp dir)
  --report FILE  also write the markdown report to FILE
  --clean-cache  delete the generated checkouts at the end`;

function readCount(flag: string, value: string | undefined): number {
  const n = Number(value);
  if (value === undefined || !Number.isInteger(n) || n < 0) throw new Error(`${flag} needs an integer >= 0, got ${JSON.stringify(value)}`);
  return n;
}

/** Parses argv (after the script); throws an Error with a message on bad input. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  let quick = false;
  let only: BenchOptions["only"] = "all";
  let latencyMs = 100;
  let reps: number | undefined;
  let transferReps: number | undefined;
  let cacheDir = join(tmpdir(), "knotless-bench-cache");
  let reportPath: string | undefined;
  let cleanCache = false;
  let scratchDir: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const next = (): string | undefined => argv[++i];
    switch (flag) {
      case "--quick":
        quick = true;
        break;
      case "--only": {
        const value = next();
        if (value !== "overhead" && value !== "transfer") throw new Error(`--only needs overhead or transfer, got ${JSON.stringify(value)}`);
        only = value;
        break;
      }
      case "--reps":
        reps = readCount(flag, next());
        if (reps < 1) throw new Error("--reps needs at least 1");
        break;
      case "--transfer-reps":
        transferReps = readCount(flag, next());
        if (transferReps < 1) throw new Error("--transfer-reps needs at least 1");
        break;
      case "--latency":
        latencyMs = readCount(flag, next());
        break;
      case "--cache":
        cacheDir = next() ?? "";
        if (cacheDir === "") throw new Error("--cache needs a directory");
        break;
      case "--report":
        reportPath = next();
        if (!reportPath) throw new Error("--report needs a file");
        break;
      case "--scratch":
        scratchDir = next();
        if (!scratchDir) throw new Error("--scratch needs a directory");
        break;
      case "--clean-cache":
        cleanCache = true;
        break;
      case "--help":
      case "-h":
        throw new Error(USAGE);
      default:
        throw new Error(`unknown option ${JSON.stringify(flag)}\n${USAGE}`);
    }
  }
  const transferSizes: TransferSize[] = quick
    ? [
        { label: "64 MiB / 3,200 files", bytes: 64 * MIB, files: 3200, reps: transferReps ?? 1 },
        { label: "16 MiB / 800 files", bytes: 16 * MIB, files: 800, reps: transferReps ?? 1 },
      ]
    : [
        { label: "1 GiB / 50,000 files", bytes: GIB, files: 50_000, reps: transferReps ?? 1 },
        { label: "128 MiB / 6,250 files", bytes: 128 * MIB, files: 6250, reps: transferReps ?? 3 },
      ];
  return { quick, only, latencyMs, overheadReps: reps ?? (quick ? 3 : 7), transferSizes, cacheDir, ...(reportPath ? { reportPath } : {}), cleanCache, ...(scratchDir ? { scratchDir } : {}) };
}
