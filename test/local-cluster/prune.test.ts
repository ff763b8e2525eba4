// Pods left by a local cluster whose process was killed are pruned, with their volumes; live clusters' pods are not.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { PodmanClient } from "../../local-cluster/podman.js";
import { buildJobManifest, findContainerSkipReason, waitFor } from "./harness.js";
import { listKubectlBinaries, runKubectl } from "./kubectl-runner.js";

const CLI = fileURLToPath(new URL("../../local-cluster/cli.js", import.meta.url));
const skip = await findContainerSkipReason();

function runCli(args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout }));
  });
}

test("prune removes the pods and volumes of a cluster killed with SIGKILL", { skip }, async () => {
  const dir = await mkdtemp(join(tmpdir(), "local-cluster-prune-"));
  const podman = new PodmanClient();
  try {
    assert.equal((await runCli(["up", "--dir", dir, "--port", "0", "--admin-port", "0"])).code, 0);
    const state = JSON.parse(await readFile(join(dir, "state.json"), "utf8")) as { pid: number; instanceId: string };
    const kubectl = listKubectlBinaries().at(-1)!;
    const created = await runKubectl(kubectl.path, join(dir, "kubeconfig"), ["create", "-f", "-"], {
      stdin: buildJobManifest({ name: "orphan" }),
    });
    assert.equal(created.code, 0, created.stderr);
    const label = `io.knotless.local-cluster=${state.instanceId}`;
    await waitFor(
      "the orphan's podman pod",
      async () => ((await podman.listPods(label)).length > 0 ? true : undefined),
      60_000,
    );
    process.kill(state.pid, "SIGKILL");
    await waitFor("the daemon to die", () => {
      try {
        process.kill(state.pid, 0);
        return undefined;
      } catch {
        return true;
      }
    });
    // Another local cluster starting right now may prune it first, even between the look and the prune
    // (startLocalCluster prunes too): either way it goes, and a prune that removed nothing leaves it there.
    const pruned = await runCli(["prune"]);
    assert.equal(pruned.code, 0);
    assert.match(pruned.stdout, /removed lc-|^nothing to prune$/m);
    assert.deepEqual(await podman.listPods(label), []);
    assert.deepEqual(await podman.listVolumes(`lc-${state.instanceId}-`), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
