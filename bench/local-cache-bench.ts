// Local-cluster benchmark 5: a workflow cache (miss + save, exact hit, --no-cache) against plain tar | kubectl exec, and the runner's peak RSS.
import { readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { measureCacheHostParts, type CacheHostParts } from "./cache-host-parts.js";
import { computeTreeBytes, FILES_PER_PACKAGE, writeVendorPackages } from "./cache-content.js";
import type { BenchCluster } from "./local-cluster-env.js";
import { PRELUDE } from "./plain-scripts.js";
import { buildDeleteScript } from "./local-plain-scripts.js";
import { readRunLog } from "./run-log.js";
import { RUNNER_BIN } from "./runner-cli.js";
import { assertSucceeded, runTimed, type TimedRun } from "./timed-process.js";

const RSS_POLL_MS = 25;
const REPO = "bench/cache";

/** The in-pod commands of the plain baselines, the same tar and compressor the helper runs (zstd where the image has it). */
export const PLAIN_SAVE = {
  gzip: "tar -cf - -C / work/deps | gzip -1",
  zstd: "tar -cf - -C / work/deps | zstd -1 -q -c --check",
} as const;
export const PLAIN_RESTORE = { gzip: "gunzip | tar -xf - -C /", zstd: "zstd -dcq | tar -xf - -C /" } as const;
/** The local cluster's Debian image: it has zstd (scripts/setup-containers.sh), busybox (the default) has not. */
export const DEBIAN_IMAGE = "docker.io/library/debian:bookworm-slim";

/**
 * The workflow: one cache of /work/deps keyed on the vendored lock file. `install` extracts each vendored package
 * (`tar -xzf`, one per package, as npm extracts one tarball per package) unless the cache brought them back;
 * `check` counts the files, so a restore that lost any fails the run.
 */
export function buildCacheWorkflow(files: number, image?: string): string {
  return `${image ? `image: ${image}\n` : ""}caches:
  - key: 'deps-{{ hashFiles "vendor/lock.txt" }}'
    paths: [deps]
steps:
  - name: install
    command: |
      if [ -f /work/deps/.installed ]; then echo "deps restored"; exit 0; fi
      for f in /work/vendor/*.tgz; do n=\${f##*/}; mkdir -p /work/deps/\${n%.tgz}; tar -xzf "$f" -C /work/deps/\${n%.tgz}; done
      touch /work/deps/.installed
      echo "deps installed"
  - name: check
    command: |
      test "$(find /work/deps -type f | wc -l)" -eq ${files + 1}
      sync
`;
}

export interface CacheSize {
  readonly label: string;
  readonly files: number;
  /** The workflow's image; absent: the runner's default, busybox (gzip). The Debian image saves zstd. */
  readonly image?: string;
}

function compressorOf(size: CacheSize): "gzip" | "zstd" {
  return size.image === DEBIAN_IMAGE ? "zstd" : "gzip";
}

export interface CacheRun {
  readonly wallMs: number;
  /** The install step (log.ndjson). */
  readonly installMs: number;
  /** result.json caches[0].restore / save. */
  readonly restore: { readonly status: string; readonly bytes: number; readonly ms: number };
  readonly save: { readonly status: string; readonly bytes: number; readonly ms: number };
  /** Whole-run VmHWM of the runner process, KiB. */
  readonly peakRssKiB: number;
  /** Highest VmRSS sampled during the cache-restore span, and during the cache-save span, KiB (0: no sample). */
  readonly restoreRssKiB: number;
  readonly saveRssKiB: number;
}

export interface CacheSizeResult {
  readonly size: CacheSize;
  readonly treeBytes: number;
  /** Bytes of the vendored .tgz packages in the checkout. */
  readonly vendorBytes: number;
  readonly noCache: CacheRun;
  readonly miss: CacheRun;
  readonly hit: CacheRun;
  /** `kubectl exec POD -- sh -c 'tar -c | gzip -1' > FILE`, spawn → exit, in the miss run's kept pod right after the runner's save. */
  readonly plainSaveMs: number;
  readonly plainSaveBytes: number;
  /** `head -c N ENTRY | kubectl exec -i POD -- sh -c 'gunzip | tar -x -C /'` into the same pod after `rm -rf /work/deps`. */
  readonly plainRestoreMs: number;
  /** The runner's host-side parts alone, on the plain save's archive. */
  readonly hostParts: CacheHostParts;
}

export interface CacheBenchResult {
  readonly sizes: readonly CacheSizeResult[];
  /** The CPUs the host's side ran on (--host-cpus), when pinned. */
  readonly hostCpus?: string;
  readonly runnerCommand: string;
  readonly plainSaveCommand: string;
  readonly plainRestoreCommand: string;
  readonly workflow: string;
}

interface ResultJson {
  status: string;
  job: { name: string; pod: string };
  caches: Array<{
    restore: { status: string; bytes: number; ms: number };
    save: { status: string; bytes: number; ms: number };
  }>;
}

/** [start, end] epoch ms of the cache-restore and cache-save events (their time is the end, durationMs before it). */
async function readCacheSpans(outDir: string): Promise<Record<"restore" | "save", [number, number] | undefined>> {
  const spans: Record<"restore" | "save", [number, number] | undefined> = { restore: undefined, save: undefined };
  for (const line of (await readFile(join(outDir, "log.ndjson"), "utf8")).split("\n")) {
    if (!line.includes('"cache-')) continue;
    const event = JSON.parse(line) as {
      time?: string;
      event?: string;
      durationMs?: number;
      cache?: { durationMs?: number };
    };
    const which = event.event === "cache-restore" ? "restore" : event.event === "cache-save" ? "save" : undefined;
    const duration = event.durationMs ?? event.cache?.durationMs;
    if (!which || !event.time || typeof duration !== "number") continue;
    const end = Date.parse(event.time);
    spans[which] = [end - duration, end];
  }
  return spans;
}

function maxRssWithin(run: TimedRun, span: [number, number] | undefined): number {
  if (!span) return 0;
  const inside = (run.rssTimeline ?? []).filter(([at]) => at >= span[0] && at <= span[1] + RSS_POLL_MS);
  return inside.reduce((max, [, kib]) => Math.max(max, kib), 0);
}

export async function runLocalCacheBench(
  bench: BenchCluster,
  workDir: string,
  baseEnv: Record<string, string>,
  sizes: readonly CacheSize[],
  log: (line: string) => void,
  hostCpus?: string,
): Promise<CacheBenchResult> {
  const { cluster, kubectlPath } = bench;
  // The host's side (the runner with its kubectl, the baselines' sh with theirs) on its own CPUs when asked.
  const onHost = (command: string, args: readonly string[]): [string, string[]] =>
    hostCpus === undefined ? [command, [...args]] : ["taskset", ["-c", hostCpus, command, ...args]];
  const results: CacheSizeResult[] = [];
  let runs = 0;
  const argsFor = (wf: string, checkout: string, out: string, cacheDir: string, extra: readonly string[]): string[] => [
    RUNNER_BIN,
    "run",
    "--workflow",
    wf,
    "--checkout",
    checkout,
    "--out",
    out,
    "--event",
    "manual",
    "--repo",
    REPO,
    "--cache-dir",
    cacheDir,
    "--cache-max-bytes",
    "4Gi",
    "--memory",
    "1Gi",
    "--timeout",
    "30m",
    "--kubectl",
    kubectlPath,
    "--kubeconfig",
    cluster.kubeconfigPath,
    "--run-id",
    `lcache-${++runs}`,
    ...extra,
  ];
  for (const size of sizes) {
    const dir = join(workDir, `size-${size.files}${size.image ? "-debian" : ""}`);
    const compressor = compressorOf(size);
    const checkout = join(dir, "checkout");
    const cacheDir = join(dir, "store");
    log(`  cache ${size.label}: writing ${size.files / FILES_PER_PACKAGE} vendored packages ...`);
    const treeBytes = await writeVendorPackages(join(checkout, "vendor"), join(dir, "staging"), size.files);
    await writeFile(
      join(checkout, "vendor", "lock.txt"),
      `packages ${size.files / FILES_PER_PACKAGE} files ${size.files}\n`,
    );
    let vendorBytes = 0;
    for (const name of await readdir(join(checkout, "vendor")))
      vendorBytes += (await stat(join(checkout, "vendor", name))).size;
    const wf = join(dir, "ci.yml");
    await writeFile(wf, buildCacheWorkflow(size.files, size.image));
    const runOnce = async (
      name: string,
      extra: readonly string[],
    ): Promise<{ run: CacheRun; result: ResultJson; out: string }> => {
      const out = join(dir, name);
      await bench.quiesce();
      const timed = await runTimed(...onHost(process.execPath, argsFor(wf, checkout, out, cacheDir, extra)), {
        env: baseEnv,
        watchRssEveryMs: RSS_POLL_MS,
      });
      assertSucceeded(`the runner (${name})`, timed);
      const result = JSON.parse(await readFile(join(out, "result.json"), "utf8")) as ResultJson;
      if (result.status !== "success") throw new Error(`${name}: status ${result.status}`);
      const runLog = await readRunLog(out);
      const spans = await readCacheSpans(out);
      const cache = result.caches[0] ?? {
        restore: { status: "none", bytes: 0, ms: 0 },
        save: { status: "none", bytes: 0, ms: 0 },
      };
      const run: CacheRun = {
        wallMs: timed.wallMs,
        installMs: runLog.steps[0]?.durationMs ?? NaN,
        restore: cache.restore,
        save: cache.save,
        peakRssKiB: timed.peakRssKiB ?? 0,
        restoreRssKiB:
          cache.restore.status === "exact" || cache.restore.status === "fallback"
            ? maxRssWithin(timed, spans.restore)
            : 0,
        saveRssKiB: cache.save.status === "saved" ? maxRssWithin(timed, spans.save) : 0,
      };
      log(
        `  cache ${size.label} ${name}: ${(run.wallMs / 1000).toFixed(1)} s, install ${run.installMs} ms, restore ${run.restore.status} ${run.restore.ms} ms, save ${run.save.status} ${run.save.bytes} B ${run.save.ms} ms, peak RSS ${(run.peakRssKiB / 1024).toFixed(1)} MiB (restore ${(run.restoreRssKiB / 1024).toFixed(1)}, save ${(run.saveRssKiB / 1024).toFixed(1)})`,
      );
      return { run, result, out };
    };
    try {
      // Every run keeps its Job (the plain baselines use the miss's and the hit's pods), so all three skip the same delete.
      const noCache = await runOnce("no-cache", ["--no-cache", "--keep"]);
      const noCacheEnv = {
        ...baseEnv,
        K: kubectlPath,
        KC: cluster.kubeconfigPath,
        NS: "default",
        JOB: noCache.result.job.name,
      };
      assertSucceeded(
        `delete ${noCache.result.job.name}`,
        await runTimed("sh", ["-c", buildDeleteScript()], { env: noCacheEnv }),
      );
      const miss = await runOnce("miss", ["--keep"]);
      const missEnv = {
        ...baseEnv,
        K: kubectlPath,
        KC: cluster.kubeconfigPath,
        NS: "default",
        JOB: miss.result.job.name,
        POD: miss.result.job.pod,
      };
      let plainSaveMs = NaN;
      let plainSaveBytes = 0;
      const saved = join(dir, `plain-save.tar.${compressor === "zstd" ? "zst" : "gz"}`);
      try {
        if (miss.run.restore.status !== "miss" || miss.run.save.status !== "saved")
          throw new Error(`miss run: restore ${miss.run.restore.status}, save ${miss.run.save.status}`);
        // The plain save in the same pod right after the runner's: the same tar | gzip -1 over the same /work/deps, into a host file.
        const save = await runTimed(
          ...onHost("sh", ["-c", `${PRELUDE}\nk exec "$POD" -c run -- sh -c '${PLAIN_SAVE[compressor]}' > "$FILE"`]),
          { env: { ...missEnv, FILE: saved } },
        );
        assertSucceeded("plain save", save);
        plainSaveMs = save.wallMs;
        plainSaveBytes = (await stat(saved)).size;
        log(`  cache ${size.label} plain save: ${plainSaveMs.toFixed(0)} ms (${plainSaveBytes} B)`);
      } finally {
        assertSucceeded(
          `delete ${miss.result.job.name}`,
          await runTimed("sh", ["-c", buildDeleteScript()], { env: missEnv }),
        );
      }
      const hostParts = await measureCacheHostParts(saved, join(dir, "parts-store"), "/work/deps", compressor);
      await rm(saved, { force: true });
      log(`  cache ${size.label} host parts: ${JSON.stringify(hostParts)}`);
      const hit = await runOnce("hit", ["--keep"]);
      const env = {
        ...baseEnv,
        K: kubectlPath,
        KC: cluster.kubeconfigPath,
        NS: "default",
        JOB: hit.result.job.name,
        POD: hit.result.job.pod,
      };
      let plainRestoreMs = NaN;
      try {
        if (hit.run.restore.status !== "exact") throw new Error(`hit run: restore ${hit.run.restore.status}`);
        // The plain restore: the store's own entry file (its archive bytes; the trailer left out) into the same pod, emptied.
        const entry = await findEntryFile(cacheDir);
        const cleared = await cluster.podExec("default", hit.result.job.pod, ["rm", "-rf", "/work/deps"]);
        if (cleared.code !== 0) throw new Error(`rm -rf /work/deps: ${cleared.stderr}`);
        // After the rm, as the runner's save comes after the workflow's last step's sync: the timing does not include writeback of what came before.
        const synced = await cluster.podExec("default", hit.result.job.pod, ["sync"]);
        if (synced.code !== 0) throw new Error(`sync: ${synced.stderr}`);
        const restore = await runTimed(
          ...onHost("sh", [
            "-c",
            `${PRELUDE}\nhead -c "$BYTES" "$ENTRY" | k exec -i "$POD" -c run -- sh -c '${PLAIN_RESTORE[compressor]}'`,
          ]),
          { env: { ...env, ENTRY: entry, BYTES: String(miss.run.save.bytes) } },
        );
        assertSucceeded("plain restore", restore);
        plainRestoreMs = restore.wallMs;
        const counted = await cluster.podExec("default", hit.result.job.pod, [
          "sh",
          "-c",
          "find /work/deps -type f | wc -l",
        ]);
        if (Number(counted.stdout.trim()) !== size.files + 1)
          throw new Error(`plain restore: ${counted.stdout.trim()} files, expected ${size.files + 1}`);
        log(`  cache ${size.label} plain restore: ${plainRestoreMs.toFixed(0)} ms`);
      } finally {
        assertSucceeded(`delete ${hit.result.job.name}`, await runTimed("sh", ["-c", buildDeleteScript()], { env }));
      }
      results.push({
        size,
        treeBytes,
        vendorBytes,
        noCache: noCache.run,
        miss: miss.run,
        hit: hit.run,
        plainSaveMs,
        plainSaveBytes,
        plainRestoreMs,
        hostParts,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  if (computeTreeBytes(20) !== 500_000) throw new Error("SIZE_CYCLE no longer sums to 250,000");
  return {
    sizes: results,
    ...(hostCpus === undefined ? {} : { hostCpus }),
    runnerCommand: `node ${argsFor("ci.yml", "CHECKOUT", "OUT", "STORE", ["--keep", "[--no-cache]"])
      .join(" ")
      .replace(/lcache-\d+/, "lcache-N")}`,
    plainSaveCommand: `${kubectlPath} --kubeconfig KC --namespace default exec POD -c run -- sh -c '${PLAIN_SAVE.gzip}' > FILE (zstd in the Debian image: '${PLAIN_SAVE.zstd}')`,
    plainRestoreCommand: `head -c ARCHIVE_BYTES ENTRY | ${kubectlPath} --kubeconfig KC --namespace default exec -i POD -c run -- sh -c '${PLAIN_RESTORE.gzip}' (zstd: '${PLAIN_RESTORE.zstd}')`,
    workflow: buildCacheWorkflow(sizes[sizes.length - 1]?.files ?? 0),
  };
}

/** The one entry file the store holds (v1/repos/<repo>/<key>.entry). */
async function findEntryFile(cacheDir: string): Promise<string> {
  const repos = join(cacheDir, "v1", "repos");
  for (const repo of await readdir(repos)) {
    for (const name of await readdir(join(repos, repo))) if (name.endsWith(".entry")) return join(repos, repo, name);
  }
  throw new Error(`no .entry file under ${repos}`);
}
