// Tests the podman client's event stream: a stream that ends is restarted, and its caller told events may be lost.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { PodmanClient } from "../../local-cluster/podman.js";

describe("the podman client's event stream", () => {
  it("restarts a stream that ended and calls onRestart, so its caller can read the state it may have missed", async () => {
    // `true` as podman: every `podman events` ends at once, as a crashed stream would.
    const podman = new PodmanClient({ binary: "true" });
    let restarts = 0;
    const stop = podman.watchEvents(
      "io.knotless.local-cluster=test",
      () => undefined,
      () => restarts++,
    );
    try {
      const deadline = Date.now() + 5000;
      while (restarts === 0 && Date.now() < deadline) await sleep(50);
      assert.ok(restarts >= 1, "onRestart was not called after the stream ended");
    } finally {
      stop();
    }
  });
});
