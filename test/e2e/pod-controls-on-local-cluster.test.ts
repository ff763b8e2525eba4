// End to end: pod controls on the local cluster. The default hardening (podman honours the securityContext): a package
// install, chown and useradd work on Debian and busybox, a setuid-root binary does not make a step root. The runner
// configuration's limits: a workflow over one is refused before any cluster call, or clamped and said so. Its pod keys:
// pull secrets reach the pod (a missing one fails the pull, naming it), a node selector no node matches fails fast,
// on the static node and, with NotTriggerScaleUp, in the scale-from-zero mode. The run's disruption budget: there
// while the run is (an eviction of its pod refused with 429), gone after, none when turned off, and gc removes an orphaned one.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason, waitUntil } from "../support/local-cluster-e2e.js";
import { makeWorkspace, readResult, runCli } from "../support/run-cli.js";

const execFileAsync = promisify(execFile);
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const DEBIAN_IMAGE = "docker.io/library/debian:bookworm-slim";
const BUSYBOX_IMAGE = "docker.io/library/busybox:1.36";

function findSkipReason(): string | false {
  const podman = findPodmanSkipReason();
  if (podman) return podman;
  return spawnSync("podman", ["image", "exists", DEBIAN_IMAGE], { stdio: "ignore" }).status === 0
    ? false
    : `the local ${DEBIAN_IMAGE} image is not there`;
}

/** A workflow file on `image` with these steps (YAML lines). */
function writeWorkflow(dir: string, name: string, image: string, steps: readonly string[]): string {
  const file = join(dir, `${name}.yml`);
  writeFileSync(file, ["engine: kubernetes", `image: ${image}`, "steps:", ...steps, ""].join("\n"));
  return file;
}

