// Runs the in-pod helper for real, in a bwrap sandbox with /knotless and /work, under the host's sh, busybox sh and bash.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { FollowFrameParser } from "../../src/pod/follow-frames.js";
import { buildHelperScript } from "../../src/pod/helper-script.js";

const BUSYBOX = "/bin/busybox";
const HAS_BWRAP = spawnSync("bwrap", ["--version"]).status === 0;

interface Pod {
  readonly root: string;
  readonly knotless: string;
  readonly work: string;
  /** Runs `sh /knotless/helper.sh ARGS` in the pod; resolves with its stdout and exit code. */
  helper(args: readonly string[]): Promise<{ code: number | null; stdout: Buffer; stderr: string }>;
  /** Starts `sh /knotless/helper.sh ARGS` and returns the process. */
  startHelper(args: readonly string[]): ReturnType<typeof spawn>;
}

/** Where the helper runs: the host's sh (dash on Debian), busybox sh among busybox applets only, or bash as sh. */
type Flavour = "host" | "busybox" | "bash";

/** The sh command of each flavour (bash invoked as sh runs in POSIX mode, as images whose sh is bash do). */
const SHELL: Record<Flavour, readonly string[]> = { host: ["sh"], busybox: ["sh"], bash: ["bash", "--posix"] };

/** The host's system dirs read-only, or a root of busybox applets only. */
function buildRootArgs(flavour: Flavour, root: string): string[] {
  if (flavour === "busybox") {
    const bin = join(root, "bin");
    mkdirSync(bin);
    const applets = spawnSync(BUSYBOX, ["--list"], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);
    for (const applet of applets) symlinkSync("/busybox", join(bin, applet));
    return ["--ro-bind", bin, "/bin", "--ro-bind", BUSYBOX, "/busybox", "--setenv", "PATH", "/bin"];
  }
  const args = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin"];
  for (const dir of ["/bin", "/sbin", "/lib", "/lib64"]) {
    if (!existsSync(dir)) continue;
    const target = spawnSync("readlink", [dir], { encoding: "utf8" }).stdout.trim();
    args.push(...(target ? ["--symlink", target, dir] : ["--ro-bind", dir, dir]));
  }
  return args;
}

