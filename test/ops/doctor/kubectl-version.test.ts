import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { describeSkew, judgeKubectlVersion } from "../../../src/ops/doctor/kubectl-version.js";
import { parseVersionOutput } from "../../../src/cluster/kubectl/version-output.js";

const v = (minor: number) => ({ gitVersion: `v1.${minor}.0`, major: 1, minor });

describe("the kubectl version check", () => {
  it("reads client and server versions, a suffixed minor included", () => {
    const out = JSON.stringify({
      clientVersion: { major: "1", minor: "33", gitVersion: "v1.33.1" },
      serverVersion: { major: "1", minor: "28+", gitVersion: "v1.28.9+k3s1" },
    });
    assert.deepEqual(parseVersionOutput(out), {
      client: { gitVersion: "v1.33.1", major: 1, minor: 33 },
      server: { gitVersion: "v1.28.9+k3s1", major: 1, minor: 28 },
    });
    assert.deepEqual(parseVersionOutput(JSON.stringify({ clientVersion: { gitVersion: "v1.30.2" } })), {
      client: { gitVersion: "v1.30.2", major: 1, minor: 30 },
    });
    assert.deepEqual(parseVersionOutput("oops"), {});
  });

  it("supports 1.27 to 1.33, saying which are tested end to end, and warns outside", () => {
    assert.deepEqual(judgeKubectlVersion(v(33)), { status: "ok", note: "supported: tested end to end" });
    assert.equal(judgeKubectlVersion(v(30)).note, "supported: tested end to end");
    assert.match(judgeKubectlVersion(v(27)).note, /^supported: its flags are tested/);
    assert.equal(judgeKubectlVersion(v(26)).status, "warn");
    assert.equal(judgeKubectlVersion(v(34)).status, "warn");
  });

  it("names a client-server skew beyond kubectl's one minor", () => {
    assert.equal(describeSkew(v(33), v(32)), undefined);
    assert.match(describeSkew(v(33), v(30)) ?? "", /3 minors apart/);
  });
});
