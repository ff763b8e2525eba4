// The benchmark's command-line options (`npm run bench -- [options]`), validated once.
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findDefaultKubectl } from "./local-cluster-env.js";

/** Every benchmark `--only` can name; `local` stands for the four local-cluster ones. */
export const BENCH_NAMES = [
  "overhead",
  "transfer",
  "logs",
  "local-overhead",
  "local-first-output",
  "local-step",
  "local-outputs",
  "mask",
  "local-warm",
  "local-cache",
  "library",
  "local-transfer",
] as const;
export type BenchName = (typeof BENCH_NAMES)[number];
const LOCAL_NAMES: readonly BenchName[] = ["local-overhead", "local-first-output", "local-step", "local-outputs"];
/**
 * Run only when named: local-warm takes ~13 minutes of mostly idle waiting (two scenarios of five runs 40 s apart);
 * local-cache moves 500 MB caches through the local cluster (three runs per size, ~10 minutes); library starts 10
 * then 50 podman pods at once (load ~16 on 2 cores); local-transfer moves the 1 GiB checkout in and out six times
 * per repetition (~12 minutes for three).
 */
const ON_REQUEST: readonly BenchName[] = ["local-warm", "local-cache", "library", "local-transfer"];

/** The local-cluster benchmarks' settings (real kubectl, podman pods). */
export interface LocalBenchOptions {
  readonly kubectlPath: string;
  readonly overheadReps: number;
  readonly firstOutputReps: number;
  /** Runner runs of 10 empty steps each. */
  readonly stepRuns: number;
  readonly outputsReps: number;
  /**
   * The cache sizes of local-cache: 50 MB / 2,000 files and 500 MB / 20,000 files on busybox (gzip), and 500 MB on the
   * Debian image (zstd) (quick: 5 MB / 200 and 50 MB / 2,000).
   */
  readonly cacheSizes: ReadonlyArray<{ readonly label: string; readonly files: number; readonly image?: string }>;
  /**
   * CPUs (a taskset list) for the host's side of local-cache: the runner, its kubectl and the plain baselines. With
   * the bench itself under `taskset -c` on the others (the local cluster runs in its process, and podman and the pods
   * inherit its affinity), the host no longer shares cores with the cluster, as on a real one. Undefined: no pinning.
   */
  readonly hostCpus?: string;
  /** library: how many runs at once, one measurement per count (default 10 and 50). */
  readonly libraryRuns: readonly number[];
  /** The local cluster's emptyDirs on disk (a podman volume, the default) or in memory (tmpfs: no disk writeback). */
  readonly podVolumes: "disk" | "memory";
  /** The local cluster serves over TLS, as real clusters do (both transports then encrypt every byte). */
  readonly clusterTls: boolean;
}

export interface TransferSize {
  readonly label: string;
  readonly bytes: number;
  readonly files: number;
  readonly reps: number;
  /**
   * Why the size is measured: "issue" is the 1 GiB, 50,000-file checkout whose throughput the target is
   * stated for; "extra" sizes hold the runner to the same bar where fixed costs or many small files weigh more.
   */
  readonly role: "issue" | "extra";
}

export interface BenchOptions {
  readonly quick: boolean;
  /** The benchmarks to run (all of them by default). */
  readonly only: ReadonlySet<BenchName>;
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
  readonly local: LocalBenchOptions;
}

/** The full run's cache sizes, by the names `--cache-sizes` takes. */
const FULL_CACHE_SIZES = [
  { name: "50mb", label: "50 MB / 2,000 files", files: 2000 },
  { name: "500mb", label: "500 MB / 20,000 files", files: 20_000 },
  // zstd against the busybox rows' gzip, at the size where compression sets the pace.
  {
    name: "500mb-zstd",
    label: "500 MB / 20,000 files, Debian (zstd)",
    files: 20_000,
    image: "docker.io/library/debian:bookworm-slim",
  },
] as const;
const CACHE_SIZE_NAMES: readonly string[] = FULL_CACHE_SIZES.map((size) => size.name);

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

