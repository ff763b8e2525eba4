// Runs the in-pod helper for real (bwrap, under the host's sh, busybox sh and bash): a step's output files stay within the bound.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { createPod, FLAVOUR_TITLES, FLAVOURS, HAS_BWRAP, readFrames, type Pod } from "./helper-pod.js";

/** A bound that is no power of two, so the copier's reads shrink to meet it exactly. */
const BOUND = 1000;
/** 2000 lines of 16 bytes: 32000 bytes, far past the bound. */
const PRINT_32000 = "i=0\nwhile [ $i -lt 2000 ]; do echo 0123456789abcde; i=$((i + 1)); done\n";

function waitFor(check: () => boolean, what: string, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const poll = (): void => {
      if (check()) resolve();
      else if (Date.now() > until) reject(new Error(`gave up waiting for ${what}`));
      else setTimeout(poll, 20);
    };
    poll();
  });
}

for (const flavour of FLAVOURS) {
  describe(
    `helper.sh's output bound under ${FLAVOUR_TITLES[flavour]}`,
    // Each test makes its own sandbox and most of its time is its steps' sleeps: the tests run at once.
    { skip: HAS_BWRAP ? false : "bwrap is not installed", concurrency: true },
    () => {
      const scratch: string[] = [];
      const newPod = (
        outputBoundBytes = BOUND,
        options: { settleSeconds?: { quiet: number; most: number }; extraBinds?: string[] } = {},
      ): Pod => {
        const pod = createPod(flavour, {
          helper: { outputBoundBytes, settleSeconds: options.settleSeconds },
          extraBinds: options.extraBinds,
        });
        scratch.push(pod.root);
        return pod;
      };
      const stepFile = (pod: Pod, index: number, name: string): string =>
        join(pod.knotless, "run", String(index), name);
      after(() => {
        for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
      });

      it("a step printing past the bound runs to its end; its file stays at the bound and the follow says how much was dropped", async () => {
        const pod = newPod();
        writeFileSync(join(pod.knotless, "steps", "0.sh"), `${PRINT_32000}echo warn >&2\necho done > /work/finished\n`);
        const run = await pod.helper(["run", "0"]);
        assert.equal(run.code, 0, run.stderr);
        const frames = readFrames(run.stdout);
        assert.equal(frames.stdout, "0123456789abcde\n".repeat(2000).slice(0, BOUND));
        assert.equal(frames.stderr, "warn\n");
        assert.deepEqual(frames.end, ["dropped stdout 31000", "exit 0"]);
        assert.equal(statSync(stepFile(pod, 0, "out")).size, BOUND);
        assert.equal(
          existsSync(join(pod.work, "finished")),
          true,
          "the step did not go on after its output was dropped",
        );
      });

      it("stderr has a bound of its own, and a bound of 0 keeps nothing", async () => {
        const pod = newPod(0);
        writeFileSync(join(pod.knotless, "steps", "0.sh"), `echo out\n${PRINT_32000.replace("abcde;", "abcde >&2;")}`);
        const frames = readFrames((await pod.helper(["run", "0"])).stdout);
        assert.deepEqual(frames, {
          stdout: "",
          stderr: "",
          end: ["dropped stdout 4", "dropped stderr 32000", "exit 0"],
        });
        assert.equal(statSync(stepFile(pod, 0, "err")).size, 0);
      });

      it("below the bound nothing is dropped and a follow resumes from byte offsets", async () => {
        const pod = newPod();
        writeFileSync(join(pod.knotless, "steps", "1.sh"), "printf 'hello world\\n'\nprintf 'abc' >&2\n");
        assert.deepEqual(readFrames((await pod.helper(["run", "1"])).stdout), {
          stdout: "hello world\n",
          stderr: "abc",
          end: ["exit 0"],
        });
        assert.deepEqual(readFrames((await pod.helper(["follow", "1", "6", "2"])).stdout), {
          stdout: "world\n",
          stderr: "c",
          end: ["exit 0"],
        });
      });

      it("output reaches the follow while the step still runs, not only once a block is full", async () => {
        const pod = newPod(64 * 1024 * 1024);
        writeFileSync(
          join(pod.knotless, "steps", "0.sh"),
          "echo first\nwhile [ ! -e /work/go ]; do sleep 0.05; done\necho second\n",
        );
        const child = pod.startHelper(["run", "0"], { holdStdin: true });
        const out: Buffer[] = [];
        child.stdout!.on("data", (chunk: Buffer) => out.push(chunk));
        const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
        const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
        await waitFor(() => readFrames(Buffer.concat(out)).stdout === "first\n", "the step's first line");
        writeFileSync(join(pod.work, "go"), "");
        child.stdin!.end();
        assert.equal(await closed, 0);
        clearTimeout(timer);
        assert.deepEqual(readFrames(Buffer.concat(out)), { stdout: "first\nsecond\n", stderr: "", end: ["exit 0"] });
      });

      it("a step killed while it prints forever leaves its file at the bound; the follow says the rest was dropped uncounted", async () => {
        const pod = newPod();
        writeFileSync(join(pod.knotless, "steps", "0.sh"), "while :; do echo 0123456789abcde; done\n");
        const child = pod.startHelper(["run", "0"], { holdStdin: true });
        child.stdout!.resume();
        const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
        await waitFor(() => existsSync(stepFile(pod, 0, "out.full")), "the bound to be reached");
        const kill = await pod.helper(["kill", "0", "1"]);
        assert.equal(kill.stdout.toString(), "stopped 0\n", kill.stderr);
        child.stdin!.end();
        await closed;
        const frames = readFrames((await pod.helper(["follow", "0", "0", "0"])).stdout);
        assert.equal(frames.stdout.length, BOUND);
        assert.deepEqual(frames.end, ["dropped stdout ?", "killed"]);
        assert.equal(statSync(stepFile(pod, 0, "out")).size, BOUND);
      });

      it("a process the step leaves running with its output open holds the step's end for at most a few seconds", async () => {
        const pod = newPod();
        writeFileSync(join(pod.knotless, "steps", "0.sh"), "sleep 30 &\necho hi\n");
        const started = Date.now();
        const run = await pod.helper(["run", "0"]);
        const took = Date.now() - started;
        assert.deepEqual(readFrames(run.stdout), { stdout: "hi\n", stderr: "", end: ["exit 0"] });
        // Held until the sleep ended, it would take 30 s; the settle wait counts polls, which a busy machine slows.
        assert.ok(took < 20_000, `the step's end took ${took} ms`);
        assert.equal((await pod.helper(["kill", "0", "1"])).stdout.toString(), "stopped 0\n");
      });

      it("a process the step leaves printing holds the step's end for at most the settle limit in all", async () => {
        const pod = newPod(BOUND, { settleSeconds: { quiet: 1, most: 3 } });
        writeFileSync(join(pod.knotless, "steps", "0.sh"), "(while :; do echo tick; sleep 0.1; done) &\necho hi\n");
        const started = Date.now();
        const run = await pod.helper(["run", "0"]);
        const took = Date.now() - started;
        assert.equal(readFrames(run.stdout).end.at(-1), "exit 0");
        // The printer never stops, so without the limit the step would never end; the limit (3 s) counts polls, each
        // a few spawns, which CI's busy cores have stretched to 8.7 s: the bound tells an end from a hold, not speed.
        assert.ok(took < 20_000, `the step's end took ${took} ms`);
        assert.equal((await pod.helper(["kill", "0", "1"])).stdout.toString(), "stopped 0\n");
      });

      // busybox sh runs its own dd applet whatever PATH says, so only the other shells can be slowed this way.
      const slowable = flavour === "busybox" ? "busybox sh runs applets without PATH" : false;
      it(
        "copiers slowed by a loaded node still count every dropped byte before the step ends",
        { skip: slowable },
        async () => {
          // Each dd takes 0.5 s: reaching the bound takes several, longer than the quiet window, yet each one moves the file.
          const slow = mkdtempSync(join(tmpdir(), "slow-dd-"));
          scratch.push(slow);
          writeFileSync(join(slow, "dd"), '#!/bin/sh\nPATH=${PATH#/slow:}\nsleep 0.5\nexec dd "$@"\n', { mode: 0o755 });
          const pod = newPod(BOUND, {
            settleSeconds: { quiet: 1.5, most: 30 },
            extraBinds: ["--ro-bind", slow, "/slow", "--setenv", "PATH", "/slow:/usr/local/bin:/usr/bin:/bin"],
          });
          writeFileSync(join(pod.knotless, "steps", "0.sh"), PRINT_32000);
          const frames = readFrames((await pod.helper(["run", "0"])).stdout);
          assert.equal(frames.stdout.length, BOUND);
          assert.deepEqual(frames.end, ["dropped stdout 31000", "exit 0"]);
        },
      );
    },
  );
}
