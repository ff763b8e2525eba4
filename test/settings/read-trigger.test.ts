import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readTrigger, type TriggerNames } from "../../src/settings/read-trigger.js";
import { readInputErrorMessage } from "../support/input-error.js";

const FLAGS: TriggerNames = {
  of: (key) => `--${key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`,
  refAlternative: "or use --branch / --tag",
};
const FIELDS: TriggerNames = { of: (key) => `trigger.${key}` };

describe("readTrigger", () => {
  it("is undefined without an event, and refuses a trigger's field given without one", () => {
    assert.equal(readTrigger({}, FLAGS), undefined);
    assert.equal(
      readInputErrorMessage(() => readTrigger({ branch: "main" }, FLAGS)),
      "--branch describes a trigger: give --event too (push, pull_request, manual, ...)",
    );
    assert.equal(
      readInputErrorMessage(() => readTrigger({ changedFiles: ["a"] }, FLAGS)),
      "--changed-files describes a trigger: give --event too (push, pull_request, manual, ...)",
    );
  });

  it("reads every field given, in the order the result records them", () => {
    const trigger = readTrigger(
      {
        pipelineId: "p1",
        changedFiles: ["src/a"],
        sha: "abc",
        branch: "main",
        event: "pull_request",
        prAction: "closed",
      },
      FLAGS,
    );
    assert.deepEqual(trigger, {
      event: "pull_request",
      branch: "main",
      sha: "abc",
      changedFiles: ["src/a"],
      prAction: "closed",
      pipelineId: "p1",
    });
    assert.deepEqual(Object.keys(trigger!), ["event", "branch", "sha", "changedFiles", "prAction", "pipelineId"]);
  });

  it("refuses a malformed event or ref, naming the field as its caller does", () => {
    assert.match(
      readInputErrorMessage(() => readTrigger({ event: "Push!" }, FIELDS)),
      /^trigger\.event expects an event name/,
    );
    assert.equal(
      readInputErrorMessage(() => readTrigger({ event: "push", ref: "main" }, FIELDS)),
      'trigger.ref expects a full ref such as refs/heads/main or refs/tags/v1.0, got "main"',
    );
    assert.equal(
      readInputErrorMessage(() => readTrigger({ event: "push", ref: "main" }, FLAGS)),
      '--ref expects a full ref such as refs/heads/main or refs/tags/v1.0, got "main" (or use --branch / --tag)',
    );
  });

  it("refuses two refs, an empty field or one with control characters", () => {
    assert.match(
      readInputErrorMessage(() => readTrigger({ event: "push", ref: "refs/heads/a", tag: "v1" }, FLAGS)),
      /not both/,
    );
    assert.match(
      readInputErrorMessage(() => readTrigger({ event: "push", branch: "a", tag: "v1" }, FLAGS)),
      /one ref/,
    );
    assert.equal(
      readInputErrorMessage(() => readTrigger({ event: "push", sha: "" }, FIELDS)),
      "trigger.sha expects a non-empty value without control characters",
    );
    assert.equal(
      readInputErrorMessage(() => readTrigger({ event: "push", repo: "a\nb" }, FIELDS)),
      "trigger.repo expects a non-empty value without control characters",
    );
  });

  it("refuses an unknown pull request action, and a pull request's field with another event", () => {
    assert.match(
      readInputErrorMessage(() => readTrigger({ event: "pull_request", prAction: "edited" }, FLAGS)),
      /^--pr-action expects one of opened, reopened, synchronize, closed, merged, got "edited"$/,
    );
    assert.equal(
      readInputErrorMessage(() => readTrigger({ event: "push", prSourceSha: "abc" }, FLAGS)),
      "--pr-source-sha goes with --event pull_request",
    );
  });
});
