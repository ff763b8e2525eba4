// runExec: a collected exec keeps its stdout, and a command that prints past the bound is killed, not held in memory.
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { ClusterError } from "../../src/cluster/errors.js";
import type { ExecEnd, ExecSession } from "../../src/cluster/exec.js";
import { runExec } from "../../src/cluster/run-exec.js";

/** A session that writes `chunks` to stdout, then ends exit 0 unless killed first (then failed, as a transport does). */
function fakeCluster(chunks: readonly Buffer[]): {
  cluster: { exec: () => Promise<ExecSession> };
  killed: () => boolean;
} {
  let killed = false;
  const cluster = {
    exec: async (): Promise<ExecSession> => {
      const stdout = new PassThrough();
      let finish: (end: ExecEnd) => void = () => {};
      const ended = new Promise<ExecEnd>((resolve) => (finish = resolve));
      const session: ExecSession = {
        stdout,
        stdin: null,
        ended,
        kill: () => {
          killed = true;
          stdout.destroy();
          finish({
            kind: "failed",
            error: new ClusterError("cut-stream", "killed"),
            tags: "",
            stderr: "",
            how: "killed",
          });
        },
      };
      setImmediate(() => {
        for (const chunk of chunks) if (!killed) stdout.write(chunk);
        if (!killed) stdout.end(() => finish({ kind: "exit", code: 0, tags: "", stderr: "", how: "exit 0" }));
      });
      return session;
    },
  };
  return { cluster, killed: () => killed };
}

const REQUEST = { namespace: "ci", pod: "p", container: "run", command: ["true"] } as const;

describe("runExec", () => {
  it("collects the whole stdout of a command within the bound", async () => {
    const { cluster, killed } = fakeCluster([Buffer.from("upload done\n"), Buffer.from("step 0 exit 0\n")]);
    const { end, stdout } = await runExec(cluster, REQUEST, undefined, 64);
    assert.equal(end.kind, "exit");
    assert.equal(stdout, "upload done\nstep 0 exit 0\n");
    assert.equal(killed(), false);
  });

  it("kills a command that prints past the bound and ends failed, keeping none of it", async () => {
    const { cluster, killed } = fakeCluster(Array.from({ length: 10 }, () => Buffer.alloc(40, "x")));
    const { end, stdout } = await runExec(cluster, REQUEST, undefined, 64);
    assert.equal(killed(), true);
    assert.equal(end.kind, "failed");
    assert.match(end.kind === "failed" ? end.error.message : "", /printed more than 64 bytes/);
    assert.equal(stdout, "");
  });
});
