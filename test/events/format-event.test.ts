// Tests the human lines of run events and the shell quoting of displayed commands.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { formatCommand, formatEvent, quoteArg } from "../../src/events/format-event.js";
import type { RunEvent } from "../../src/events/run-events.js";
import { SAMPLE_EVENTS, listSampleEvents } from "../support/run-event-samples.js";

const time = "2026-11-29T10:00:00.000Z";

describe("quoteArg", () => {
  it("leaves arguments made only of shell-safe characters as they are", () => {
    for (const arg of ["get", "-o", "--output=name", "ns/name", "user@host:8443", "a,b", "50%", "x+y"])
      assert.equal(quoteArg(arg), arg);
  });

  it("single-quotes arguments with spaces, quotes, shell characters or nothing in them", () => {
    assert.equal(quoteArg("two words"), "'two words'");
    assert.equal(quoteArg(""), "''");
    assert.equal(quoteArg("$HOME"), "'$HOME'");
    assert.equal(quoteArg("it's"), `'it'\\''s'`);
    assert.equal(quoteArg("jsonpath={.status}"), "'jsonpath={.status}'");
  });
});

describe("formatCommand", () => {
  it("gives back the same arguments when the displayed command is run by sh", () => {
    const args = [
      "exec",
      "pod-1",
      "--",
      "sh",
      "-c",
      `echo "it's $HOME" && ls *; printf '%s\\n' a`,
      "",
      "tab\there",
      "new\nline",
      "ünï 🎉",
    ];
    const command = formatCommand("printf", ["%s\\0", ...args]);
    const shell = spawnSync("sh", ["-c", command], { encoding: "utf8" });
    assert.equal(shell.status, 0, shell.stderr);
    assert.deepEqual(shell.stdout.split("\0").slice(0, -1), args);
  });

  it("puts the binary first, separated by single spaces", () => {
    assert.equal(formatCommand("kubectl", ["get", "pods", "-l", "app=x y"]), "kubectl get pods -l 'app=x y'");
  });
});

