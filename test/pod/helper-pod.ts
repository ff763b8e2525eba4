// A bwrap sandbox standing in for the run pod (/knotless, /work, /knotless-secrets), under the host's sh, busybox sh or bash.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FollowFrameParser } from "../../src/pod/follow-frames.js";
import { buildHelperScript, type HelperOptions } from "../../src/pod/helper-script.js";

const BUSYBOX = "/bin/busybox";
export const HAS_BWRAP = spawnSync("bwrap", ["--version"]).status === 0;
const HAS_BASH = spawnSync("bash", ["-c", "true"]).status === 0;

export interface Pod {
  readonly root: string;
  readonly knotless: string;
  readonly work: string;
  /** The host dir mounted at /knotless-secrets. */
  readonly secrets: string;
  /** Runs `sh /knotless/helper.sh ARGS` in the pod, `stdin` on its stdin; resolves with its stdout and exit code. */
  helper(
    args: readonly string[],
    stdin?: string | Buffer,
  ): Promise<{ code: number | null; stdout: Buffer; stderr: string }>;
  /** Starts `sh /knotless/helper.sh ARGS` and returns the process; with `holdStdin`, its stdin is a pipe the test holds, as the runner does. */
  startHelper(args: readonly string[], options?: { readonly holdStdin?: boolean }): ReturnType<typeof spawn>;
  /** Starts `sh SCRIPT` (a path in the pod) in a sandbox of its own on the same mounts, as another exec or PID 1 would run. */
  startScript(script: string): ReturnType<typeof spawn>;
}

/** Where the helper runs: the host's sh (dash on Debian), busybox sh among busybox applets only, or bash as sh. */
export type Flavour = "host" | "busybox" | "bash";

/** The sh command of each flavour (bash invoked as sh runs in POSIX mode, as images whose sh is bash do). */
const SHELL: Record<Flavour, readonly string[]> = { host: ["sh"], busybox: ["sh"], bash: ["bash", "--posix"] };

export const FLAVOURS: readonly Flavour[] = (["host", "busybox", "bash"] as const).filter((flavour) =>
  flavour === "busybox" ? existsSync(BUSYBOX) : flavour === "bash" ? HAS_BASH : true,
);
export const FLAVOUR_TITLES: Record<Flavour, string> = {
  host: "the host's sh",
  busybox: "busybox sh",
  bash: "bash as sh",
};

/**
 * The host's system dirs read-only, or a root of busybox applets only. Under bash, bash also stands in for `sh`, so
 * the step's wrapper (which the helper starts as `sh`) runs under bash too, as in an image whose sh is bash.
 */
function buildRootArgs(flavour: Flavour, root: string): string[] {
  if (flavour === "busybox") {
    const bin = join(root, "bin");
    mkdirSync(bin);
    const applets = spawnSync(BUSYBOX, ["--list"], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);
    for (const applet of applets) symlinkSync("/busybox", join(bin, applet));
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
  if (flavour === "bash") args.push("--ro-bind", "/usr/bin/bash", "/usr/bin/sh");
  for (const dir of ["/bin", "/sbin", "/lib", "/lib64"]) {
    if (!existsSync(dir)) continue;
    const target = spawnSync("readlink", [dir], { encoding: "utf8" }).stdout.trim();
    args.push(...(target ? ["--symlink", target, dir] : ["--ro-bind", dir, dir]));
  }
  return args;
}

/** Steps 0 to 9 get an (empty) env file, as the runner stages one per step. */
const STAGED_STEPS = 10;

/**
 * A pod with the helper generated for `helper`, and empty environment files as the runner stages them
 * (env/run.env, env/carried.env, env/N.env); tests overwrite what they need.
 */
export function createPod(
  flavour: Flavour,
  options: { extraBinds?: readonly string[]; helper?: HelperOptions } = {},
): Pod {
  const root = mkdtempSync(join(tmpdir(), `helper-${flavour}-`));
  const knotless = join(root, "knotless");
  const work = join(root, "work");
  const secrets = join(root, "secrets");
  mkdirSync(join(knotless, "steps"), { recursive: true });
  mkdirSync(join(knotless, "env"));
  mkdirSync(work);
  mkdirSync(secrets, { mode: 0o777 });
  writeFileSync(join(knotless, "helper.sh"), buildHelperScript(options.helper));
  for (const name of ["run.env", "carried.env", ...Array.from({ length: STAGED_STEPS }, (_, i) => `${i}.env`)])
    writeFileSync(join(knotless, "env", name), "");
  const bwrap = [
    "--die-with-parent",
    "--unshare-pid",
    ...buildRootArgs(flavour, root),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    "--bind",
    knotless,
    "/knotless",
    "--bind",
    work,
    "/work",
    "--bind",
    secrets,
    "/knotless-secrets",
    ...(options.extraBinds ?? []),
    "--chdir",
    "/",
    "--",
  ];
  const startScript = (script: string, args: readonly string[] = [], stdin = false) =>
    spawn("bwrap", [...bwrap, ...SHELL[flavour], script, ...args], {
      stdio: [stdin ? "pipe" : "ignore", "pipe", "pipe"],
    });
  const startHelper = (args: readonly string[], stdin = false) => startScript("/knotless/helper.sh", args, stdin);
  return {
    root,
    knotless,
    work,
    secrets,
    startHelper: (args, options) => startHelper(args, options?.holdStdin ?? false),
    startScript: (script) => startScript(script),
    helper: (args, stdin) =>
      new Promise((resolve, reject) => {
        const child = startHelper(args, stdin !== undefined);
        const out: Buffer[] = [];
        let stderr = "";
        child.stdout!.on("data", (chunk: Buffer) => out.push(chunk));
        child.stderr!.setEncoding("utf8").on("data", (text: string) => (stderr += text));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
        if (stdin !== undefined) child.stdin!.end(stdin);
      }),
  };
}

export function readFrames(stdout: Buffer): { stdout: string; stderr: string; end: string[] } {
  const result = { stdout: "", stderr: "", end: [] as string[] };
  for (const frame of new FollowFrameParser().push(stdout)) {
    if (frame.type === "stdout" || frame.type === "stderr") result[frame.type] += frame.data.toString();
    else if (frame.type === "dropped") result.end.push(`dropped ${frame.stream} ${frame.bytes ?? "?"}`);
    else result.end.push(frame.type === "exit" ? `exit ${frame.code}` : frame.type);
  }
  return result;
}
