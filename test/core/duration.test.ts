import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatDuration, parseDuration } from "../../src/core/duration.js";

describe("parseDuration", () => {
  it("reads seconds, minutes, hours and milliseconds", () => {
    assert.equal(parseDuration("90s"), 90_000);
    assert.equal(parseDuration("10m"), 600_000);
    assert.equal(parseDuration("1h"), 3_600_000);
    assert.equal(parseDuration("500ms"), 500);
  });

  it("adds up compound durations such as 1h30m", () => {
    assert.equal(parseDuration("1h30m"), 5_400_000);
    assert.equal(parseDuration("2m5s"), 125_000);
  });

  it("refuses numbers without a unit, unknown units, zero, negatives and trailing junk", () => {
    for (const bad of ["", "90", "5d", "0s", "-5s", "10m!", "1.5h", "s", "1h 30m"])
      assert.equal(parseDuration(bad), undefined, bad);
  });
});

describe("formatDuration", () => {
  it("formats short and long durations for people", () => {
    assert.equal(formatDuration(850), "850ms");
    assert.equal(formatDuration(12_340), "12.3s");
    assert.equal(formatDuration(245_000), "4m05s");
    assert.equal(formatDuration(3_720_000), "1h02m");
  });
});
