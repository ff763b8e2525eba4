import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { coversQuantity, parseQuantity } from "../../src/core/quantity.js";

describe("quantities", () => {
  it("read in cores and bytes, decimal and binary suffixes alike", () => {
    assert.equal(parseQuantity("500m"), 0.5);
    assert.equal(parseQuantity("1.5"), 1.5);
    assert.equal(parseQuantity("512Mi"), 512 * 1024 * 1024);
    assert.equal(parseQuantity("2G"), 2e9);
    assert.equal(parseQuantity("1e3"), 1000);
    assert.equal(parseQuantity("-1"), undefined);
    assert.equal(parseQuantity("1 Gi"), undefined);
  });

  it("cover a request when at least as large, across units, to the millicore", () => {
    assert.equal(coversQuantity("1", "500m"), true);
    assert.equal(coversQuantity("500m", "0.5"), true);
    assert.equal(coversQuantity("499m", "500m"), false);
    assert.equal(coversQuantity("1Gi", "1024Mi"), true);
    assert.equal(coversQuantity("1G", "1Gi"), false);
    assert.equal(coversQuantity("lots", "1"), false);
  });
});