export const USAGE = `usage: npm run bench -- [--quick] [--only NAME[,NAME...]] [--reps N] [--transfer-reps N] [--latency MS]
                          [--cache DIR] [--scratch DIR] [--report FILE] [--clean-cache] [--kubectl PATH] [--local-reps N]
                          [--cache-sizes LIST] [--host-cpus LIST] [--library-runs LIST]
  --quick        small sizes (64 MiB / 3,200 files and 16 MiB / 800 files; 30 MB of log lines instead of 300) and fewer repetitions
  --only         run only these benchmarks: overhead, transfer, logs (fake kubectl); local-overhead, local-first-output,
                 local-step, local-outputs (real kubectl on the local cluster, podman pods); local = the four local ones;
                 mask (secret masking: throughput, peak RSS, the output relay with and without it; no cluster);
                 local-warm (warm capacity on the local cluster scaling from zero, JOIN 30 s, HOLD 20 s: five runs
                 40 s apart with and without --keep-warm 2m; ~13 min, so only when named);
                 local-cache (a workflow cache of 50 MB and 500 MB / 20,000 files on busybox, gzip, and 500 MB on Debian, zstd: miss + save, exact hit,
                 --no-cache, against plain tar | gzip (zstd) through kubectl exec; peak RSS; only when named)
                 library (the example, N runs at once in one node process through runWorkflow on one API-transport
                 cluster: peak RSS with children, marginal memory per run; only when named)
                 local-transfer (the 1 GiB / 50,000-file checkout up and /outputs down through --transport api and
                 kubectl, against plain tar through podman exec and kubectl exec; --quick: 64 MiB / 3,200 files;
                 --transfer-reps N; only when named)
  --library-runs L  library's counts of runs at once (default 10,50; e.g. 10,50,200)
  --pod-volumes disk|memory  the local cluster's emptyDirs as podman volumes on disk (default) or tmpfs, so a
                 transfer is not timed against this machine's disk writeback
  --cluster-tls  the local cluster serves HTTPS, as real clusters do (default plain HTTP)
  --cache-sizes  local-cache's sizes: any of 50mb, 500mb, 500mb-zstd (default all three)
  --host-cpus L  local-cache: run the runner, its kubectl and the baselines under taskset -c L; run the bench itself
                 under taskset -c on the other CPUs, so host and cluster stop sharing cores
                 (taskset -c 1 npm run bench -- --only local-cache --host-cpus 0)
  --kubectl PATH the real kubectl of the local-cluster benchmarks (default: the newest of
                 /usr/lib/google-cloud-sdk/bin/kubectl.1.3x, else kubectl on PATH)
  --local-reps N repetitions of each local-cluster benchmark (default 5 overhead, 5 first output, 2 runs of 10 empty
                 steps, 3 outputs round trips; quick 3, 3, 2, 1)
  --reps N       repetitions of the overhead benchmark (default 7, quick 3)
  --transfer-reps N  repetitions per transfer size (default 3 at 1 GiB, 3 at 128 MiB, 1 at 96,000 files; quick 1)
  --latency MS   per-call latency of the fake kubectl (default 100)
  --cache DIR    where generated checkouts are kept between runs (default ${join(tmpdir(), "knotless-bench-cache")})
  --scratch DIR  where pod volumes, --out dirs and baseline dirs go (default /dev/shm when it has room, else the temp dir)
  --report FILE  also write the markdown report to FILE
  --clean-cache  delete the generated checkouts at the end`;

function readCount(flag: string, value: string | undefined): number {
  const n = Number(value);
  if (value === undefined || !Number.isInteger(n) || n < 0)
    throw new Error(`${flag} needs an integer >= 0, got ${JSON.stringify(value)}`);
  return n;
}

