// Renders the local-cluster cache benchmark as markdown: each size's runs, the plain baselines, ratios and peak RSS.
import { FILES_PER_PACKAGE, SIZE_CYCLE } from "./cache-content.js";
import type { CacheBenchResult, CacheRun, CacheSizeResult } from "./local-cache-bench.js";

const TARGET = 0.9;

function mib(kib: number): string {
  return kib > 0 ? (kib / 1024).toFixed(1) : "—";
}

function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(1);
}

function row(name: string, run: CacheRun): string {
  return `| ${name} | ${(run.wallMs / 1000).toFixed(1)} | ${(run.installMs / 1000).toFixed(1)} | ${run.restore.status} ${run.restore.ms} ms, ${mb(run.restore.bytes)} MB | ${run.save.status} ${run.save.ms} ms, ${mb(run.save.bytes)} MB | ${mib(run.peakRssKiB)} | ${mib(run.restoreRssKiB)} | ${mib(run.saveRssKiB)} |`;
}

/** Throughput ratio runner/plain = plain time / runner time (≥ 1: the runner is as fast). */
function ratio(plainMs: number, runnerMs: number): number {
  return plainMs / runnerMs;
}

function renderSize(r: CacheSizeResult): string[] {
  const restoreRatio = ratio(r.plainRestoreMs, r.hit.restore.ms);
  const saveRatio = ratio(r.plainSaveMs, r.miss.save.ms);
  const verdict = (x: number) => (x >= TARGET ? "met" : "MISSED");
  return [
    `#### ${r.size.label} (${mb(r.treeBytes)} MB of files; vendored packages ${mb(r.vendorBytes)} MB; archive ${mb(r.miss.save.bytes)} MB, ${((r.miss.save.bytes / r.treeBytes) * 100).toFixed(0)} % of the tree)`,
    "",
    "| run | whole run s | install step s | restore (result.json) | save (result.json) | peak RSS MiB (whole run, VmHWM) | RSS MiB during restore | RSS MiB during save |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    row("--no-cache", r.noCache),
    row("miss + save", r.miss),
    row("exact hit", r.hit),
    "",
    `- restore: runner ${r.hit.restore.ms} ms (result.json \`caches[0].restore.ms\`), plain ${r.plainRestoreMs.toFixed(0)} ms: **${restoreRatio.toFixed(2)}x** of plain's throughput (${verdict(restoreRatio)})`,
    `- save: runner ${r.miss.save.ms} ms (\`caches[0].save.ms\`), plain ${r.plainSaveMs.toFixed(0)} ms (${mb(r.plainSaveBytes)} MB): **${saveRatio.toFixed(2)}x** (${verdict(saveRatio)})`,
    `- the hit's saving: install step ${(r.noCache.installMs / 1000).toFixed(1)} s → ${(r.hit.installMs / 1000).toFixed(1)} s; whole run ${(r.noCache.wallMs / 1000).toFixed(1)} s (no cache) → ${(r.hit.wallMs / 1000).toFixed(1)} s (hit; ${describeSaving(r.noCache.wallMs - r.hit.wallMs)}); the miss pays ${((r.miss.wallMs - r.noCache.wallMs) / 1000).toFixed(1)} s over no cache for its save`,
    `- the host side alone, once, on the plain save's archive read from tmpfs (wall / CPU ms): save's store write + sha256 + commit ${part(r.hostParts.storeWrite)}; restore's entry read with sha256 ${part(r.hostParts.entryRead)}, archive gate ${part(r.hostParts.gate)}`,
    "",
  ];
}

/** "3.1 s saved", or "3.1 s SLOWER" when the hit cost more than installing. */
function describeSaving(ms: number): string {
  return ms >= 0 ? `${(ms / 1000).toFixed(1)} s saved` : `${(-ms / 1000).toFixed(1)} s SLOWER than installing`;
}

