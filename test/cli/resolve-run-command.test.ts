import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { renderDryRun } from "../../src/cli/dry-run.js";
import { resolveRunCommand, type RawRunOptions } from "../../src/cli/resolve-run-command.js";
import { InputError } from "../../src/core/errors.js";
import { makeTestTempDir } from "../support/temp-dir.js";

function workspace(): { dir: string; options: RawRunOptions } {
  const dir = makeTestTempDir("resolve-config-");
  mkdirSync(join(dir, "checkout"));
  writeFileSync(join(dir, "steps.tsv"), "build\tmake\n");
  const options: RawRunOptions = {
    checkout: join(dir, "checkout"),
    steps: join(dir, "steps.tsv"),
    out: join(dir, "out"),
    image: "busybox:1.36",
    timeout: "1h",
    podTimeout: "15m",
    cpu: "500m",
    memory: "512Mi",
    maxOutputBytes: "512Mi",
    maxLogBytes: "64Mi",
  };
  return { dir, options };
}

async function inputError(options: RawRunOptions, env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    await resolveRunCommand(options, env);
  } catch (error) {
    assert.ok(error instanceof InputError, String(error));
    return error.message;
  }
  assert.fail("expected an InputError");
}

describe("resolveRunCommand", () => {
  it("talks to the cluster through the api transport unless told otherwise, or through kubectl when told so", async () => {
    const { options } = workspace();
    assert.equal((await resolveRunCommand(options, { KUBECONFIG: "/nonexistent" })).transport, "api");
    assert.equal(
      (await resolveRunCommand({ ...options, transport: "kubectl" }, { KUBECONFIG: "/nonexistent" })).transport,
      "kubectl",
    );
    assert.equal(
      (await resolveRunCommand({ ...options, transport: "api" }, { KUBECONFIG: "/nonexistent" })).transport,
      "api",
    );
    assert.match(
      await inputError({ ...options, transport: "grpc", dryRun: true }),
      /^--transport expects kubectl or api, got "grpc"$/,
    );
  });

  it("resolves defaults: the context's namespace left to kubectl, kubectl from PATH, a generated run id and its Job name", async () => {
    const { options } = workspace();
    const config = await resolveRunCommand(options, { KUBECONFIG: "/nonexistent" });
    assert.deepEqual(config.settings.target, { namespaceFromContext: true });
    assert.equal(config.kubectlPath, "kubectl");
    assert.match(config.settings.runId, /^\d{8}-\d{6}-[0-9a-f]{6}$/);
    assert.equal(config.settings.jobName, `knotless-run-${config.settings.runId}`);
    assert.equal(config.settings.timeoutMs, 3_600_000);
    assert.equal(config.settings.maxOutputBytes, 512 * 1024 * 1024);
    assert.equal(config.settings.maxLogBytes, 64 * 1024 * 1024);
    assert.equal(config.settings.podIdleTimeoutMs, 600_000);
  });

  it("takes --pod-idle-timeout into the Job's guard, its annotation and the dry run", async () => {
    const { options } = workspace();
    const config = await resolveRunCommand({ ...options, podIdleTimeout: "20s", namespace: "ci", dryRun: true }, {});
    assert.equal(config.settings.podIdleTimeoutMs, 20_000);
    const text = await renderDryRun(config);
    assert.match(
      text,
      /^# {3}pod idle timeout: 20\.0s \(the pod stops itself when no runner exec has run for that long\)$/m,
    );
    assert.match(text, /knotless\.dev\/pod-idle-timeout-seconds: "20"/);
    assert.match(text, /^ *IDLE_SECONDS=20$/m);
  });

  it("takes --config's pod keys into settings.pod, the dry run printing each and the manifest carrying them", async () => {
    const { dir, options } = workspace();
    const workflow = join(dir, "w.yml");
    writeFileSync(workflow, "engine: kubernetes\nimage: busybox:1.36\nsteps:\n  - name: a\n    command: echo hi\n");
    const config = join(dir, "ops.yml");
    writeFileSync(
      config,
      "pod:\n  nodeSelector: {pool: ci}\n  imagePullSecrets: [registry-credentials]\n  security: restricted\n  podSpecPatch: {hostAliases: [{ip: 10.0.0.5, hostnames: [registry.local]}]}\n",
    );
    const { steps: _steps, image: _image, ...rest } = options;
    const resolved = await resolveRunCommand({ ...rest, workflow, config, namespace: "ci", dryRun: true }, {});
    assert.deepEqual(resolved.settings.pod, {
      nodeSelector: { pool: "ci" },
      imagePullSecrets: ["registry-credentials"],
      security: "restricted",
      podSpecPatch: { hostAliases: [{ ip: "10.0.0.5", hostnames: ["registry.local"] }] },
    });
    const text = await renderDryRun(resolved);
    assert.match(
      text,
      /^# {3}pod security: restricted \(Pod Security Standard "restricted": uid 1000, no capability\)$/m,
    );
    assert.match(text, /^# {3}pod\.nodeSelector: pool=ci$/m);
    assert.match(
      text,
      /^# {3}pod\.imagePullSecrets: registry-credentials \(Secrets the kubelet pulls with; the runner never reads them\)$/m,
    );
    assert.match(text, /^ {6}imagePullSecrets:\n {8}- name: registry-credentials$/m);
    assert.match(text, /^ {6}hostAliases:$/m);
  });

  it("holds --cpu, --memory and --timeout to --config's limits like the workflow's values: refused with exit 2, or clamped into the result's workflow.clamped", async () => {
    const { dir, options } = workspace();
    const workflow = join(dir, "w.yml");
    writeFileSync(workflow, "engine: kubernetes\nimage: busybox:1.36\nsteps:\n  - name: a\n    command: echo hi\n");
    const refuse = join(dir, "refuse.yml");
    writeFileSync(refuse, "limits: {maxCpu: 1, maxTimeout: 10m}\n");
    const clamp = join(dir, "clamp.yml");
    writeFileSync(clamp, "limits: {maxCpu: 1, maxTimeout: 10m, onExceed: clamp}\n");
    const { steps: _steps, ...rest } = options;
    const flags = { ...rest, workflow, namespace: "ci", dryRun: true, cpu: "2", timeout: "1h" };
    const message = await inputError({ ...flags, config: refuse });
    assert.match(message, /^--cpu 2 is over limits\.maxCpu 1 in --config \S+refuse\.yml; ask for at most 1/m);
    assert.match(message, /^--timeout 1h00m is over limits\.maxTimeout 10m00s in --config \S+refuse\.yml/m);
    const resolved = await resolveRunCommand({ ...flags, config: clamp }, {});
    assert.deepEqual([resolved.settings.cpu, resolved.settings.timeoutMs], ["1", 600_000]);
    assert.deepEqual(
      resolved.settings.workflow?.clamped?.map((clamp) => clamp.path),
      ["--cpu", "--timeout"],
    );
    assert.match(
      resolved.clamped.join("\n"),
      /^--cpu 2 is over limits\.maxCpu 1 in --config \S+clamp\.yml: clamped to 1 \(onExceed: clamp\)$/m,
    );
    assert.match(await renderDryRun(resolved), /^# {3}limit: --timeout 1h00m is over limits\.maxTimeout 10m00s/m);
  });

  it("lays the pod flags over --config's pod keys (flag over file over default), the dry run and the manifest showing the result", async () => {
    const { dir, options } = workspace();
    const workflow = join(dir, "w.yml");
    writeFileSync(workflow, "engine: kubernetes\nimage: busybox:1.36\nsteps:\n  - name: a\n    command: echo hi\n");
    const config = join(dir, "ops.yml");
    writeFileSync(
      config,
      "pod:\n  nodeSelector: {pool: ci, zone: a}\n  imagePullSecrets: [registry-a]\n  security: restricted\n  ephemeralStorage: {request: 1Gi, limit: 2Gi}\n",
    );
    const { steps: _steps, ...rest } = options;
    const flags = {
      nodeSelector: ["pool=gpu"],
      imagePullSecret: ["registry-b"],
      securityProfile: "default",
      priorityClass: "ci-high",
      toleration: ["gpu:NoSchedule"],
      podLabel: ["team=ml"],
      podAnnotation: ["example.com/owner=ml"],
      runtimeClass: "gvisor",
      ephemeralStorage: "3Gi:6Gi",
    };
    const resolved = await resolveRunCommand(
      { ...rest, workflow, config, namespace: "ci", dryRun: true, ...flags },
      {},
    );
    assert.deepEqual(resolved.settings.pod, {
      nodeSelector: { pool: "gpu", zone: "a" },
      tolerations: [{ key: "gpu", operator: "Exists", effect: "NoSchedule" }],
      priorityClassName: "ci-high",
      runtimeClassName: "gvisor",
      labels: { team: "ml" },
      annotations: { "example.com/owner": "ml" },
      imagePullSecrets: ["registry-a", "registry-b"],
      security: "default",
    });
    assert.deepEqual(resolved.settings.ephemeralStorage, { request: "3Gi", limit: "6Gi" });
    const text = await renderDryRun(resolved);
    assert.match(text, /^# {3}pod security: default /m);
    assert.match(text, /^# {3}pod\.nodeSelector: pool=gpu, zone=a$/m);
    assert.match(text, /^# {3}ephemeral storage: request 3Gi, limit 6Gi/m);
    assert.match(text, /^ {6}priorityClassName: ci-high$/m);
    assert.match(text, /^ {6}imagePullSecrets:\n {8}- name: registry-a\n {8}- name: registry-b$/m);
    // Without --config the flags alone set the keys; with a steps file they are refused, as --config is.
    const alone = await resolveRunCommand(
      { ...rest, workflow, namespace: "ci", dryRun: true, nodeSelector: ["pool=gpu"] },
      {},
    );
    assert.deepEqual(alone.settings.pod, { nodeSelector: { pool: "gpu" } });
    assert.match(await inputError({ ...options, nodeSelector: ["pool=gpu"] }), /^--node-selector goes with --workflow/);
    assert.match(
      await inputError({ ...rest, workflow, toleration: ["gpu"] }),
      /^--toleration expects KEY\[=VALUE\]:EFFECT/,
    );
  });

  it("takes kubectl from KNOTLESS_KUBECTL unless --kubectl is given", async () => {
    const { options } = workspace();
    assert.equal((await resolveRunCommand(options, { KNOTLESS_KUBECTL: "/opt/k" })).kubectlPath, "/opt/k");
    assert.equal(
      (await resolveRunCommand({ ...options, kubectl: "/bin/k2" }, { KNOTLESS_KUBECTL: "/opt/k" })).kubectlPath,
      "/bin/k2",
    );
  });

  it("packs the upload with tar on PATH by default, the tar KNOTLESS_TAR names, or the runner's packer for none, each with the CLI's environment", async () => {
    const { options } = workspace();
    const env = { PATH: "/usr/bin:/bin" };
    assert.deepEqual((await resolveRunCommand(options, env)).settings.hostTar, { binary: "tar", env });
    const named = { ...env, KNOTLESS_TAR: "/opt/gnu/bin/tar" };
    assert.deepEqual((await resolveRunCommand(options, named)).settings.hostTar, {
      binary: "/opt/gnu/bin/tar",
      env: named,
    });
    assert.equal((await resolveRunCommand(options, { ...env, KNOTLESS_TAR: "none" })).settings.hostTar, undefined);
  });

  it("pins --namespace when given, and otherwise leaves a run's namespace to kubectl without reading the kubeconfig", async () => {
    const { dir, options } = workspace();
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(kubeconfig, "contexts: [\n"); // malformed: only kubectl, which refuses it, would read it
    assert.deepEqual((await resolveRunCommand({ ...options, kubeconfig, namespace: "explicit" }, {})).settings.target, {
      namespace: "explicit",
      kubeconfig,
    });
    assert.deepEqual((await resolveRunCommand({ ...options, kubeconfig, context: "b" }, {})).settings.target, {
      namespaceFromContext: true,
      kubeconfig,
      context: "b",
    });
  });

  it("reads the kubeconfig context's namespace for a dry run, which must print the namespace later calls pin", async () => {
    const { dir, options } = workspace();
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      "current-context: a\ncontexts:\n- name: a\n  context: {namespace: team-a}\n- name: b\n  context: {namespace: team-b}\n",
    );
    const dry = { ...options, dryRun: true };
    assert.deepEqual((await resolveRunCommand({ ...dry, kubeconfig }, {})).settings.target, {
      namespace: "team-a",
      namespaceFromContext: true,
      kubeconfig,
    });
    assert.equal(
      (await resolveRunCommand({ ...dry, kubeconfig, context: "b" }, {})).settings.target.namespace,
      "team-b",
    );
    assert.equal((await resolveRunCommand(dry, { KUBECONFIG: "/nonexistent" })).settings.target.namespace, "default");
    assert.deepEqual((await resolveRunCommand({ ...dry, kubeconfig, namespace: "explicit" }, {})).settings.target, {
      namespace: "explicit",
      kubeconfig,
    });
  });

  it("refuses a missing checkout directory", async () => {
    const { options } = workspace();
    assert.match(
      await inputError({ ...options, checkout: "/nonexistent/checkout" }),
      /--checkout: expected a readable directory/,
    );
  });

  it("refuses an unreadable steps file, naming it", async () => {
    const { options } = workspace();
    assert.match(
      await inputError({ ...options, steps: "/nonexistent/steps.tsv" }),
      /^\/nonexistent\/steps\.tsv: cannot read the file: no such file or directory$/,
    );
  });

  it("takes --checkout-git with --checkout-sha instead of --checkout: the clone in the settings at the workflow's depth, an empty /work to upload", async () => {
    const { dir, options } = workspace();
    const { checkout: _checkout, ...withSteps } = options;
    const { steps: _steps, ...rest } = withSteps;
    writeFileSync(join(dir, "ci.yml"), "clone:\n  depth: 5\n  submodules: true\nsteps:\n  - name: a\n    command: b\n");
    const sha = "c".repeat(40);
    const config = await resolveRunCommand(
      { ...rest, workflow: join(dir, "ci.yml"), checkoutGit: "https://git.example/r.git", checkoutSha: sha },
      { KUBECONFIG: "/nonexistent" },
    );
    assert.deepEqual(
      { ...config.settings.gitCheckout, host: undefined },
      { url: "https://git.example/r.git", sha, depth: 5, submodules: true, host: undefined },
    );
    assert.equal(config.settings.gitCheckout?.host?.binary, "git");
    assert.equal(config.settings.checkoutDir, config.emptyCheckout);
    assert.match(
      await inputError({ ...options, checkoutGit: "https://git.example/r.git", checkoutSha: sha }),
      /--checkout and --checkout-git/,
    );
    assert.match(
      await inputError({ ...withSteps, checkoutGit: "https://git.example/r.git" }),
      /--checkout-git and --checkout-sha go together/,
    );
    assert.match(
      await inputError({ ...withSteps, checkoutGit: "https://u:p@git.example/r.git", checkoutSha: sha }),
      /^--checkout-git carries a password/,
    );
    assert.match(
      await inputError({ ...withSteps, checkoutGit: "https://git.example/r.git", checkoutSha: "abc" }),
      /^--checkout-sha expects a full commit id/,
    );
  });

  it("refuses at once a steps file that is a device, a named pipe or over 1 MiB", async () => {
    const { options } = workspace();
    const dir = makeTestTempDir("knotless-steps-odd-");
    execFileSync("mkfifo", [join(dir, "pipe.tsv")]);
    writeFileSync(join(dir, "big.tsv"), "#".repeat(1024 * 1024 + 1));
    assert.equal(
      await inputError({ ...options, steps: "/dev/zero" }),
      "/dev/zero: not a regular file but a character device; a steps file is a regular file of at most 1 MiB",
    );
    assert.equal(
      await inputError({ ...options, steps: join(dir, "pipe.tsv") }),
      `${join(dir, "pipe.tsv")}: not a regular file but a named pipe (FIFO); a steps file is a regular file of at most 1 MiB`,
    );
    assert.equal(
      await inputError({ ...options, steps: join(dir, "big.tsv") }),
      `${join(dir, "big.tsv")}: 1048577 bytes, more than the 1 MiB (1048576 bytes) a steps file may have`,
    );
  });

  it("refuses a malformed steps file with its file and line", async () => {
    const { dir, options } = workspace();
    writeFileSync(join(dir, "steps.tsv"), "ok\ttrue\n\nbroken line\n");
    assert.match(await inputError(options), new RegExp(`^${join(dir, "steps.tsv")}:3: expected \`name<TAB>script\``));
  });

  it("refuses bad durations, quantities, sizes, images, namespaces and run ids", async () => {
    const { options } = workspace();
    assert.match(await inputError({ ...options, timeout: "forever" }), /--timeout expects a duration/);
    assert.match(await inputError({ ...options, stepTimeout: "5" }), /--step-timeout expects a duration/);
    assert.match(await inputError({ ...options, podTimeout: "1d" }), /--pod-timeout expects a duration/);
    assert.match(await inputError({ ...options, podIdleTimeout: "soon" }), /--pod-idle-timeout expects a duration/);
    assert.match(
      await inputError({ ...options, podIdleTimeout: "10s" }),
      /--pod-idle-timeout expects at least 15s \(a running exec beats every 5s\), got "10s"/,
    );
    assert.match(await inputError({ ...options, timeout: "1000h" }), /--timeout expects at most 168h/);
    assert.match(await inputError({ ...options, cpu: "lots" }), /--cpu expects a Kubernetes quantity/);
    assert.match(await inputError({ ...options, memory: "1 GB" }), /--memory expects a Kubernetes quantity/);
    assert.match(
      await inputError({ ...options, cpu: "100000" }),
      /--cpu: cpu 100000 is outside the bounds any run may ask for \(from 1m to 1024 cores\)/,
    );
    assert.match(
      await inputError({ ...options, memory: "999Ei" }),
      /--memory: memory 999Ei is outside the bounds any run may ask for \(from 4Mi to 64Ti\)/,
    );
    assert.match(await inputError({ ...options, maxOutputBytes: "-1" }), /--max-output-bytes expects a byte count/);
    assert.match(
      await inputError({ ...options, maxLogBytes: "64 MiB" }),
      /--max-log-bytes expects a byte count such as 536870912, 512Mi or 1G, got "64 MiB"/,
    );
    assert.match(await inputError({ ...options, image: "bad image" }), /--image expects an image reference/);
    assert.match(await inputError({ ...options, namespace: "Not_A_Label" }), /--namespace expects a DNS-1123 label/);
    assert.match(await inputError({ ...options, runId: "has space" }), /--run-id expects/);
  });

  it("refuses an out directory that still holds outputs of an earlier run", async () => {
    const { dir, options } = workspace();
    mkdirSync(join(dir, "out", "outputs"), { recursive: true });
    writeFileSync(join(dir, "out", "outputs", "old.txt"), "x");
    assert.match(await inputError(options), /already has files from an earlier run/);
  });

  it("refuses an unreadable kubeconfig, and in a dry run a malformed one and an unknown context", async () => {
    const { dir, options } = workspace();
    assert.match(await inputError({ ...options, kubeconfig: "/nonexistent/kubeconfig" }), /--kubeconfig: cannot read/);
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(kubeconfig, "contexts: []\n");
    assert.match(
      await inputError({ ...options, dryRun: true, kubeconfig, context: "nope" }),
      /no context named "nope"/,
    );
    writeFileSync(kubeconfig, "contexts: [\n");
    assert.match(await inputError({ ...options, dryRun: true, kubeconfig }), /the kubeconfig is not valid YAML/);
  });
});