/** Parses argv (after the script); throws an Error with a message on bad input. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  let quick = false;
  let only: Set<BenchName> | undefined;
  let kubectlPath: string | undefined;
  let localReps: number | undefined;
  let latencyMs = 100;
  let reps: number | undefined;
  let transferReps: number | undefined;
  let podVolumes: "disk" | "memory" = "disk";
  let clusterTls = false;
  let cacheDir = join(tmpdir(), "knotless-bench-cache");
  let reportPath: string | undefined;
  let cleanCache = false;
  let scratchDir: string | undefined;
  let hostCpus: string | undefined;
  let cacheSizeNames: string[] | undefined;
  let libraryRuns = [10, 50];
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const next = (): string | undefined => argv[++i];
    switch (flag) {
      case "--quick":
        quick = true;
        break;
      case "--only": {
        const value = next() ?? "";
        only ??= new Set();
        for (const name of value.split(",")) {
          if (name === "local") LOCAL_NAMES.forEach((n) => only?.add(n));
          else if ((BENCH_NAMES as readonly string[]).includes(name)) only.add(name as BenchName);
          else
            throw new Error(
              `--only needs one or more of local, ${BENCH_NAMES.join(", ")} (comma-separated), got ${JSON.stringify(value)}`,
            );
        }
        break;
      }
      case "--kubectl":
        kubectlPath = next();
        if (!kubectlPath) throw new Error("--kubectl needs a path");
        break;
      case "--local-reps":
        localReps = readCount(flag, next());
        if (localReps < 1) throw new Error("--local-reps needs at least 1");
        break;
      case "--reps":
        reps = readCount(flag, next());
        if (reps < 1) throw new Error("--reps needs at least 1");
        break;
      case "--pod-volumes": {
        const value = next();
        if (value !== "disk" && value !== "memory")
          throw new Error(`--pod-volumes needs disk or memory, got ${JSON.stringify(value)}`);
        podVolumes = value;
        break;
      }
      case "--cluster-tls":
        clusterTls = true;
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
      case "--host-cpus":
        hostCpus = next();
        if (!hostCpus || !/^\d+([-,]\d+)*$/.test(hostCpus))
          throw new Error(`--host-cpus needs a CPU list such as 0 or 0-1, got ${JSON.stringify(hostCpus)}`);
        break;
      case "--cache-sizes":
        cacheSizeNames = (next() ?? "").split(",").filter(Boolean);
        for (const name of cacheSizeNames)
          if (!CACHE_SIZE_NAMES.includes(name))
            throw new Error(`--cache-sizes takes ${CACHE_SIZE_NAMES.join(", ")}, got ${JSON.stringify(name)}`);
        if (cacheSizeNames.length === 0)
          throw new Error(`--cache-sizes needs at least one of ${CACHE_SIZE_NAMES.join(", ")}`);
        break;
      case "--library-runs":
        libraryRuns = (next() ?? "").split(",").map((count) => readCount(flag, count));
        if (libraryRuns.some((count) => count < 1)) throw new Error("--library-runs needs counts of at least 1");
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
        { label: "64 MiB / 3,200 files", bytes: 64 * MIB, files: 3200, reps: transferReps ?? 1, role: "extra" },
        { label: "16 MiB / 800 files", bytes: 16 * MIB, files: 800, reps: transferReps ?? 1, role: "extra" },
      ]
    : [
        // Three repetitions: the verdict compares medians, and one repetition swings by ±15 % on a shared machine.
        { label: "1 GiB / 50,000 files", bytes: GIB, files: 50_000, reps: transferReps ?? 3, role: "issue" },
        { label: "128 MiB / 6,250 files", bytes: 128 * MIB, files: 6250, reps: transferReps ?? 3, role: "extra" },
        // Peak RSS grows with the file count (result.json lists every output): measure it near the 100,000-entry limit.
        { label: "96 MiB / 96,000 files", bytes: 96 * MIB, files: 96_000, reps: transferReps ?? 1, role: "extra" },
      ];
  const local: LocalBenchOptions = {
    kubectlPath: kubectlPath ?? findDefaultKubectl(),
    overheadReps: localReps ?? (quick ? 3 : 5),
    firstOutputReps: localReps ?? (quick ? 3 : 5),
    stepRuns: localReps ?? 2,
    outputsReps: localReps ?? (quick ? 1 : 3),
    cacheSizes: quick
      ? [
          { label: "5 MB / 200 files", files: 200 },
          { label: "50 MB / 2,000 files", files: 2000 },
        ]
      : FULL_CACHE_SIZES.filter((size) => cacheSizeNames === undefined || cacheSizeNames.includes(size.name)).map(
          ({ name: _name, ...size }) => size,
        ),
    ...(hostCpus ? { hostCpus } : {}),
    libraryRuns,
    podVolumes,
    clusterTls,
  };
  return {
    quick,
    only: only ?? new Set(BENCH_NAMES.filter((name) => !ON_REQUEST.includes(name))),
    local,
    latencyMs,
    overheadReps: reps ?? (quick ? 3 : 7),
    transferSizes,
    cacheDir,
    ...(reportPath ? { reportPath } : {}),
    cleanCache,
    ...(scratchDir ? { scratchDir } : {}),
  };
}
