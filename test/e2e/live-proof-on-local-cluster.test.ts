// scripts/live-proof.sh --local end to end: the real example on a local cluster of podman containers, its report checked.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  assertNoLeaks,
  calls,
  containersMissing,
  makeMachine,
  missingCommands,
  readReport,
  run,
  STANDIN_RUNNER,
  statusOf,
} from "../support/live-proof-machine.js";

describe("scripts/live-proof.sh", { concurrency: 1 }, () => {
  describe("--local, end to end on the local cluster", { skip: containersMissing(), timeout: 600_000 }, () => {
    it("with a stand-in doctor, runs the real example and reports every duration, node count and check", async () => {
      const machine = makeMachine();
      // The local cluster over TLS refuses a made-up token: the stand-in hands credentials to the real command.
      const result = await run(
        machine,
        ["--local", "--report", machine.report, "--runner", STANDIN_RUNNER],
        { STANDIN_RUN: "real", STANDIN_CREDENTIALS: "real" },
        { timeoutMs: 300_000 },
      );
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(calls(machine), ["doctor", "credentials", "run", "credentials --revoke"]);
      const report = readReport(machine);
      assert.equal(report.verdict, "pass", JSON.stringify(report.checks, null, 2));
      assert.ok(report.checks.every((c) => c.status === "pass"));
      assert.equal(report.run.status, "success");
      assert.ok(report.run.resultPath && existsSync(report.run.resultPath), "the result's path is in the report");
      assert.equal(report.run.resultPath, join(machine.report, "run", "result.json"));
      const runResult = JSON.parse(readFileSync(report.run.resultPath, "utf8")) as {
        workflow?: { name: string; imageFrom: string };
      };
      assert.deepEqual(
        [runResult.workflow?.name, runResult.workflow?.imageFrom],
        ["hello.yml", "workflow"],
        "the run is the example workflow file",
      );
      for (const phase of ["podWaitMs", "uploadMs", "downloadMs", "teardownMs"] as const)
        assert.equal(typeof report.durations[phase], "number", phase);
      assert.deepEqual(
        report.durations.steps.map((s) => s.name),
        ["date", "hostname", "files", "outputs"],
      );
      assert.deepEqual(
        [report.nodes.before, report.nodes.during.max, report.nodes.after.count],
        [1, 1, 1],
        "the local cluster has one node throughout",
      );
      assert.ok(report.nodes.during.samples.length >= 1);
      assert.deepEqual(
        report.outputs.received.map((o) => o.path),
        ["ran.txt"],
      );
      const markdown = readFileSync(join(machine.report, "live-proof.md"), "utf8");
      assert.match(markdown, /^# Live proof: PASS/);
      assert.match(markdown, /\| pod wait \(Job created to pod running\) \| \d+/);
      assert.match(markdown, /\| step 4: outputs \(success, exit 0\) \|/);
      assert.match(markdown, /\| before the run \| 1 \|/);
      assertNoLeaks(machine, result);
    });

    it("with the real doctor and credentials commands, passes every check", { skip: missingCommands() }, async () => {
      const machine = makeMachine();
      const result = await run(machine, ["--local", "--report", machine.report], {}, { timeoutMs: 300_000 });
      assert.equal(result.code, 0, result.stderr);
      const report = readReport(machine);
      assert.equal(report.verdict, "pass", JSON.stringify(report.checks, null, 2));
      assert.equal(report.doctor.exitCode, 0);
      assert.equal(report.credential.revokeExitCode, 0);
      assert.equal(statusOf(report, "no secret in the report directory"), "pass");
      assert.deepEqual(readdirSync(machine.tmp), []);
    });
  });
});
