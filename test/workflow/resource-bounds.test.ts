import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkResourceBounds } from "../../src/workflow/resource-bounds.js";

describe("the hard bounds on cpu and memory", () => {
  it("accepts sane requests and refuses absurd ones, saying the bounds", () => {
    const table: Array<[kind: "cpu" | "memory", quantity: string, problem: string | undefined]> = [
      ["cpu", "500m", undefined],
      ["cpu", "1m", undefined],
      ["cpu", "1024", undefined],
      ["cpu", "96", undefined],
      ["cpu", "100000", "cpu 100000 is outside the bounds any run may ask for (from 1m to 1024 cores)"],
      ["cpu", "1025", "cpu 1025 is outside the bounds any run may ask for (from 1m to 1024 cores)"],
      ["cpu", "0", "cpu 0 is outside the bounds any run may ask for (from 1m to 1024 cores)"],
      ["cpu", "1e4", "cpu 1e4 is outside the bounds any run may ask for (from 1m to 1024 cores)"],
      ["memory", "512Mi", undefined],
      ["memory", "4Mi", undefined],
      ["memory", "64Ti", undefined],
      ["memory", "999Ei", "memory 999Ei is outside the bounds any run may ask for (from 4Mi to 64Ti)"],
      ["memory", "65Ti", "memory 65Ti is outside the bounds any run may ask for (from 4Mi to 64Ti)"],
      ["memory", "512", "memory 512 is outside the bounds any run may ask for (from 4Mi to 64Ti)"],
      ["memory", "lots", 'expected a memory quantity from 4Mi to 64Ti, found "lots"'],
    ];
    for (const [kind, quantity, problem] of table)
      assert.equal(checkResourceBounds(kind, quantity), problem, `${kind} ${quantity}`);
  });
});
