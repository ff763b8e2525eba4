// scripts/stress-faults.sh on stand-in test files: what its tally counts besides failing tests, and its resume.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { promisify } from "node:util";
import { REPO_ROOT } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const execFileAsync = promisify(execFile);

/** Stand-in test files, each what a real run of the fault tests can do without a failing test line. */
const FILES: Record<string, string> = {
  // What a suite does when its preflight (podman) fails under load: it skips, and no test runs.
  "skipped.test.mjs": `import { describe, it } from "node:test";
describe("needs podman", { skip: "podman is not available" }, () => { it("runs a pod", () => {}); });`,
  // A run whose result says success although its step failed, and a test that did not look.
  "false-success.test.mjs": `import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
it("runs a workflow", () => {
  const out = join(process.env.TMPDIR, "out");
  mkdirSync(out, { recursive: true });
  const step = { name: "a", status: "failed", exitCode: 1 };
  writeFileSync(join(out, "result.json"), JSON.stringify({ runId: "r1", status: "success", error: null, errorReason: null, exitCode: 0, steps: [step] }));
});`,
  // The test runner killed (out of memory, say) in the middle of the file.
  "killed.test.mjs": `import { it } from "node:test";
it("is killed with its runner", () => { process.kill(process.ppid, "SIGKILL"); return new Promise(() => {}); });`,
  "passes.test.mjs": `import { it } from "node:test";
it("passes", () => {});`,
};

async function runStress(dir: string, files: string[], runs: number): Promise<string> {
  // Without NODE_TEST_CONTEXT, which would make the script's node --test report to this runner instead of in TAP.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const { stdout } = await execFileAsync(
    "bash",
    [join(REPO_ROOT, "scripts", "stress-faults.sh"), "-n", String(runs), "-b", "0", ...files],
    { env: { ...env, STRESS_LOG_DIR: join(dir, "logs") }, encoding: "utf8", timeout: 240_000 },
  );
  return stdout;
}

describe("scripts/stress-faults.sh", { timeout: 300_000 }, () => {
  it("reports a file skipped for another reason than the pattern, a success result with a failed step, and a file cut short", async () => {
    const dir = makeTestTempDir("stress-faults-");
    const files = Object.entries(FILES).map(([name, text]) => (writeFileSync(join(dir, name), text), join(dir, name)));
    const out = await runStress(dir, files, 1);
    assert.match(out, /^0\/0 {2}skipped: needs podman \(skipped 1 times\)$/m, out);
    assert.match(out, /^NOT COUNTED AS A TEST: skipped-1\.tap: no test ran$/m, out);
    assert.match(out, /^FALSE SUCCESSES/m, out);
    assert.match(
      readFileSync(join(dir, "logs", "false-success.txt"), "utf8"),
      /^false-success-1 r1 success with .*"failed"/,
    );
    assert.match(out, /^NOT COUNTED AS A TEST: killed-1\.tap: exit 137, its TAP output cut short$/m, out);
    assert.match(out, /^0\/1 {2}passes: passes$/m, out);
  });

  it("resumes in the same log dir: the runs that ended are tallied, not run again", async () => {
    const dir = makeTestTempDir("stress-faults-");
    const file = join(dir, "passes.test.mjs");
    writeFileSync(file, FILES["passes.test.mjs"]!);
    await runStress(dir, [file], 1);
    const out = await runStress(dir, [file], 2);
    const started = readFileSync(join(dir, "logs", "runs.txt"), "utf8").match(/^run \d+\/\d+/gm);
    assert.deepEqual(started, ["run 1/1", "run 2/2"]);
    assert.match(out, /^0\/2 {2}passes: passes$/m, out);
  });
});