describe("formatEvent", () => {
  it("has a human line for every event kind but the phase start and step output, which the sinks handle", () => {
    for (const event of listSampleEvents()) {
      const line = formatEvent(event);
      if (event.kind === "phase-start" || event.kind === "step-output") assert.equal(line, undefined, event.kind);
      else assert.ok(line !== undefined && line.trim() !== "", `no line for ${event.kind}`);
    }
  });

  it("says per cache whether it was an exact hit, a fallback hit with the key restored, a miss or a failure, with bytes and time", () => {
    const restore = SAMPLE_EVENTS["cache-restore"];
    assert.equal(formatEvent(restore), "cache deps-3f2a: fallback hit, restored deps-19c0 (1.3 MB in 900ms)");
    assert.equal(
      formatEvent({ ...restore, status: "exact", restoredKey: "deps-3f2a" }),
      "cache deps-3f2a: exact hit, restored 1.3 MB in 900ms",
    );
    assert.equal(formatEvent({ ...restore, status: "miss", bytes: 0 }), "cache deps-3f2a: miss");
    assert.equal(
      formatEvent({ ...restore, status: "failed", reason: "the stored entry is corrupt" }),
      "warning: cache deps-3f2a: restore failed after 900ms, the run goes on without it: the stored entry is corrupt",
    );
    const save = SAMPLE_EVENTS["cache-save"];
    assert.equal(formatEvent(save), "cache deps-3f2a: saved 1.3 MB in 1.1s");
    assert.match(formatEvent({ ...save, status: "exists" })!, /another run saved this key first/);
    assert.equal(
      formatEvent({ ...save, status: "skipped", reason: "exact hit" }),
      "cache deps-3f2a: not saved: exact hit",
    );
    assert.match(
      formatEvent({ ...save, status: "failed", reason: "refused" })!,
      /^warning: cache deps-3f2a: save failed after 1\.1s, nothing stored: refused$/,
    );
  });

  it("says per artifact what was collected, and makes an empty one a warning, or an error when it is required", () => {
    const artifact = SAMPLE_EVENTS.artifact;
    assert.equal(formatEvent(artifact), "artifact dist: collected 3 files, 4.1 kB in 300ms");
    assert.equal(
      formatEvent({ ...artifact, status: "empty", files: 0, reason: "no file in the pod matches dist/**" }),
      "warning: artifact dist: no file in the pod matches dist/**",
    );
    assert.equal(
      formatEvent({ ...artifact, status: "empty", files: 0, required: true, reason: "no file" }),
      "error: artifact dist: no file",
    );
    assert.equal(
      formatEvent({ ...artifact, status: "skipped", files: 0, reason: "when: failure, and the run succeeded" }),
      "artifact dist: skipped: when: failure, and the run succeeded",
    );
  });

  it("names the run, its Job with its namespace, the image and the number of steps at the start", () => {
    assert.equal(
      formatEvent(SAMPLE_EVENTS["run-start"]),
      "run 42: Job ci/knotless-run-42, image busybox:1.36, 2 step(s)",
    );
  });

  it("leaves the namespace out of the start line when the kubeconfig context decides it", () => {
    const { namespace: _, ...event } = SAMPLE_EVENTS["run-start"];
    assert.equal(formatEvent(event), "run 42: Job knotless-run-42, image busybox:1.36, 2 step(s)");
  });

  it("shows a kubectl call as a quoted shell command line", () => {
    assert.equal(
      formatEvent({ time, kind: "kubectl", args: ["exec", "pod-1", "--", "sh", "-c", "echo hi"] }),
      "$ kubectl exec pod-1 -- sh -c 'echo hi'",
    );
  });

  it("shows an API request as its method, path with query, status and duration, or says no answer came", () => {
    assert.equal(
      formatEvent(SAMPLE_EVENTS["api-call"]),
      "api POST /apis/batch/v1/namespaces/ci/jobs?fieldValidation=Strict → 201 (12ms)",
    );
    assert.equal(
      formatEvent({ ...SAMPLE_EVENTS["api-call"], method: "GET", path: "/version", status: null, durationMs: 1500 }),
      "api GET /version → no answer (1.5s)",
    );
  });

  it("reports a phase's end with its outcome, duration and detail", () => {
    assert.equal(formatEvent(SAMPLE_EVENTS["phase-end"]), "ok create (120ms): job.batch/knotless-run-42 in ci");
    assert.equal(
      formatEvent({
        ...SAMPLE_EVENTS["phase-end"],
        phase: "download",
        ok: false,
        durationMs: 65_000,
        detail: "tar failed",
      }),
      "FAILED download (1m05s): tar failed",
    );
  });

  it("reports pod progress with the phase, reason and time waited, preferring the event to the message", () => {
    assert.equal(
      formatEvent(SAMPLE_EVENTS["pod-progress"]),
      "waiting for the pod: Pending ContainerCreating after 700ms — Pulling image busybox:1.36",
    );
    const { event: _, ...withoutEvent } = SAMPLE_EVENTS["pod-progress"];
    assert.equal(formatEvent(withoutEvent), "waiting for the pod: Pending ContainerCreating after 700ms — creating");
    assert.equal(
      formatEvent({ time, kind: "pod-progress", elapsedMs: 2500, phase: "Pending" }),
      "waiting for the pod: Pending after 2.5s",
    );
  });

  it("names the pod and its node when it is ready, or says its node when the node is not known", () => {
    assert.equal(formatEvent(SAMPLE_EVENTS["pod-ready"]), "pod knotless-run-42-abcde running on node-1 after 1.7s");
    assert.equal(
      formatEvent({ ...SAMPLE_EVENTS["pod-ready"], node: "" }),
      "pod knotless-run-42-abcde running on its node after 1.7s",
    );
  });

  it("numbers steps from one at their start", () => {
    assert.equal(
      formatEvent({ time, kind: "step-start", index: 2, name: "lint", command: "npm run lint" }),
      "▶ step 3: lint",
    );
  });

  it("shows a step's end with its status, exit code and duration", () => {
    assert.equal(formatEvent(SAMPLE_EVENTS["step-end"]), "✔ step 1: build success (exit 0, 1.5s)");
    assert.equal(
      formatEvent({
        time,
        kind: "step-end",
        index: 1,
        name: "test",
        status: "failed",
        exitCode: 3,
        durationMs: 250,
        timedOut: false,
      }),
      "✘ step 2: test failed (exit 3, 250ms)",
    );
  });

  it("says a step timed out and shows no exit code when it has none", () => {
    assert.equal(
      formatEvent({
        time,
        kind: "step-end",
        index: 0,
        name: "slow",
        status: "timeout",
        exitCode: null,
        durationMs: 600_000,
        timedOut: true,
      }),
      "✘ step 1: slow timeout (10m00s, timed out)",
    );
    assert.equal(
      formatEvent({
        time,
        kind: "step-end",
        index: 0,
        name: "slow",
        status: "cancelled",
        exitCode: null,
        durationMs: 900,
        timedOut: false,
      }),
      "✘ step 1: slow cancelled (900ms)",
    );
  });

  it("prefixes warnings and errors but not information notices", () => {
    assert.equal(formatEvent(SAMPLE_EVENTS.notice), "warning: refused output ../x: outside the workspace");
    assert.equal(
      formatEvent({ time, kind: "notice", level: "info", message: "download read through a pipe" }),
      "download read through a pipe",
    );
    assert.equal(
      formatEvent({ time, kind: "notice", level: "error", message: "internal error: boom" }),
      "error: internal error: boom",
    );
  });

  it("ends the run with its status, duration and error when there is one", () => {
    assert.equal(formatEvent(SAMPLE_EVENTS["run-end"]), "run success in 6.0s");
    const failed: RunEvent = {
      time,
      kind: "run-end",
      status: "failed",
      exitCode: -1,
      error: "pod lost",
      durationMs: 3_723_000,
    };
    assert.equal(formatEvent(failed), "run failed in 1h02m: pod lost");
  });
});
