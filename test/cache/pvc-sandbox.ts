// A bwrap sandbox standing in for a run pod with the cache claim: host dirs at /knotless-cache and /work, under the host's sh (Debian: dash, GNU tools) or busybox sh among busybox applets only.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import type { PvcCommandOutput } from "../../src/cache/pvc-output.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const BUSYBOX = "/bin/busybox";
export const HAS_BWRAP = spawnSync("bwrap", ["--version"]).status === 0;

/** Where the commands run: the host's sh with GNU tools (as in debian:bookworm-slim), or busybox sh with busybox applets (busybox:1.36). */
export type CacheFlavour = "host" | "busybox";
export const CACHE_FLAVOURS: readonly CacheFlavour[] = (["host", "busybox"] as const).filter(
  (f) => f === "host" || existsSync(BUSYBOX),
);

export interface CachePod {
  /** The host dir mounted at /knotless-cache (the claim: several pods may share one). */
  readonly claim: string;
  /** The host dir mounted at /work. */
  readonly work: string;
  /** Runs a builder's argv in the pod. */
  exec(argv: readonly string[]): Promise<PvcCommandOutput>;
}

function buildRootArgs(flavour: CacheFlavour, scratch: string): string[] {
  if (flavour === "busybox") {
    const bin = join(scratch, "bin");
    mkdirSync(bin, { recursive: true });
    const applets = spawnSync(BUSYBOX, ["--list"], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);
    for (const applet of applets) if (!existsSync(join(bin, applet))) symlinkSync("/busybox", join(bin, applet));
    return ["--ro-bind", bin, "/bin", "--ro-bind", BUSYBOX, "/busybox", "--setenv", "PATH", "/bin"];
  }
  const args = [
    "--ro-bind",
    "/usr",
    "/usr",
    "--ro-bind",
    "/etc",
    "/etc",
    "--setenv",
    "PATH",
    "/usr/local/bin:/usr/bin:/bin",
  ];
  for (const dir of ["/bin", "/sbin", "/lib", "/lib64"]) {
    if (!existsSync(dir)) continue;
    const target = spawnSync("readlink", [dir], { encoding: "utf8" }).stdout.trim();
    args.push(...(target ? ["--symlink", target, dir] : ["--ro-bind", dir, dir]));
  }
  return args;
}

/** A pod of `flavour`; pass `claim` to share one claim between pods (as runs share the PVC). */
export function createCachePod(flavour: CacheFlavour, claim?: string): CachePod {
  const scratch = makeTestTempDir(`pvc-${flavour}-`);
  const claimDir = claim ?? join(scratch, "claim");
  const work = join(scratch, "work");
  mkdirSync(claimDir, { recursive: true });
  mkdirSync(work);
  const bwrap = [
    "--die-with-parent",
    "--unshare-pid",
    ...buildRootArgs(flavour, scratch),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    "--bind",
    claimDir,
    "/knotless-cache",
    "--bind",
    work,
    "/work",
    "--chdir",
    "/",
    "--",
  ];
  return {
    claim: claimDir,
    work,
    exec: (argv) =>
      new Promise((resolve, reject) => {
        const child = spawn("bwrap", [...bwrap, ...argv], { stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (t: string) => (stdout += t));
        child.stderr.setEncoding("utf8").on("data", (t: string) => (stderr += t));
        child.on("error", reject);
        child.on("close", (code) => resolve({ exitCode: code ?? 1, stdout, stderr }));
      }),
  };
}
