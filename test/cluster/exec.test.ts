// What an exec's stderr carries, whatever the transport: the pod's status tags apart from the rest.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { splitStatusTags } from "../../src/cluster/exec.js";

describe("splitStatusTags", () => {
  it("takes the pod's status-tag lines apart from kubectl's and the command's own", () => {
    const stderr =
      "tar: a warning\nknotless-outputs-entries 3\ncommand terminated with exit code 2\nknotless-cache-saved tar=0";
    assert.deepEqual(splitStatusTags(stderr), {
      tags: "knotless-outputs-entries 3\nknotless-cache-saved tar=0\n",
      rest: "tar: a warning\ncommand terminated with exit code 2\n",
    });
  });
});
