// Runs the in-pod helper for real, in a bwrap sandbox with /knotless and /work, under the host's sh, busybox sh and bash: the step protocol.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { createPod, FLAVOUR_TITLES, FLAVOURS, HAS_BWRAP, readFrames, type Pod } from "./helper-pod.js";

/** Writes the files the helper keeps for step `index` (`out`, `err`, `exit`, `killed`) as a run would have left them. */
function stageStepState(pod: Pod, index: number, files: Readonly<Record<string, string>>): string {
  const dir = join(pod.knotless, "run", String(index));
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}

/** Each test makes its own sandbox and most of its time is its steps' sleeps: the tests of a flavour run at once. */
const SANDBOXED = { skip: HAS_BWRAP ? false : "bwrap is not installed", concurrency: true } as const;

for (const flavour of FLAVOURS) {
  describe(`helper.sh under ${FLAVOUR_TITLES[flavour]}`, SANDBOXED, () => {
    const scratch: string[] = [];
    const newPod = (extraBinds: readonly string[] = []): Pod => {
      const pod = createPod(flavour, { extraBinds });
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

    it(
      flavour === "bash"
        ? "never sets a CHLD trap under bash, which crashes when a pending one is reset"
        : "wakes its polls with a CHLD trap when a child ends",
      async () => {
        const pod = newPod();
        writeFileSync(join(pod.knotless, "steps", "0.sh"), "sleep 0.3\necho done\n");
        // The poll of `run` traced: sh in the pod is the flavour's shell (bash under bash).
        writeFileSync(join(pod.knotless, "traced.sh"), "exec sh -x /knotless/helper.sh run 0\n");
        const child = pod.startScript("/knotless/traced.sh");
        const out: Buffer[] = [];
        let trace = "";
        child.stdout!.on("data", (chunk: Buffer) => out.push(chunk));
        child.stderr!.setEncoding("utf8").on("data", (text: string) => (trace += text));
        assert.equal(await new Promise((resolve) => child.on("close", resolve)), 0, trace);
        assert.deepEqual(readFrames(Buffer.concat(out)), { stdout: "done\n", stderr: "", end: ["exit 0"] });
        const trapLines = trace.split("\n").filter((line) => /^\++ trap .*CHLD/.test(line));
        if (flavour === "bash") assert.deepEqual(trapLines, []);
        else assert.ok(trapLines.length > 0, "the poll arms its trap");
      },
    );

    it("run stops a step at its first failing command, as sh -e does", async () => {
      const pod = newPod();
      writeFileSync(join(pod.knotless, "steps", "0.sh"), "echo before\nfalse\necho after\n");
      assert.deepEqual(readFrames((await pod.helper(["run", "0"])).stdout), {
        stdout: "before\n",
        stderr: "",
        end: ["exit 1"],
      });
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
      assert.deepEqual(readFrames((await pod.helper(["follow", "1", "6", "2"])).stdout), {
        stdout: "world\n",
        stderr: "c",
        end: ["exit 0"],
      });
      assert.deepEqual(readFrames((await pod.helper(["follow", "1", "12", "3"])).stdout), {
        stdout: "",
        stderr: "",
        end: ["exit 0"],
      });
    });

    it("a kill that arrives before its step's exec stops the step from ever starting: the late run reports it killed", async () => {
      const pod = newPod();
      writeFileSync(join(pod.knotless, "steps", "2.sh"), "echo ran >> /work/ran\n");
      const kill = await pod.helper(["kill", "2", "1"]);
      assert.equal(kill.code, 0, kill.stderr);
      assert.equal(kill.stdout.toString(), "stopped 2\n");
      const late = await pod.helper(["run", "2"]);
      assert.equal(late.code, 0, late.stderr);
      assert.deepEqual(readFrames(late.stdout).end, ["killed"]);
      assert.equal(existsSync(join(pod.work, "ran")), false, "the step ran after its kill");
    });

    it("follow of a killed step sends the output it wrote from the offsets asked, then reports it killed", async () => {
      const pod = newPod();
      stageStepState(pod, 3, { out: "before the hang\n", err: "warn\n", killed: "" });
      assert.deepEqual(readFrames((await pod.helper(["follow", "3", "0", "0"])).stdout), {
        stdout: "before the hang\n",
        stderr: "warn\n",
        end: ["killed"],
      });
      assert.deepEqual(readFrames((await pod.helper(["follow", "3", "7", "5"])).stdout), {
        stdout: "the hang\n",
        stderr: "",
        end: ["killed"],
      });
    });

    it("follow reports N for a step that was never started", async () => {
      const pod = newPod();
      assert.deepEqual(readFrames((await pod.helper(["follow", "9", "0", "0"])).stdout).end, ["not-started"]);
    });

    it("follow takes an exit code only once its line is complete, never a partly written one", async () => {
      const pod = newPod();
      const dir = stageStepState(pod, 7, { out: "", err: "", exit: "1" });
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
      assert.ok(
        Date.now() - statSync(heartbeat).mtimeMs < 60_000,
        `heartbeat mtime ${statSync(heartbeat).mtime.toISOString()}`,
      );
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
      if (flavour === "busybox")
        assert.ok(stdout.length % 512 === 0 && stdout.length < 65536, `${stdout.length} bytes`);
      else assert.equal(stdout.length, 65536);
    });

    // busybox sh runs its own sleep applet whatever PATH says, so the slow sleep below can only be slipped to the host's sh.
    it(
      "run ends as soon as the step ends, without sleeping out its poll interval",
      {
        skip:
          flavour === "busybox"
            ? "busybox sh ignores PATH for its applets"
            : flavour === "bash"
              ? "under bash the poll sleeps its interval out: no CHLD trap (see above)"
              : false,
      },
      async () => {
        const shim = mkdtempSync(join(tmpdir(), "helper-shim-"));
        scratch.push(shim);
        writeFileSync(join(shim, "sleep"), "#!/bin/sh\nexec /usr/bin/sleep 30\n", { mode: 0o755 }); // every poll would take 30 s
        const pod = newPod(["--ro-bind", shim, "/shim", "--setenv", "PATH", "/shim:/usr/local/bin:/usr/bin:/bin"]);
        spawnSync("mkfifo", [join(pod.work, "gate")]);
        writeFileSync(join(pod.knotless, "steps", "0.sh"), 'read line < /work/gate\necho "$line"\n');
        const child = pod.startHelper(["run", "0"]);
        const out: Buffer[] = [];
        child.stdout!.on("data", (chunk: Buffer) => out.push(chunk));
        const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
        await new Promise((resolve) => setTimeout(resolve, 500)); // the helper is in its first poll's sleep by now
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        await writeFile(join(pod.work, "gate"), "open\n"); // async: opening a fifo blocks until the step reads it
        const released = Date.now();
        assert.equal(await closed, 0);
        clearTimeout(timer);
        // Through a poll it would take the shim's 30 s; 20 s tells that from a prompt end on a busy machine.
        assert.ok(Date.now() - released < 20_000, `the helper noticed the end only after ${Date.now() - released} ms`);
        assert.deepEqual(readFrames(Buffer.concat(out)), { stdout: "open\n", stderr: "", end: ["exit 0"] });
      },
    );
  });
}
