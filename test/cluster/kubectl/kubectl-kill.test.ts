// Tests that ending a kubectl call ends what it started: a `--kubectl` wrapper that does not exec kubectl.
import assert from "node:assert/strict";
import { chmodSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { Kubectl } from "../../../src/cluster/kubectl/kubectl.js";
import { makeTestTempDir } from "../../support/temp-dir.js";

/** A wrapper script that starts a long-lived "kubectl" (here `sleep`) as its child, sharing its stdout and stderr. */
function writeWrapper(): { path: string; pidFile: string } {
  const dir = makeTestTempDir("kubectl-kill-");
  const path = join(dir, "kubectl");
  const pidFile = join(dir, "pid");
  writeFileSync(path, `#!/bin/sh\necho $$ > ${pidFile}\nsleep 300\necho never\n`);
  chmodSync(path, 0o755);
  return { path, pidFile };
}

/** The wrapper's pid once it has written it; a busy machine may take seconds to start a shell, so it waits up to 20 s. */
async function readPid(pidFile: string): Promise<number> {
  for (let i = 0; i < 800; i += 1) {
    const text = (() => {
      try {
        return readFileSync(pidFile, "utf8").trim();
      } catch {
        return "";
      }
    })();
    if (text !== "") return Number(text);
    await sleep(25);
  }
  throw new Error("the wrapper never started");
}

/**
 * Whether a member of process group `pgid` is still running: /proc's processes in that group that are not zombies.
 * A killed member whose parent died is reaped by the machine's init, which may take seconds (a container's PID 1 can
 * be slow to), and kill(-pgid, 0) still succeeds on such a zombie; without /proc, that is all there is to ask.
 */
function groupRunning(pgid: number): boolean {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  return pids.some((pid) => {
    try {
      // After the command's ")": state, ppid, pgrp.
      const [state, , pgrp] = readFileSync(`/proc/${pid}/stat`, "utf8")
        .replace(/^.*\) /s, "")
        .split(" ");
      return Number(pgrp) === pgid && state !== "Z";
    } catch {
      return false; // gone meanwhile
    }
  });
}

/** Whether anything of the process group is still running, after letting its killed members die (up to 20 s: left alive, they would live 300 s). */
async function groupAlive(pid: number): Promise<boolean> {
  for (let i = 0; i < 400; i += 1) {
    if (!groupRunning(pid)) return false;
    await sleep(50);
  }
  return true;
}

/**
 * How long a call may take to end once it should have: 20 s, far below the wrapper's 300 s and far above what a busy
 * machine adds to a kill. Unref'd, so a call that ended leaves no timer keeping the test file alive (and one that did
 * not still holds the loop open through its child until this fires).
 */
const giveUp = (): Promise<void> => sleep(20_000, undefined, { ref: false });

describe("Kubectl's kill", () => {
  it("ends a wrapper script's own children too, so the call ends at once instead of when they do", async () => {
    const wrapper = writeWrapper();
    const call = new Kubectl({ binary: wrapper.path }).stream(["get", "job", "j", "--watch"]);
    call.stdout.resume();
    const pid = await readPid(wrapper.pidFile);
    call.kill();
    const ended = await Promise.race([call.exited.then(() => "ended"), giveUp().then(() => "still running")]);
    assert.equal(ended, "ended", "the call ended once killed, though the wrapper's child held its pipes");
    assert.equal(await groupAlive(pid), false, "nothing of the wrapper's process group is left");
  });

  it("ends the call when aborted through its signal", async () => {
    const wrapper = writeWrapper();
    const controller = new AbortController();
    const pending = new Kubectl({ binary: wrapper.path }).run(["get", "pods"], { signal: controller.signal });
    const pid = await readPid(wrapper.pidFile);
    controller.abort();
    const exit = await Promise.race([pending, giveUp().then(() => undefined)]);
    assert.ok(exit !== undefined, "the call ended once aborted");
    assert.notEqual(exit.exitCode, 0);
    assert.equal(await groupAlive(pid), false);
  });

  it("kills a call that outlives its timeoutMs, with all it started, and says it timed out", async () => {
    const wrapper = writeWrapper();
    const started = Date.now();
    const pending = new Kubectl({ binary: wrapper.path }).run(["get", "pods"], { timeoutMs: 300 });
    const pid = await readPid(wrapper.pidFile);
    const exit = await Promise.race([pending, giveUp().then(() => undefined)]);
    assert.ok(exit !== undefined, "the call ended at its timeout");
    assert.equal(exit.timedOut, true);
    assert.ok(Date.now() - started >= 300);
    assert.equal(await groupAlive(pid), false, "nothing of the wrapper's process group is left");
    const quick = await new Kubectl({ binary: "/bin/true" }).run(["version"], { timeoutMs: 5000 });
    assert.equal(quick.timedOut, undefined, "a call that ends in time is not timed out");
  });
});
