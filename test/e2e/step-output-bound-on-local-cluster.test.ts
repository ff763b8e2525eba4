// A step printing past --max-log-bytes on the local cluster: its output file in the pod stays at the bound, the run succeeds.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { makeWorkspace, readResult, runCli } from "../support/run-cli.js";

const skip =
  spawnSync("podman", ["image", "exists", "docker.io/library/busybox:1.36"], { stdio: "ignore" }).status === 0
    ? false
    : "podman with the local busybox image is not available";

describe("the in-pod step output bound on the local cluster", { skip, concurrency: 1, timeout: 300_000 }, () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await startLocalCluster({});
  });
  after(async () => {
    await cluster?.stop();
  });

  for (const transport of ["api", "kubectl"] as const) {
    it(`a step printing 1 MiB past a 64 KiB bound runs on; the file in the pod stays at 64 KiB and the log says what was dropped (${transport})`, async () => {
      const print = "dd if=/dev/zero bs=1024 count=1024 2>/dev/null | tr '\\\\000' x; echo; echo done > /work/printed";
      const measure = "stat -c %s /knotless/run/0/out > /outputs/size.txt; cat /work/printed > /outputs/printed.txt";
      const ws = makeWorkspace(`print\t${print}\nmeasure\t${measure}\n`);
      const cli = await runCli([
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--transport",
        transport,
        "--max-log-bytes",
        "64Ki",
      ]);
      assert.equal(cli.code, 0, cli.stderr);
      const result = readResult(ws.out);
      assert.deepEqual(
        result.steps.map((s) => s.status),
        ["success", "success"],
      );
      // All 1,048,577 bytes printed: 65,536 kept, the 983,041 the pod dropped counted with what the host left out.
      assert.deepEqual(result.logs, { limitBytes: 65536, keptBytes: 65536, droppedBytes: 983041 });
      assert.equal(readFileSync(join(ws.out, "outputs", "size.txt"), "utf8"), "65536\n");
      assert.equal(
        readFileSync(join(ws.out, "outputs", "printed.txt"), "utf8"),
        "done\n",
        "the step did not run to its end",
      );
      const log = readFileSync(join(ws.out, "run.log"), "utf8");
      assert.match(
        log,
        /step 1 \(print\)'s stdout passed the pod's output bound of 65536 bytes \(--max-log-bytes\): 983041 more bytes were dropped in the pod/,
      );
    });
  }
});
