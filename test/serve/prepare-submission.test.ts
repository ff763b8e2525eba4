import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InputError } from "../../src/errors.js";
import { prepareSubmission, type RunDefaults } from "../../src/serve/prepare-submission.js";

const DEFAULTS: RunDefaults = { target: { namespace: "ci" } as RunDefaults["target"], podTimeoutMs: 60_000, maxOutputBytes: 1024, maxLogBytes: 1024 };
const WORKFLOW = { name: "wf.yml", text: "clone: {skip: true}\nsteps: [{name: a, command: b}]\n" };

describe("a submission's overrides", () => {
  it("refuses absurd cpu and memory overrides, saying the bounds", async () => {
    const table: Array<[overrides: { cpu?: string; memory?: string }, message: RegExp]> = [
      [{ cpu: "100000" }, /^overrides\.cpu: cpu 100000 is outside the bounds any run may ask for \(from 1m to 1024 cores\)$/],
      [{ memory: "999Ei" }, /^overrides\.memory: memory 999Ei is outside the bounds any run may ask for \(from 4Mi to 64Ti\)$/],
    ];
    for (const [overrides, message] of table) {
      await assert.rejects(prepareSubmission({ workflow: WORKFLOW, overrides }, "r1", "/nonexistent-state", DEFAULTS), (error: unknown) => {
        assert.ok(error instanceof InputError);
        assert.match(error.message, message);
        return true;
      });
    }
  });
});

describe("a submission's settings", () => {
  it("carry the service's --pod-idle-timeout into the run's settings", async () => {
    const prepared = await prepareSubmission({ workflow: WORKFLOW }, "r2", "/nonexistent-state", { ...DEFAULTS, podIdleTimeoutMs: 20_000 });
    assert.equal(prepared.kind, "run");
    assert.equal(prepared.kind === "run" ? prepared.settings.podIdleTimeoutMs : undefined, 20_000);
  });
});
