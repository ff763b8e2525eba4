// The pod's dead man's switch for real, in bwrap sandboxes sharing /knotless: runner execs beat on a clock, PID 1 stops once they stop.
import assert from "node:assert/strict";
import { once } from "node:events";
import { rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, describe, it } from "node:test";
import { buildKeepAliveScript, describeIdleStop, IDLE_EXIT_CODE } from "../../src/pod/keep-alive.js";
import { createPod, FLAVOUR_TITLES, FLAVOURS, HAS_BWRAP, type Pod } from "./helper-pod.js";

const BEAT_SECONDS = 1;

/** Seconds since the heartbeat file was last written (Infinity when there is none). */
function heartbeatAge(pod: Pod): number {
  try {
    return (Date.now() - statSync(join(pod.knotless, "heartbeat")).mtimeMs) / 1000;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** Makes the heartbeat look a day old, so only a beat after this moment makes it fresh again. */
function ageHeartbeat(pod: Pod): void {
  const file = join(pod.knotless, "heartbeat");
  writeFileSync(file, "");
  utimesSync(file, new Date(Date.now() - 86_400_000), new Date(Date.now() - 86_400_000));
}

for (const flavour of FLAVOURS) {
  describe(
    `the idle guard under ${FLAVOUR_TITLES[flavour]}`,
    // Each test makes its own sandbox and most of its time is its steps' sleeps: the tests run at once.
    { skip: HAS_BWRAP ? false : "bwrap is not installed", concurrency: true },
    () => {
      const scratch: string[] = [];
      const newPod = (): Pod => {
        const pod = createPod(flavour, { helper: { beatSeconds: BEAT_SECONDS } });
        scratch.push(pod.root);
        return pod;
      };
      after(() => {
        for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
      });

      /** Runs step 0 through `run` (stdin held, as the runner does), and while it runs ages the heartbeat and checks that a beat freshened it. */
      async function assertBeatsWhileStepRuns(pod: Pod): Promise<void> {
        const run = pod.startHelper(["run", "0"], { holdStdin: true });
        run.stdout!.resume();
        const closed = once(run, "close");
        try {
          await sleep(1200);
          ageHeartbeat(pod);
          await sleep(2500);
          assert.ok(
            heartbeatAge(pod) < 2.5,
            `no beat while the step ran: the heartbeat is ${heartbeatAge(pod).toFixed(1)} s old`,
          );
        } finally {
          await closed;
          run.stdin!.destroy();
        }
        ageHeartbeat(pod);
        await sleep(2500);
        assert.ok(heartbeatAge(pod) > 3600, "a beat came after the exec had ended");
      }

      it("a helper call beats on a clock while its step prints steadily, and stops beating when it ends", async () => {
        const pod = newPod();
        writeFileSync(
          join(pod.knotless, "steps", "0.sh"),
          "i=0\nwhile [ $i -lt 50 ]; do echo tick $i; sleep 0.1; i=$((i + 1)); done\n",
        );
        await assertBeatsWhileStepRuns(pod);
      });

      it("a helper call beats on a clock while its step is silent", async () => {
        const pod = newPod();
        writeFileSync(join(pod.knotless, "steps", "0.sh"), "sleep 5\n");
        await assertBeatsWhileStepRuns(pod);
      });

      it("a follow stops beating once its runner lets go of its stdin, though the step and the follow go on", async () => {
        const pod = newPod();
        writeFileSync(join(pod.knotless, "steps", "0.sh"), "sleep 6\n");
        const run = pod.startHelper(["run", "0"], { holdStdin: true });
        run.stdout!.resume();
        const closed = once(run, "close");
        try {
          await sleep(1000);
          run.stdin!.end(); // what the cluster does to a cut exec's stdin, or a dead runner's
          await sleep(300);
          ageHeartbeat(pod);
          await sleep(2500);
          assert.equal(run.exitCode, null, "the follow went on");
          assert.ok(
            heartbeatAge(pod) > 3600,
            `a beat came after the runner let go: the heartbeat is ${heartbeatAge(pod).toFixed(1)} s old`,
          );
        } finally {
          await closed;
        }
        assert.equal(run.exitCode, 0, "the follow still reports the step's end");
      });

      it("PID 1 exits 75 saying why once no exec has beaten for the idle timeout, and not while one beats", async () => {
        const pod = newPod();
        writeFileSync(join(pod.knotless, "guard.sh"), buildKeepAliveScript(3));
        writeFileSync(join(pod.knotless, "steps", "0.sh"), "sleep 6\n");
        const started = Date.now();
        const guard = pod.startScript("/knotless/guard.sh");
        let stderr = "";
        guard.stderr!.setEncoding("utf8").on("data", (text: string) => (stderr += text));
        const guardExit = once(guard, "close");
        await sleep(500);
        const run = pod.startHelper(["run", "0"], { holdStdin: true });
        run.stdout!.resume();
        await once(run, "close");
        run.stdin!.destroy();
        const execEnded = Date.now();
        assert.equal(guard.exitCode, null, `the guard stopped while an exec beat: ${stderr}`);
        const [code] = (await guardExit) as [number | null];
        assert.equal(code, IDLE_EXIT_CODE, stderr);
        const idle = (Date.now() - execEnded) / 1000;
        // 3 s of idleness, then up to a poll (1 s) and the heartbeat's whole-second mtime (1 s), and some slack.
        assert.ok(
          idle >= 2 && idle < 7,
          `stopped ${idle.toFixed(1)} s after the last exec ended (${(execEnded - started) / 1000} s after start)`,
        );
        assert.ok(stderr.includes(describeIdleStop(3)), stderr);
      });
    },
  );
}