function createPod(flavour: Flavour, extraBinds: readonly string[] = []): Pod {
  const root = mkdtempSync(join(tmpdir(), `helper-${flavour}-`));
  const knotless = join(root, "knotless");
  const work = join(root, "work");
  mkdirSync(join(knotless, "steps"), { recursive: true });
  mkdirSync(work);
  writeFileSync(join(knotless, "helper.sh"), buildHelperScript());
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
    ...extraBinds,
    "--chdir",
    "/",
    "--",
  ];
  const startHelper = (args: readonly string[]) => spawn("bwrap", [...bwrap, ...SHELL[flavour], "/knotless/helper.sh", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  return {
    root,
    knotless,
    work,
    startHelper,
    helper: (args) =>
      new Promise((resolve, reject) => {
        const child = startHelper(args);
        const out: Buffer[] = [];
        let stderr = "";
        child.stdout!.on("data", (chunk: Buffer) => out.push(chunk));
        child.stderr!.setEncoding("utf8").on("data", (text: string) => (stderr += text));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
      }),
  };
}

function readFrames(stdout: Buffer): { stdout: string; stderr: string; end: string[] } {
  const result = { stdout: "", stderr: "", end: [] as string[] };
  for (const frame of new FollowFrameParser().push(stdout)) {
    if (frame.type === "stdout" || frame.type === "stderr") result[frame.type] += frame.data.toString();
    else result.end.push(frame.type === "exit" ? `exit ${frame.code}` : frame.type);
  }
  return result;
}

const HAS_BASH = spawnSync("bash", ["-c", "true"]).status === 0;
const flavours = (["host", "busybox", "bash"] as const).filter((flavour) => (flavour === "busybox" ? existsSync(BUSYBOX) : flavour === "bash" ? HAS_BASH : true));
const TITLES: Record<Flavour, string> = { host: "the host's sh", busybox: "busybox sh", bash: "bash as sh" };

for (const flavour of flavours) {
  describe(`helper.sh under ${TITLES[flavour]}`, { skip: HAS_BWRAP ? false : "bwrap is not installed" }, () => {
    const scratch: string[] = [];
    const newPod = (extraBinds: readonly string[] = []): Pod => {
      const pod = createPod(flavour, extraBinds);
      scratch.push(pod.root);
      return pod;
    };
    after(() => {
      for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
    });

    it("run streams the step's stdout and stderr as frames and ends with its exit code", async () => {
      const pod = newPod();
      writeFileSync(join(pod.knotless, "steps", "0.sh"), "echo out\necho err >&2\npwd\nexit 3\n");
      const run = await pod.helper(["run", "0"]);
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(readFrames(run.stdout), { stdout: "out\n/work\n", stderr: "err\n", end: ["exit 3"] });
    });

    it("run stops a step at its first failing command, as sh -e does", async () => {
      const pod = newPod();
      writeFileSync(join(pod.knotless, "steps", "0.sh"), "echo before\nfalse\necho after\n");
      assert.deepEqual(readFrames((await pod.helper(["run", "0"])).stdout), { stdout: "before\n", stderr: "", end: ["exit 1"] });
    });

    it("a second run of the same step only follows it and does not start it again", async () => {
      const pod = newPod();
      writeFileSync(join(pod.knotless, "steps", "4.sh"), "echo ran >> /work/count\necho done\n");
      const first = readFrames((await pod.helper(["run", "4"])).stdout);
      const second = readFrames((await pod.helper(["run", "4"])).stdout);
      assert.deepEqual(first, { stdout: "done\n", stderr: "", end: ["exit 0"] });
      assert.deepEqual(second, first);
      assert.equal(readFileSync(join(pod.work, "count"), "utf8"), "ran\n");
    });

    it("follow resumes from byte offsets, repeating no byte", async () => {
      const pod = newPod();
      writeFileSync(join(pod.knotless, "steps", "1.sh"), "printf 'hello world\\n'\nprintf 'abc' >&2\n");
      await pod.helper(["run", "1"]);
      assert.deepEqual(readFrames((await pod.helper(["follow", "1", "6", "2"])).stdout), { stdout: "world\n", stderr: "c", end: ["exit 0"] });
      assert.deepEqual(readFrames((await pod.helper(["follow", "1", "12", "3"])).stdout), { stdout: "", stderr: "", end: ["exit 0"] });
    });

    it("follow reports N for a step that was never started", async () => {
      const pod = newPod();
      assert.deepEqual(readFrames((await pod.helper(["follow", "9", "0", "0"])).stdout).end, ["not-started"]);
    });

    it("follow takes an exit code only once its line is complete, never a partly written one", async () => {
      const pod = newPod();
      const dir = join(pod.knotless, "run", "7");
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "out"), "");
      writeFileSync(join(dir, "err"), "");
      writeFileSync(join(dir, "exit"), "1");
      const child = pod.startHelper(["follow", "7", "0", "0"]);
      const out: Buffer[] = [];
      child.stdout!.on("data", (chunk: Buffer) => out.push(chunk));
      const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
      await new Promise((resolve) => setTimeout(resolve, 400));
      assert.equal(child.exitCode, null, `follow ended on a partial exit code: ${Buffer.concat(out).toString()}`);
      writeFileSync(join(dir, "exit"), "12\n");
      assert.equal(await closed, 0);
      assert.deepEqual(readFrames(Buffer.concat(out)).end, ["exit 12"]);
    });

    it("every helper call touches the heartbeat file", async () => {
      const pod = newPod();
      const heartbeat = join(pod.knotless, "heartbeat");
      writeFileSync(heartbeat, "");
      utimesSync(heartbeat, new Date(0), new Date(0));
      await pod.helper(["follow", "9", "0", "0"]);
      assert.ok(Date.now() - statSync(heartbeat).mtimeMs < 60_000, `heartbeat mtime ${statSync(heartbeat).mtime.toISOString()}`);
    });

    it("pack-outputs writes /outputs as a tar, in 64 KiB records where tar takes -b, and counts its entries on stderr", async () => {
      const outputs = mkdtempSync(join(tmpdir(), "helper-outputs-"));
      scratch.push(outputs);
      mkdirSync(join(outputs, "dir"));
      writeFileSync(join(outputs, "dir", "a.txt"), "a\n");
      writeFileSync(join(outputs, "b.bin"), Buffer.alloc(3000, 7));
      const pod = newPod(["--bind", outputs, "/outputs"]);
      const { code, stdout, stderr } = await pod.helper(["pack-outputs"]);
      assert.equal(code, 0, stderr);
      assert.match(stderr, /^knotless-outputs-entries 4$/m); // /outputs, dir, dir/a.txt, b.bin
      const listed = spawnSync("tar", ["-tf", "-"], { input: stdout, encoding: "utf8" });
      assert.equal(listed.status, 0, listed.stderr);
      assert.deepEqual(listed.stdout.split("\n").filter(Boolean).sort(), ["./", "./b.bin", "./dir/", "./dir/a.txt"]);
      // busybox tar has no -b and writes the archive unpadded; GNU tar pads to its record size.
      if (flavour === "busybox") assert.ok(stdout.length % 512 === 0 && stdout.length < 65536, `${stdout.length} bytes`);
      else assert.equal(stdout.length, 65536);
    });

    // busybox sh runs its own sleep applet whatever PATH says, so the slow sleep below can only be slipped to the host's sh.
    it("run ends as soon as the step ends, without sleeping out its poll interval", { skip: flavour === "busybox" ? "busybox sh ignores PATH for its applets" : false }, async () => {
      const shim = mkdtempSync(join(tmpdir(), "helper-shim-"));
      scratch.push(shim);
      writeFileSync(join(shim, "sleep"), "#!/bin/sh\nexec /usr/bin/sleep 30\n", { mode: 0o755 }); // every poll would take 30 s
      const pod = newPod(["--ro-bind", shim, "/shim", "--setenv", "PATH", "/shim:/usr/local/bin:/usr/bin:/bin"]);
      spawnSync("mkfifo", [join(pod.work, "gate")]);
      writeFileSync(join(pod.knotless, "steps", "0.sh"), "read line < /work/gate\necho \"$line\"\n");
      const child = pod.startHelper(["run", "0"]);
      const out: Buffer[] = [];
      child.stdout!.on("data", (chunk: Buffer) => out.push(chunk));
      const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
      await new Promise((resolve) => setTimeout(resolve, 500)); // the helper is in its first poll's sleep by now
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await writeFile(join(pod.work, "gate"), "open\n"); // async: opening a fifo blocks until the step reads it
      const released = Date.now();
      assert.equal(await closed, 0);
      clearTimeout(timer);
      assert.ok(Date.now() - released < 10_000, `the helper noticed the end only after ${Date.now() - released} ms`);
      assert.deepEqual(readFrames(Buffer.concat(out)), { stdout: "open\n", stderr: "", end: ["exit 0"] });
    });
  });
}