describe("pod controls on the local cluster", { skip: findSkipReason(), timeout: 600_000 }, () => {
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
      '      echo "installed: $(cat /usr/share/hello-ci/greeting)"',
      "  - name: users",
      "    command: |",
      "      useradd -m ciuser",
      "      touch /tmp/owned && chown ciuser:ciuser /tmp/owned",
      '      echo "owner: $(stat -c %U /tmp/owned) home: $(stat -c %U /home/ciuser)"',
      "  - name: escalation",
      "    command: |",
      "      cp /usr/bin/id /tmp/id && chmod u+s /tmp/id",
      '      echo "setuid-root id as nobody: euid $(setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/id -u)"',
    ]);
    const busybox = writeWorkflow(dir, "busybox", BUSYBOX_IMAGE, [
      "  - name: chown",
      "    command: |",
      "      grep -E '^NoNewPrivs:' /proc/self/status",
      '      touch /tmp/owned && chown 65534:65534 /tmp/owned && echo "busybox owner: $(stat -c %u:%g /tmp/owned)"',
    ]);
    const run = (workflow: string, runId: string) =>
      runCli(
        [
          "run",
          "--workflow",
          workflow,
          "--checkout",
          ws.checkout,
          "--out",
          join(dir, runId),
          "--run-id",
          runId,
          "--kubeconfig",
          cluster.kubeconfigPath,
          "--kubectl",
          KUBECTL,
        ],
        { timeoutMs: 400_000 },
      );
    const [a, b] = await Promise.all([run(debian, "hardened-debian"), run(busybox, "hardened-busybox")]);

    assert.equal(a.code, 0, `${a.stdout}\n${a.stderr}`);
    assert.deepEqual(
      readResult(join(dir, "hardened-debian")).steps.map((step) => [step.name, step.status]),
      [
        ["status", "success"],
        ["install", "success"],
        ["users", "success"],
        ["escalation", "success"],
      ],
    );
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

  it("refuses a workflow over a limit with exit 2 and no cluster call, and runs a clamped one, saying so in its log and result.json, with pod.ephemeralStorage", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const refuse = join(dir, "refuse.yml");
    writeFileSync(refuse, "limits: {maxCpu: 1, maxMemory: 256Mi}\n");
    const clamp = join(dir, "clamp.yml");
    writeFileSync(
      clamp,
      "limits: {maxCpu: 1, maxMemory: 256Mi, maxTimeout: 5m, onExceed: clamp}\npod: {ephemeralStorage: {request: 1Gi, limit: 2Gi}}\n",
    );
    const workflow = join(dir, "big.yml");
    writeFileSync(
      workflow,
      [
        "engine: kubernetes",
        `image: ${BUSYBOX_IMAGE}`,
        "timeout: 2h",
        "resources: {cpu: 4, memory: 1Gi}",
        "steps:",
        "  - name: memory",
        '    command: echo "memory.max $(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"',
        "",
      ].join("\n"),
    );
    const args = (runId: string, config: string, extra: string[] = []) => [
      "run",
      "--workflow",
      workflow,
      "--checkout",
      ws.checkout,
      "--out",
      join(dir, runId),
      "--run-id",
      runId,
      "--kubeconfig",
      cluster.kubeconfigPath,
      "--kubectl",
      KUBECTL,
      "--config",
      config,
      ...extra,
    ];

    const requestsBefore = cluster.requests().length;
    const refused = await runCli(args("limits-refused", refuse), { timeoutMs: 60_000 });
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(
      refused.stderr,
      /big\.yml:4:18: resources\.cpu: 4 is over limits\.maxCpu 1 in --config \S+refuse\.yml/,
    );
    assert.match(refused.stderr, /big\.yml:4:29: resources\.memory: 1Gi is over limits\.maxMemory 256Mi/);
    assert.equal(cluster.requests().length, requestsBefore, "no request reached the cluster");
    assert.deepEqual(cluster.objects("jobs.batch"), []);

    const dry = await runCli(args("limits-dry", clamp, ["--dry-run"]), { timeoutMs: 60_000 });
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(
      dry.stdout,
      /^# {3}limit: \S*big\.yml:4:18: warning: resources\.cpu: 4 is over limits\.maxCpu 1 in --config \S+clamp\.yml: clamped to 1 \(onExceed: clamp\)$/m,
    );
    assert.match(
      dry.stdout,
      /^# {3}limit: \S*big\.yml:3:10: warning: timeout: 2h00m is over limits\.maxTimeout 5m00s/m,
    );
    assert.match(dry.stdout, /^# {3}resources: cpu 1, memory 256Mi; run timeout 5m/m);
    assert.match(dry.stdout, /^# {3}ephemeral storage: request 1Gi, limit 2Gi/m);

    const clamped = await runCli(args("limits-clamped", clamp), { timeoutMs: 400_000 });
    assert.equal(clamped.code, 0, `${clamped.stdout}\n${clamped.stderr}`);
    assert.match(
      clamped.stderr,
      /warning: resources\.memory: 1Gi is over limits\.maxMemory 256Mi in --config \S+clamp\.yml: clamped to 256Mi/,
    );
    const log = readFileSync(join(dir, "limits-clamped", "run.log"), "utf8");
    assert.match(
      log,
      /resources\.memory: 1Gi is over limits\.maxMemory 256Mi in --config \S+clamp\.yml: clamped to 256Mi/,
      log,
    );
    assert.match(clamped.stdout, /^memory\.max 268435456$/m, "the pod ran with the clamped memory limit");
    const result = JSON.parse(readFileSync(join(dir, "limits-clamped", "result.json"), "utf8")) as {
      workflow: { clamped: Array<{ path: string; value: string; limit: string; setting: string; at: string }> };
    };
    assert.deepEqual(
      result.workflow.clamped.map(({ path, value, limit, setting }) => ({ path, value, limit, setting })),
      [
        { path: "resources.cpu", value: "4", limit: "1", setting: "limits.maxCpu" },
        { path: "resources.memory", value: "1Gi", limit: "256Mi", setting: "limits.maxMemory" },
        { path: "timeout", value: "2h00m", limit: "5m00s", setting: "limits.maxTimeout" },
      ],
    );
    assert.match(result.workflow.clamped[0]!.at, /big\.yml:4:18$/);
    const created = cluster
      .objectHistory()
      .changes.find(
        (change) =>
          change.resource.startsWith("jobs") &&
          change.type === "ADDED" &&
          change.object.metadata.name.includes("limits-clamped"),
      );
    assert.deepEqual(created?.object.spec.template.spec.containers[0].resources, {
      requests: { cpu: "1", memory: "256Mi", "ephemeral-storage": "1Gi" },
      limits: { memory: "256Mi", "ephemeral-storage": "2Gi" },
    });
    await assertNothingLeft(cluster);
  });

  it("puts the operator's pod keys on the pod, fails the pull naming a missing pull Secret, and runs once the Secret is there", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const config = join(dir, "pull.yml");
    writeFileSync(
      config,
      "pod:\n  imagePullSecrets: [registry-credentials]\n  labels: {team: platform}\n  annotations: {example.com/owner: ci}\n  tolerations: [{key: dedicated, operator: Equal, value: ci, effect: NoSchedule}]\n",
    );
    const workflow = writeWorkflow(dir, "hello", BUSYBOX_IMAGE, ["  - name: hello", "    command: echo hello"]);
    const args = (runId: string) => [
      "run",
      "--workflow",
      workflow,
      "--checkout",
      ws.checkout,
      "--out",
      join(dir, runId),
      "--run-id",
      runId,
      "--kubeconfig",
      cluster.kubeconfigPath,
      "--kubectl",
      KUBECTL,
      "--config",
      config,
    ];

    const missing = await runCli(args("pull-missing"), { timeoutMs: 120_000 });
    assert.equal(missing.code, 3, `${missing.stdout}\n${missing.stderr}`);
    assert.equal(readResult(join(dir, "pull-missing")).errorReason, "image-pull");
    assert.match(missing.stderr, /image pull secret registry-credentials was not found in namespace ci/);
    await assertNothingLeft(cluster);

    // Not spawnSync: the cluster answers from this process.
    const secret = join(dir, "secret.json");
    writeFileSync(
      secret,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "registry-credentials" },
        type: "kubernetes.io/dockerconfigjson",
        data: { ".dockerconfigjson": Buffer.from("{}").toString("base64") },
      }),
    );
    await execFileAsync(KUBECTL, ["--kubeconfig", cluster.kubeconfigPath, "--namespace", "ci", "create", "-f", secret]);
    const ran = await runCli(args("pull-present"), { timeoutMs: 120_000 });
    assert.equal(ran.code, 0, `${ran.stdout}\n${ran.stderr}`);
    const created = cluster
      .objectHistory()
      .changes.find(
        (change) =>
          change.resource === "pods" && change.type === "ADDED" && change.object.metadata.name.includes("pull-present"),
      );
    assert.deepEqual(created?.object.spec.imagePullSecrets, [{ name: "registry-credentials" }]);
    assert.deepEqual(created?.object.spec.tolerations, [
      { key: "dedicated", operator: "Equal", value: "ci", effect: "NoSchedule" },
    ]);
    assert.equal(created?.object.metadata.labels?.team, "platform");
    assert.equal(created?.object.metadata.annotations?.["example.com/owner"], "ci");
    await assertNothingLeft(cluster);
  });

  it("guards each run's pod with a PodDisruptionBudget from right after the Job's create to teardown (api and kubectl), makes none with pod.disruptionBudget: false, and gc removes an orphaned one", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const off = join(dir, "no-budget.yml");
    writeFileSync(off, "pod:\n  disruptionBudget: false\n");
    const workflow = writeWorkflow(dir, "nap", BUSYBOX_IMAGE, ["  - name: nap", "    command: sleep 3"]);
    const args = (runId: string, extra: string[]) => [
      "run",
      "--workflow",
      workflow,
      "--checkout",
      ws.checkout,
      "--out",
      join(dir, runId),
      "--run-id",
      runId,
      "--kubeconfig",
      cluster.kubeconfigPath,
      "--kubectl",
      KUBECTL,
      ...extra,
    ];
    const budgets = () => cluster.objects("poddisruptionbudgets.policy", "ci");
    const runs = [
      runCli(args("pdb-api", ["--transport", "api"]), { timeoutMs: 300_000 }),
      runCli(args("pdb-kubectl", ["--transport", "kubectl"]), { timeoutMs: 300_000 }),
      runCli(args("pdb-off", ["--config", off]), { timeoutMs: 300_000 }),
    ];
    // While the steps run, each guarded pod has its budget, and the unguarded one none.
    await waitUntil(
      "the three pods running",
      () =>
        ["pdb-api", "pdb-kubectl", "pdb-off"].every((id) =>
          cluster
            .objects("pods", "ci")
            .some((pod) => pod.metadata.name.startsWith(`knotless-run-${id}-`) && pod.status?.phase === "Running"),
        ),
      120_000,
    );
    assert.deepEqual(
      budgets()
        .map((budget) => budget.metadata.name)
        .sort(),
      ["knotless-run-pdb-api", "knotless-run-pdb-kubectl"],
    );
    // What a node drain does to each pod: the Eviction API, refused for a guarded run (the drain waits and retries).
    const guarded = cluster.objects("pods", "ci").find((pod) => pod.metadata.name.startsWith("knotless-run-pdb-api-"))!
      .metadata.name;
    const eviction = join(dir, "eviction.json");
    writeFileSync(
      eviction,
      JSON.stringify({ apiVersion: "policy/v1", kind: "Eviction", metadata: { name: guarded, namespace: "ci" } }),
    );
    const evicted = await execFileAsync(KUBECTL, [
      "--kubeconfig",
      cluster.kubeconfigPath,
      "create",
      "--raw",
      `/api/v1/namespaces/ci/pods/${guarded}/eviction`,
      "-f",
      eviction,
    ]).then(
      () => "evicted",
      (error: { stderr?: string }) => error.stderr ?? String(error),
    );
    assert.match(evicted, /TooManyRequests|Cannot evict pod as it would violate the pod's disruption budget/);
    for (const result of await Promise.all(runs)) assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const changes = cluster.objectHistory().changes;
    for (const runId of ["pdb-api", "pdb-kubectl"]) {
      const name = `knotless-run-${runId}`;
      const at = (resource: string, type: string) =>
        changes.findIndex(
          (change) =>
            change.resource.startsWith(resource) && change.type === type && change.object.metadata.name === name,
        );
      const job = changes[at("jobs", "ADDED")]!.object;
      const budget = changes[at("poddisruptionbudgets", "ADDED")]!.object;
      assert.deepEqual(budget.spec, {
        maxUnavailable: 0,
        selector: {
          matchLabels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s", "knotless.dev/run-id": runId },
        },
      });
      assert.deepEqual(budget.metadata.ownerReferences, [
        { apiVersion: "batch/v1", kind: "Job", name, uid: job.metadata.uid },
      ]);
      const podAdded = changes.findIndex(
        (change) =>
          change.resource === "pods" && change.type === "ADDED" && change.object.metadata.name.startsWith(`${name}-`),
      );
      assert.ok(
        at("jobs", "ADDED") < at("poddisruptionbudgets", "ADDED") &&
          at("poddisruptionbudgets", "ADDED") < at("poddisruptionbudgets", "DELETED"),
        `${runId}: created after the Job, deleted at the end`,
      );
      assert.ok(
        podAdded >= 0 && at("jobs", "DELETED") < at("poddisruptionbudgets", "DELETED"),
        `${runId}: deleted after the Job`,
      );
      assert.match(
        readFileSync(join(dir, runId, "run.log"), "utf8"),
        /PodDisruptionBudget knotless-run-\S+ \(maxUnavailable 0\) guards the pod against drains/,
      );
    }
    assert.ok(
      !changes.some(
        (change) =>
          change.resource.startsWith("poddisruptionbudgets") && change.object.metadata.name === "knotless-run-pdb-off",
      ),
      "no budget with pod.disruptionBudget: false",
    );
    assert.deepEqual(budgets(), []);
    await assertNothingLeft(cluster);

    // An orphan: a budget of ours whose Job is gone (one that went without the garbage collector). gc removes it.
    const orphan = join(dir, "orphan.json");
    writeFileSync(
      orphan,
      JSON.stringify({
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: {
          name: "knotless-run-gone",
          labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s", "knotless.dev/run-id": "gone" },
        },
        spec: { maxUnavailable: 0, selector: { matchLabels: { "knotless.dev/run-id": "gone" } } },
      }),
    );
    await execFileAsync(KUBECTL, ["--kubeconfig", cluster.kubeconfigPath, "--namespace", "ci", "create", "-f", orphan]);
    for (const via of [
      ["--transport", "api"],
      ["--transport", "kubectl", "--kubectl", KUBECTL],
    ]) {
      const gc = await runCli(["gc", "--kubeconfig", cluster.kubeconfigPath, ...via]);
      assert.equal(gc.code, 0, `${gc.stdout}\n${gc.stderr}`);
      if (via[1] === "api")
        assert.match(gc.stdout, /^removed\s+PodDisruptionBudget knotless-run-gone: its Job is gone \(orphaned\)$/m);
      else assert.doesNotMatch(gc.stdout, /PodDisruptionBudget/, "nothing more to remove");
    }
    assert.deepEqual(budgets(), []);
  });

  it("fails fast with exit 3 and the scheduler's reason, naming the selector, when no node matches pod.nodeSelector", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const config = join(dir, "gpu-config.yml");
    writeFileSync(config, "pod:\n  nodeSelector: {pool: gpu}\n");
    const workflow = writeWorkflow(dir, "gpu", BUSYBOX_IMAGE, ["  - name: hello", "    command: echo hello"]);
    const started = Date.now();
    const run = await runCli(
      [
        "run",
        "--workflow",
        workflow,
        "--checkout",
        ws.checkout,
        "--out",
        join(dir, "no-gpu"),
        "--run-id",
        "no-gpu",
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        KUBECTL,
        "--config",
        config,
      ],
      { timeoutMs: 120_000 },
    );
    assert.equal(run.code, 3, `${run.stdout}\n${run.stderr}`);
    assert.ok(Date.now() - started < 60_000, "well before the 15-minute pod timeout");
    assert.equal(readResult(join(dir, "no-gpu")).errorReason, "pod-config");
    assert.match(
      run.stderr,
      /no node matches its node selector pool=gpu, and no autoscaler added one in \d+s: Unschedulable: 0\/1 nodes are available: 1 node\(s\) didn't match Pod's node affinity\/selector/,
    );
    await assertNothingLeft(cluster);
  });

  it("fails at create with exit 3, pod-config and the policy's message when Pod Security admission refuses the pod, leaving nothing; the restricted profile runs there", async () => {
    const label = (value: string) =>
      execFileAsync(KUBECTL, [
        "--kubeconfig",
        cluster.kubeconfigPath,
        "label",
        "--overwrite",
        "namespace",
        "ci",
        `pod-security.kubernetes.io/enforce=${value}`,
      ]);
    await label("restricted");
    try {
      const ws = makeWorkspace("");
      const dir = join(ws.out, "..");
      const restricted = join(dir, "restricted.yml");
      writeFileSync(restricted, "pod:\n  security: restricted\n");
      const workflow = writeWorkflow(dir, "whoami", BUSYBOX_IMAGE, [
        "  - name: whoami",
        '    command: echo "uid $(id -u)"; touch /work/made && ls -n /work/made',
        "  - name: output",
        "    command: echo out > /outputs/out.txt",
      ]);
      const args = (runId: string, extra: string[] = []) => [
        "run",
        "--workflow",
        workflow,
        "--checkout",
        ws.checkout,
        "--out",
        join(dir, runId),
        "--run-id",
        runId,
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        KUBECTL,
        ...extra,
      ];

      const started = Date.now();
      const refused = await runCli(args("psa-refused"), { timeoutMs: 120_000 });
      assert.equal(refused.code, 3, `${refused.stdout}\n${refused.stderr}`);
      assert.ok(Date.now() - started < 30_000, "at create, not after the pod timeout");
      assert.equal(readResult(join(dir, "psa-refused")).errorReason, "pod-config");
      assert.match(
        refused.stderr,
        /refused the run's pod at create \(admission\): pods "knotless-run-psa-refused-[a-z0-9-]+" is forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities \(container "run" must not include capabilities other than NET_BIND_SERVICE in securityContext\.capabilities\.add\), runAsNonRoot != true \(pod or container "run" must set securityContext\.runAsNonRoot=true\)/,
      );
      await assertNothingLeft(cluster);

      const ran = await runCli(args("psa-restricted", ["--config", restricted]), { timeoutMs: 300_000 });
      assert.equal(ran.code, 0, `${ran.stdout}\n${ran.stderr}`);
      assert.match(ran.stdout, /^uid 1000$/m);
      assert.equal(readFileSync(join(dir, "psa-restricted", "outputs", "out.txt"), "utf8"), "out\n");
      await assertNothingLeft(cluster);
    } finally {
      await label("privileged");
    }
  });
});

