// The one way messages name a step: as the run's log numbers steps, with the name.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatEvent } from "../../src/events/format-event.js";
import { describeStep } from "../../src/workflow/step-label.js";

describe("describeStep", () => {
  it("numbers the first step (index 0) 1 and gives its name, as the log's line for that step does", () => {
    assert.equal(describeStep(0, "build"), "step 1 (build)");
    const logLine = formatEvent({
      kind: "step-start",
      index: 0,
      name: "build",
      command: "make",
      time: "2026-01-01T00:00:00.000Z",
    });
    assert.match(logLine ?? "", /\bstep 1: build$/);
  });

  it("says only the number when the name is not known", () => {
    assert.equal(describeStep(2), "step 3");
    assert.equal(describeStep(2, ""), "step 3");
  });
});
