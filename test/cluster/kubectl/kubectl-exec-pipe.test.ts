// Tests the kubectl transport's exec when its output comes through a pipe (no room for the pooled socket): nothing is lost to a late reader.
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "node:test";
import { Kubectl } from "../../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../../src/cluster/kubectl/kubectl-cluster.js";
import { makeTestTempDir } from "../../support/temp-dir.js";

const BYTES = 40_000; // fits the pipe's buffer: the "kubectl" writes it all and exits before anyone reads

describe("the kubectl transport's exec through a pipe", () => {
  it("hands a reader that starts after the kubectl exited every byte it printed", async () => {
    const dir = makeTestTempDir("kubectl-exec-pipe-");
    const binary = join(dir, "kubectl");
    writeFileSync(binary, `#!/bin/sh\nhead -c ${BYTES} /dev/zero | tr '\\000' x\n`);
    chmodSync(binary, 0o755);
    // A temp dir too long for a unix socket's path: the exec falls back to a pipe.
    const longTmp = join(dir, "t".repeat(120));
    mkdirSync(longTmp);
    const previous = process.env.TMPDIR;
    process.env.TMPDIR = longTmp;
    try {
      const cluster = new KubectlCluster(new Kubectl({ binary, env: process.env }));
      const exec = await cluster.exec({
        namespace: "ci",
        pod: "p",
        container: "run",
        command: ["true"],
        stdin: { kind: "none" },
        reuseBuffers: true,
      });
      assert.match(exec.fallback ?? "", /through a pipe/);
      await sleep(300); // the reader comes late, as the download's does after making its directory: the "kubectl" has exited
      let read = 0;
      for await (const chunk of exec.stdout) read += (chunk as Buffer).length;
      assert.equal(read, BYTES);
      const end = await exec.ended;
      assert.ok(end.kind === "exit" && end.code === 0, JSON.stringify(end));
    } finally {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
    }
  });
});