describe("pod placement in the scale-from-zero mode", { skip: findSkipReason(), timeout: 300_000 }, () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await startLocalCluster({ namespace: "ci", scaleFromZero: { joinSeconds: 1, holdSeconds: 5 } });
  });
  after(async () => {
    await cluster?.stop();
  });

  it("fails at once with exit 3 when the autoscaler will not add a node the selector matches (NotTriggerScaleUp)", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const config = join(dir, "gpu-config.yml");
    writeFileSync(config, "pod:\n  nodeSelector: {pool: gpu}\n");
    const workflow = writeWorkflow(dir, "gpu", BUSYBOX_IMAGE, ["  - name: hello", "    command: echo hello"]);
    const started = Date.now();
    const run = await runCli(
      [
        "run",
        "--workflow",
        workflow,
        "--checkout",
        ws.checkout,
        "--out",
        join(dir, "no-gpu-pool"),
        "--run-id",
        "no-gpu-pool",
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        KUBECTL,
        "--config",
        config,
      ],
      { timeoutMs: 120_000 },
    );
    assert.equal(run.code, 3, `${run.stdout}\n${run.stderr}`);
    assert.ok(
      Date.now() - started < 20_000,
      `before the selector grace: the autoscaler's word ends it (${Date.now() - started} ms)`,
    );
    assert.match(
      run.stderr,
      /the cluster autoscaler will not add a node for its node selector pool=gpu: NotTriggerScaleUp: pod didn't trigger scale-up: 1 node\(s\) didn't match Pod's node affinity\/selector/,
    );
    assert.deepEqual(cluster.nodeHistory(), [], "no node was rented for it");
    await assertNothingLeft(cluster);
  });
});
