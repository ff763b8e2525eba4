// The remote-command channel protocol: sub-protocol choice, frames and the exit Status kubectl reads.

import assert from "node:assert/strict";
import { test } from "node:test";
import { buildExitStatus, encodeFrame, selectProtocol } from "../../local-cluster/exec-protocol.js";

test("v5 is preferred over v4 and SPDY-era protocols are not accepted", () => {
  assert.equal(selectProtocol(["v4.channel.k8s.io", "v5.channel.k8s.io"]), "v5.channel.k8s.io");
  assert.equal(selectProtocol(["v4.channel.k8s.io"]), "v4.channel.k8s.io");
  assert.equal(selectProtocol(["channel.k8s.io", "base64.channel.k8s.io"]), undefined);
});

test("a frame is the channel byte followed by the payload", () => {
  assert.deepEqual([...encodeFrame(1, "hi")], [1, 104, 105]);
});

test("a non-zero exit becomes NonZeroExitCode with the code as an ExitCode cause", () => {
  assert.deepEqual(buildExitStatus(0, ["true"]), { metadata: {}, status: "Success" });
  const s = buildExitStatus(7, ["sh", "-c", "exit 7"]) as any;
  assert.equal(s.reason, "NonZeroExitCode");
  assert.deepEqual(s.details.causes, [{ reason: "ExitCode", message: "7" }]);
});