function part(p: { wallMs: number; cpuMs: number }): string {
  return `${p.wallMs.toFixed(0)} / ${p.cpuMs.toFixed(0)}`;
}

export function renderCacheReport(
  r: CacheBenchResult,
  loadAtStart: readonly number[],
  loadAtEnd: readonly number[],
): string {
  const sizes = r.sizes;
  const rssLine =
    sizes.length >= 2
      ? `- peak RSS of the runner process, ${sizes.map((s) => `${s.size.label}: restore ${mib(s.hit.restoreRssKiB)} MiB, save ${mib(s.miss.saveRssKiB)} MiB, whole hit run ${mib(s.hit.peakRssKiB)} MiB, whole miss run ${mib(s.miss.peakRssKiB)} MiB`).join("; ")}`
      : "";
  return [
    "### 5. Workflow caches on the local cluster",
    "",
    `Content: one vendored .tgz per package (${FILES_PER_PACKAGE} files each: a package.json, lib/ and dist/ files), sizes cycling through ${SIZE_CYCLE.join(", ")} bytes (250 kB per 10 files); each file is half JavaScript-like text from a seeded 1 MiB word pool (compressible) and half xorshift32 bytes (incompressible), all deterministic. The workflow's last step ends with \`sync\`, so the runner's save, like the plain one after it, does not start beside the kernel's writeback of what the install just wrote. Per size, three runs of the same workflow in a fresh store: \`--no-cache\`, then a miss (install, then the save), then an exact hit, each with \`--keep\` (the bench deletes the Job after its baselines). In the miss run's kept pod, right after the runner's save, the plain save (\`tar | gzip -1\` through \`kubectl exec\` into a host file); in the hit run's kept pod, after \`rm -rf /work/deps\` and \`sync\`, the plain restore of the store's entry file (its archive bytes, the trailer cut off with \`head -c\`). One repetition per size.`,
    "",
    "What each number covers:",
    "- runner restore = `caches[0].restore.ms`: store lookup, entry read with its sha256, the host archive gate (gunzip or fzstd + tar header check), `kubectl exec -i … helper.sh cache-restore` (gunzip or zstd -d | tar -x -C / in the pod) to its exit and the pod's proof line;",
    "- runner save = `caches[0].save.ms`: `kubectl exec … helper.sh cache-save` (tar -c | gzip -1 in busybox, zstd -1 in Debian) to its exit, kubectl stdout into the store's temp file with its sha256 (the archive is checked by the gate of each restore, not here), the commit (link) and the store's eviction pass;",
    "- plain restore/save: `sh -c` spawn → exit of the commands below (kubectl start-up included, as it is in the runner's figures);",
    "- RSS during restore/save: the highest VmRSS of the runner process sampled every 25 ms inside the cache-restore/cache-save event's span; VmHWM: the whole run's peak (the runner does other things: upload of the vendored packages, output relay).",
    "",
    `- runner: \`${r.runnerCommand}\``,
    `- plain save: \`${r.plainSaveCommand}\``,
    `- plain restore: \`${r.plainRestoreCommand}\``,
    ...(r.hostCpus === undefined
      ? [
          "- CPUs: host and cluster share every core (the runner, kubectl, the API server's exec relay, podman and the pod's tar and compressor)",
        ]
      : [
          `- CPUs: the host's side (the runner, its kubectl, the baselines) under \`taskset -c ${r.hostCpus}\`; the bench, with the local cluster in its process, podman and the pods, on the others (as launched)`,
        ]),
    `- load average at start ${loadAtStart.map((l) => l.toFixed(2)).join(", ")}; at end ${loadAtEnd.map((l) => l.toFixed(2)).join(", ")}`,
    "",
    "Workflow (largest size):",
    "",
    "```yaml",
    r.workflow.trimEnd(),
    "```",
    "",
    ...sizes.flatMap(renderSize),
    rssLine,
    "",
  ].join("\n");
}
