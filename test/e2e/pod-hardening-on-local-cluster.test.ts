// End to end: the run container's default hardening on the local cluster (podman honours the securityContext): a
// package install, chown and useradd work on Debian and busybox; a setuid-root binary does not make a step root.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason } from "../support/local-cluster-e2e.js";
import { makeWorkspace, readResult, runCli } from "../support/run-cli.js";

const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const DEBIAN_IMAGE = "docker.io/library/debian:bookworm-slim";
const BUSYBOX_IMAGE = "docker.io/library/busybox:1.36";

function findSkipReason(): string | false {
  const podman = findPodmanSkipReason();
  if (podman) return podman;
  return spawnSync("podman", ["image", "exists", DEBIAN_IMAGE], { stdio: "ignore" }).status === 0 ? false : `the local ${DEBIAN_IMAGE} image is not there`;
}

/** A workflow file on `image` with these steps (YAML lines). */
function writeWorkflow(dir: string, name: string, image: string, steps: readonly string[]): string {
  const file = join(dir, `${name}.yml`);
  writeFileSync(file, ["engine: kubernetes", `image: ${image}`, "steps:", ...steps, ""].join("\n"));
  return file;
}

describe("the run container's default hardening on the local cluster", { skip: findSkipReason(), timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await startLocalCluster({ namespace: "ci" });
  });
  after(async () => {
    await cluster?.stop();
  });

  it("lets a step install a package, chown and add a user, and keeps a setuid-root binary from making it root", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const debian = writeWorkflow(dir, "debian", DEBIAN_IMAGE, [
      "  - name: status",
      "    command: grep -E '^(NoNewPrivs|CapEff|Seccomp):' /proc/self/status",
      "  - name: install",
      "    command: |",
      "      mkdir -p /tmp/p/DEBIAN /tmp/p/usr/share/hello-ci",
      "      printf 'Package: hello-ci\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: ci <ci@example.org>\\nDescription: test\\n' > /tmp/p/DEBIAN/control",
      "      echo hello > /tmp/p/usr/share/hello-ci/greeting",
      "      dpkg-deb --build /tmp/p /tmp/hello-ci.deb",
      "      dpkg -i /tmp/hello-ci.deb && dpkg -r hello-ci",
      "      apt-get install -y /tmp/hello-ci.deb",
      "      echo \"installed: $(cat /usr/share/hello-ci/greeting)\"",
      "  - name: users",
      "    command: |",
      "      useradd -m ciuser",
      "      touch /tmp/owned && chown ciuser:ciuser /tmp/owned",
      "      echo \"owner: $(stat -c %U /tmp/owned) home: $(stat -c %U /home/ciuser)\"",
      "  - name: escalation",
      "    command: |",
      "      cp /usr/bin/id /tmp/id && chmod u+s /tmp/id",
      "      echo \"setuid-root id as nobody: euid $(setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/id -u)\"",
    ]);
    const busybox = writeWorkflow(dir, "busybox", BUSYBOX_IMAGE, [
      "  - name: chown",
      "    command: |",
      "      grep -E '^NoNewPrivs:' /proc/self/status",
      "      touch /tmp/owned && chown 65534:65534 /tmp/owned && echo \"busybox owner: $(stat -c %u:%g /tmp/owned)\"",
    ]);
    const run = (workflow: string, runId: string) =>
      runCli(["run", "--workflow", workflow, "--checkout", ws.checkout, "--out", join(dir, runId), "--run-id", runId, "--kubeconfig", cluster.kubeconfigPath, "--kubectl", KUBECTL], { timeoutMs: 400_000 });
    const [a, b] = await Promise.all([run(debian, "hardened-debian"), run(busybox, "hardened-busybox")]);

    assert.equal(a.code, 0, `${a.stdout}\n${a.stderr}`);
    assert.deepEqual(readResult(join(dir, "hardened-debian")).steps.map((step) => [step.name, step.status]), [["status", "success"], ["install", "success"], ["users", "success"], ["escalation", "success"]]);
    // no_new_privs, the runtime's seccomp filter, and CHOWN DAC_OVERRIDE FOWNER KILL SETGID SETUID (bits 0 1 3 5 6 7).
    assert.match(a.stdout, /^NoNewPrivs:\s+1$/m);
    assert.match(a.stdout, /^Seccomp:\s+2$/m);
    assert.match(a.stdout, /^CapEff:\s+00000000000000eb$/m);
    assert.match(a.stdout, /^installed: hello$/m);
    assert.match(a.stdout, /^owner: ciuser home: ciuser$/m);
    assert.match(a.stdout, /^setuid-root id as nobody: euid 65534$/m, "the setuid bit did not make the step root");

    assert.equal(b.code, 0, `${b.stdout}\n${b.stderr}`);
    assert.match(b.stdout, /^NoNewPrivs:\s+1$/m);
    assert.match(b.stdout, /^busybox owner: 65534:65534$/m);
    await assertNothingLeft(cluster);
  });
});
