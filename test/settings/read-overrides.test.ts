import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FLAG_NAMES, SUBMISSION_NAMES } from "../../src/settings/hold-overrides.js";
import { readOverrides } from "../../src/settings/read-overrides.js";
import { readInputErrorMessage } from "../support/input-error.js";

describe("readOverrides", () => {
  it("reads the image, quantities and durations into the run's overrides", () => {
    assert.deepEqual(
      readOverrides(
        { image: "busybox:1.36", cpu: "500m", memory: "1Gi", timeout: "1h", stepTimeout: "90s" },
        FLAG_NAMES,
      ),
      { image: "busybox:1.36", cpu: "500m", memory: "1Gi", timeoutMs: 3_600_000, stepTimeoutMs: 90_000 },
    );
    assert.deepEqual(readOverrides({}, SUBMISSION_NAMES), {});
  });

  it("refuses absurd cpu and memory overrides, saying the bounds and naming the override as its caller does", () => {
    assert.equal(
      readInputErrorMessage(() => readOverrides({ cpu: "100000" }, SUBMISSION_NAMES)),
      "overrides.cpu: cpu 100000 is outside the bounds any run may ask for (from 1m to 1024 cores)",
    );
    assert.equal(
      readInputErrorMessage(() => readOverrides({ memory: "999Ei" }, SUBMISSION_NAMES)),
      "overrides.memory: memory 999Ei is outside the bounds any run may ask for (from 4Mi to 64Ti)",
    );
    assert.equal(
      readInputErrorMessage(() => readOverrides({ cpu: "100000" }, FLAG_NAMES)),
      "--cpu: cpu 100000 is outside the bounds any run may ask for (from 1m to 1024 cores)",
    );
  });

  it("refuses a bad image, quantity or duration, naming the override as its caller does", () => {
    assert.match(
      readInputErrorMessage(() => readOverrides({ image: "bad image" }, FLAG_NAMES)),
      /^--image expects an image/,
    );
    assert.match(
      readInputErrorMessage(() => readOverrides({ image: "bad image" }, SUBMISSION_NAMES)),
      /^overrides\.image expects an image reference such as busybox:1\.36, got "bad image"$/,
    );
    assert.match(
      readInputErrorMessage(() => readOverrides({ memory: "1 GB" }, FLAG_NAMES)),
      /^--memory expects a Kubernetes quantity such as 500m, 1 or 512Mi, got "1 GB"$/,
    );
    assert.match(
      readInputErrorMessage(() => readOverrides({ timeout: "forever" }, FLAG_NAMES)),
      /^--timeout expects a duration/,
    );
    assert.match(
      readInputErrorMessage(() => readOverrides({ stepTimeout: "5" }, SUBMISSION_NAMES)),
      /^overrides\.stepTimeout expects a duration/,
    );
  });
});
