// scripts/live-proof.sh: its usage and prerequisites, and every failure path with a stand-in runner (--local end to end is
// test/e2e/live-proof-on-local-cluster.test.ts: it needs containers).
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  assertNoLeaks,
  calls,
  makeMachine,
  readReport,
  run,
  runStandIn,
  STANDIN_RUNNER,
  statusOf,
  type Machine,
} from "../support/live-proof-machine.js";
import { makePathWithout } from "../support/run-script.js";

describe("scripts/live-proof.sh", { concurrency: 1 }, () => {
  it("prints its help with every option and the exit codes", async () => {
    const result = await run(makeMachine(), ["--help"]);
    assert.equal(result.code, 0, result.stderr);
    for (const flag of [
      "--kubeconfig",
      "--context",
      "--local",
      "--report",
      "--namespace",
      "--name",
      "--duration",
      "--image",
      "--kubectl",
      "--sample-every",
      "--after-wait",
      "--runner",
    ]) {
      assert.ok(result.stdout.includes(flag), `--help names ${flag}`);
    }
    assert.match(result.stdout, /--workflow/, "it says the run is to move to the example workflow file");
    assert.match(result.stdout, /Exit codes:/);
  });

  describe("bad usage exits 2 before anything runs", () => {
    const cases: ReadonlyArray<{ name: string; args: (m: Machine) => string[]; message: RegExp }> = [
      { name: "no --report", args: (m) => ["--kubeconfig", m.adminKubeconfig], message: /--report DIR is required/ },
      {
        name: "neither --kubeconfig nor --local",
        args: (m) => ["--report", m.report],
        message: /--kubeconfig FILE \(the admin kubeconfig\) or --local is required/,
      },
      {
        name: "both --kubeconfig and --local",
        args: (m) => ["--local", "--kubeconfig", m.adminKubeconfig, "--report", m.report],
        message: /--local and --kubeconfig exclude each other/,
      },
      {
        name: "an unknown option",
        args: (m) => ["--kubeconfig", m.adminKubeconfig, "--report", m.report, "--fast"],
        message: /unknown option "--fast"/,
      },
      {
        name: "a malformed --after-wait",
        args: (m) => ["--kubeconfig", m.adminKubeconfig, "--report", m.report, "--after-wait", "2h"],
        message: /--after-wait expects whole seconds such as 90, 90s or 3m \(got "2h"\)/,
      },
      {
        name: "a namespace that is not a DNS label",
        args: (m) => ["--kubeconfig", m.adminKubeconfig, "--report", m.report, "--namespace", "CI"],
        message: /--namespace expects a DNS-1123 label/,
      },
      {
        name: "a report directory that holds a proof already",
        args: (m) => {
          mkdirSync(join(m.report, "run"), { recursive: true });
          return ["--kubeconfig", m.adminKubeconfig, "--report", m.report, "--runner", STANDIN_RUNNER];
        },
        message: /already holds a live proof; choose a new directory/,
      },
    ];
    for (const c of cases) {
      it(`with ${c.name}`, async () => {
        const machine = makeMachine();
        const result = await run(machine, c.args(machine));
        assert.equal(result.code, 2, result.stderr);
        assert.match(result.stderr, c.message);
        assert.deepEqual(calls(machine), []);
      });
    }
  });

  describe("a missing prerequisite exits 3, saying which", () => {
    const cases: ReadonlyArray<{
      name: string;
      args: (m: Machine) => string[];
      env?: (m: Machine) => Record<string, string>;
      message: RegExp;
    }> = [
      {
        name: "without the admin kubeconfig",
        args: (m) => ["--kubeconfig", join(m.root, "absent"), "--report", m.report, "--runner", STANDIN_RUNNER],
        message: /cannot read the admin kubeconfig .*absent \(scripts\/tenant-kubeconfig\.sh writes one\)/,
      },
      {
        name: "without the kubectl named by --kubectl",
        args: (m) => ["--kubeconfig", m.adminKubeconfig, "--report", m.report, "--kubectl", join(m.root, "no-kubectl")],
        message: /--kubectl .*no-kubectl is not an executable/,
      },
      {
        name: "without the runner named by --runner",
        args: (m) => ["--kubeconfig", m.adminKubeconfig, "--report", m.report, "--runner", join(m.root, "no-runner")],
        message: /--runner .*no-runner is not an executable/,
      },
      {
        name: "without node",
        args: (m) => ["--kubeconfig", m.adminKubeconfig, "--report", m.report],
        env: (m) => ({
          PATH: makePathWithout(join(m.root, "bin-without-node"), ["node", "nodejs", "npx", "npm", "corepack"]),
        }),
        message: /node is not on PATH: install Node\.js 20 or later/,
      },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const machine = makeMachine();
        const result = await run(machine, c.args(machine), c.env?.(machine));
        assert.equal(result.code, 3, result.stderr);
        assert.match(result.stderr, c.message);
        assert.deepEqual(calls(machine), []);
        assertNoLeaks(machine, result);
      });
    }
  });

  describe("with a stand-in runner (doctor and credentials scripted) and a cluster nothing answers for", () => {
    it("stops at a doctor that exits 3, mints nothing, and writes a failing report with doctor's answer", async () => {
      const machine = makeMachine();
      const result = await runStandIn(machine, { STANDIN_DOCTOR_EXIT: "3" });
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /FAILED at doctor: doctor found a problem \(exit 3/);
      assert.deepEqual(calls(machine), ["doctor"]);
      const report = readReport(machine);
      assert.equal(report.verdict, "fail");
      assert.equal(report.failure?.stage, "doctor");
      assert.equal(statusOf(report, "doctor"), "fail");
      assert.equal(statusOf(report, "the scoped credential is minted"), "not-run");
      assert.equal(statusOf(report, "the scoped credential is revoked"), "not-run");
      assert.deepEqual(
        (report.doctor.report as { checks: unknown[] }).checks.length,
        2,
        "doctor's JSON is passed through",
      );
      assert.equal(report.nodes.before, null, "kubectl could not count the nodes");
      assert.match(
        readFileSync(join(machine.report, "live-proof.md"), "utf8"),
        /^# Live proof: FAIL\n\nStopped at \*\*doctor\*\*/,
      );
      assertNoLeaks(machine, result);
    });

    it("revokes the scoped credential when the run fails, and the report names the run", async () => {
      const machine = makeMachine();
      const result = await runStandIn(machine, { STANDIN_RUN: "fail" });
      assert.equal(result.code, 1, result.stderr);
      assert.deepEqual(calls(machine), ["doctor", "credentials", "run", "credentials --revoke"]);
      assert.match(result.stderr, /run \(stand-in\): cluster unreachable/);
      assert.match(result.stderr, /FAILED at run: the run exited 3/);
      const report = readReport(machine);
      assert.equal(report.failure?.stage, "run");
      assert.equal(statusOf(report, "the scoped credential is minted"), "pass");
      assert.equal(statusOf(report, "the example run succeeds"), "fail");
      assert.equal(statusOf(report, "the outputs came back"), "fail");
      assert.equal(statusOf(report, "the scoped credential is revoked"), "pass");
      assert.match(
        report.credential.output ?? "",
        /with token \*\*\*/,
        "the minted token the command printed is masked in the report",
      );
      assertNoLeaks(machine, result);
    });

    it("refuses a scoped kubeconfig that is not mode 0600, and still revokes", async () => {
      const machine = makeMachine();
      const result = await runStandIn(machine, { STANDIN_CREDENTIALS_MODE: "644" });
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        /FAILED at credentials: the scoped kubeconfig's mode is -rw-r--r--, expected -rw------- \(0600\)/,
      );
      assert.deepEqual(calls(machine), ["doctor", "credentials", "credentials --revoke"]);
      assert.equal(statusOf(readReport(machine), "the scoped credential is minted"), "fail");
      assertNoLeaks(machine, result);
    });

    it("revokes after a credentials command that fails, showing its error", async () => {
      const machine = makeMachine();
      const result = await runStandIn(machine, { STANDIN_CREDENTIALS_EXIT: "3" });
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        /\| error: serviceaccounts is forbidden in default\n[\s\S]*FAILED at credentials: credentials exited 3/,
      );
      assert.deepEqual(calls(machine), ["doctor", "credentials", "credentials --revoke"]);
      assertNoLeaks(machine, result);
    });

    it("fails when the revoke fails, saying how to revoke by hand", async () => {
      const machine = makeMachine();
      const result = await runStandIn(machine, { STANDIN_RUN: "fail", STANDIN_REVOKE_EXIT: "3" });
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        /the scoped credential may still be valid: revoke it with knotless-runner-k8s credentials .* --name knotless-live-proof --out FILE --revoke/,
      );
      assert.equal(statusOf(readReport(machine), "the scoped credential is revoked"), "fail");
      assertNoLeaks(machine, result);
    });

    it("on SIGTERM during the run stops the run, revokes, and writes the report", async () => {
      const machine = makeMachine();
      const result = await runStandIn(
        machine,
        { STANDIN_RUN: "hang" },
        { signalWhen: { when: /nodes while the run runs/, signal: "SIGTERM" } },
      );
      assert.equal(result.code, 143, result.stderr);
      assert.match(result.stderr, /TERM: stopping; the run deletes its Job and the scoped credential is revoked/);
      const recorded = readFileSync(machine.calls, "utf8");
      assert.match(recorded, /run got TERM\n[\s\S]*--revoke/, "the run was stopped before the revoke");
      const report = readReport(machine);
      assert.equal(report.interruptedBy, "TERM");
      assert.equal(report.verdict, "fail");
      assert.equal(statusOf(report, "the scoped credential is revoked"), "pass");
      assertNoLeaks(machine, result);
    });
  });
});
