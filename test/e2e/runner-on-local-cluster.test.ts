// The runner through the default transport (api) against the local cluster, whose pods are real podman containers; the example also through each real kubectl.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { startLocalCluster, type FaultConfig, type LocalCluster } from "../../local-cluster/index.js";
import { countFiringsSince, measureEvictionToEnd } from "../support/local-cluster-e2e.js";
import { makeWorkspace, readResult, REPO_ROOT, runCli } from "../support/run-cli.js";
import { runWithKubectl } from "../support/run-library.js";
import { DEFAULT_TIMINGS, type ExecutorTimings } from "../../src/executor/kubernetes/context.js";

/** Async on purpose: the cluster serves from this process, so a synchronous kubectl call would deadlock. */
const execFileAsync = promisify(execFile);
const SDK = "/usr/lib/google-cloud-sdk/bin";
const KUBECTL_VERSIONS = ["1.30", "1.33"].map((v) => join(SDK, `kubectl.${v}`)).filter(existsSync);
const DEFAULT_KUBECTL = KUBECTL_VERSIONS.at(-1) ?? "kubectl";

function podmanWorks(): boolean {
  return spawnSync("podman", ["image", "exists", "docker.io/library/busybox:1.36"], { stdio: "ignore" }).status === 0;
}

const skip = podmanWorks()
  ? false
  : "podman with the local busybox image is not available (run scripts/setup-containers.sh)";
const DEBIAN_IMAGE = "docker.io/library/debian:bookworm-slim";
const skipDebian =
  spawnSync("podman", ["image", "exists", DEBIAN_IMAGE], { stdio: "ignore" }).status === 0
    ? false
    : `the local ${DEBIAN_IMAGE} image is not there (scripts/setup-containers.sh builds it with debootstrap)`;
const EXAMPLE_STEPS = readFileSync(join(REPO_ROOT, "examples", "hello", "steps.tsv"), "utf8");

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) assert.fail(`${what} not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return Date.now() - started;
}

/**
 * How long the local cluster's kubelet may take to remove a deleted Job's pod: its podman pod and volumes (a 200 MB,
 * 10,000-file emptyDir among them) go first, which took over 30 s with four test files at once on two cores.
 */
const CLEAN_UP_MS = 90_000;

async function assertNothingLeft(cluster: LocalCluster): Promise<void> {
  await waitFor("podman containers gone", async () => (await cluster.podmanContainers()).length === 0, CLEAN_UP_MS);
  assert.deepEqual(cluster.objects("jobs.batch"), []);
  await waitFor("pods gone from the server", () => cluster.objects("pods").length === 0, CLEAN_UP_MS);
}

function sha256Tree(root: string): Map<string, string> {
  const sums = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else sums.set(relative(root, path), createHash("sha256").update(readFileSync(path)).digest("hex"));
    }
  };
  walk(root);
  return sums;
}

/** A fault's retries with their attempts and budgets kept and their waits cut to a tenth: no test sleeps through a default backoff. */
const FAULT_TIMINGS: Partial<ExecutorTimings> = {
  execReadyRetry: { ...DEFAULT_TIMINGS.execReadyRetry, initialDelayMs: 50, maxDelayMs: 500 },
  createRetry: { ...DEFAULT_TIMINGS.createRetry, initialDelayMs: 100, maxDelayMs: 800 },
  reconnectRetry: { ...DEFAULT_TIMINGS.reconnectRetry, initialDelayMs: 50, maxDelayMs: 500 },
};

describe("the runner on the local cluster", { skip, concurrency: 1, timeout: 900_000 }, () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
  });
  after(async () => {
    await cluster?.stop();
  });

  const run = (
    steps: string,
    runId: string,
    extra: {
      faults?: FaultConfig;
      overrides?: Parameters<typeof runWithKubectl>[0]["overrides"];
      kubectl?: string;
    } = {},
  ) => {
    cluster.setFaults(extra.faults ?? {});
    // The library through the API transport (the default), or through a given kubectl.
    return runWithKubectl({
      ...(extra.faults ? { timings: FAULT_TIMINGS } : {}),
      kubectlPath: extra.kubectl ?? DEFAULT_KUBECTL,
      transport: extra.kubectl ? "kubectl" : "api",
      env: {},
      kubeconfig: cluster.kubeconfigPath,
      steps,
      runId,
      ...(extra.overrides ? { overrides: extra.overrides } : {}),
    });
  };

  for (const kubectl of KUBECTL_VERSIONS) {
    it(`runs the example's four steps through ${kubectl.split("/").pop()} and leaves nothing behind`, async () => {
      cluster.setFaults({});
      const ws = makeWorkspace(EXAMPLE_STEPS);
      const cli = await runCli([
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--shared-steps",
        ws.sharedSteps,
        "--out",
        ws.out,
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--transport",
        "kubectl",
        "--kubectl",
        kubectl,
      ]);
      assert.equal(cli.code, 0, cli.stderr);
      const result = readResult(ws.out);
      assert.deepEqual(
        result.steps.map((s) => s.status),
        ["success", "success", "success", "success"],
      );
      assert.match(cli.stdout, /steps\.tsv/);
      assert.match(cli.stdout, /hello from a shared step/);
      assert.match(readFileSync(join(ws.out, "outputs", "ran.txt"), "utf8"), /^ran on knotless-run-/);
      await assertNothingLeft(cluster);
    });
  }

  it(
    "runs bash and GNU tar steps on the local Debian image and brings its outputs back through GNU tar",
    { skip: skipDebian },
    async () => {
      cluster.setFaults({});
      const ws = makeWorkspace(
        [
          `bash\tbash -c 'set -euo pipefail; words=(one two three); echo "bash \${BASH_VERSINFO[0]} counts \${#words[@]}"'`,
          "tar\ttar --version | head -n 1; tar -cf /outputs/work.tar -C /work README.txt",
          "coreutils\tls --version | head -n 1 > /outputs/ls-version.txt; find --version | head -n 1",
        ].join("\n") + "\n",
      );
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
        "--kubectl",
        DEFAULT_KUBECTL,
        "--image",
        DEBIAN_IMAGE,
      ]);
      assert.equal(cli.code, 0, cli.stderr);
      const result = readResult(ws.out);
      assert.equal(result.job.image, DEBIAN_IMAGE);
      assert.deepEqual(
        result.steps.map((s) => s.status),
        ["success", "success", "success"],
      );
      assert.match(cli.stdout, /^bash 5 counts 3$/m);
      assert.match(cli.stdout, /^tar \(GNU tar\) \d/m);
      assert.match(cli.stdout, /^find \(GNU findutils\) \d/m);
      assert.deepEqual(
        [...result.outputs].map((o) => o.path),
        ["ls-version.txt", "work.tar"],
      );
      assert.match(readFileSync(join(ws.out, "outputs", "ls-version.txt"), "utf8"), /^ls \(GNU coreutils\) \d/);
      await assertNothingLeft(cluster);
    },
  );

  it("brings a 200 MB, 10,000-file tree back byte-identical", async () => {
    const ws = makeWorkspace("copy\tcp -a /work/tree/. /outputs/\n");
    const tree = join(ws.checkout, "tree");
    for (let d = 0; d < 100; d++) {
      mkdirSync(join(tree, `d${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) {
        const seed = createHash("sha256").update(`${d}/${f}`).digest();
        writeFileSync(join(tree, `d${d}`, `f${f}.bin`), Buffer.alloc(20_000 + (f % 10) * 200, seed));
      }
    }
    cluster.setFaults({});
    const cli = await runCli(
      [
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        DEFAULT_KUBECTL,
        "--max-output-bytes",
        "1Gi",
      ],
      { timeoutMs: 600_000 },
    );
    assert.equal(cli.code, 0, cli.stderr);
    const sent = sha256Tree(tree);
    const received = sha256Tree(join(ws.out, "outputs"));
    assert.equal(sent.size, 10_000);
    assert.ok(
      received.size === sent.size && [...sent].every(([path, sum]) => received.get(path) === sum),
      "the trees differ",
    );
    assert.equal(readResult(ws.out).outputs.length, 10_000);
    await assertNothingLeft(cluster);
  });

  it("reports a failing step's exit code, skips the rest and removes the pod", async () => {
    const r = await run("ok\ttrue\nfail\texit 4\nlater\ttrue", "lc-fail");
    assert.deepEqual(
      r.result.steps.map((s) => [s.status, s.exitCode]),
      [
        ["success", 0],
        ["failed", 4],
        ["skipped", null],
      ],
    );
    assert.equal(r.result.exitCode, 4);
    await assertNothingLeft(cluster);
  });

  it("hands the steps their variables, $KNOTLESS_ENV and a secret, and leaves no secret in a kept pod", async () => {
    const secret = { name: "API_TOKEN", value: "tok-'s3cr3t' $HOME `x` é" };
    const hostile = `it's "$HOME" \`x\` \\ é\nline 2`;
    const steps = [
      {
        name: "vars",
        script: `printf '[%s]\\n' "$CI" "$HOSTILE"\nprintf 'MULTI<<EOF\\nit'\\''s "$HOME"\\nEOF\\nPLAIN=carried\\n' >> "$KNOTLESS_ENV"`,
        source: "lc:1",
      },
      {
        name: "carried",
        script: `printf '[%s]\\n' "$MULTI" "$PLAIN" "$OWN"; printf %s "$API_TOKEN" | sha256sum`,
        source: "lc:2",
        env: [
          { name: "PLAIN", value: "step wins" },
          { name: "OWN", value: "own" },
        ],
      },
      { name: "pipefail", script: "false | true\necho unreachable", source: "lc:3" },
    ];
    const env = [
      { name: "CI", value: "true" },
      { name: "HOSTILE", value: hostile },
    ];
    const r = await run("unused\ttrue", "lc-env", {
      overrides: { steps, env, secrets: [secret], shell: "sh -eo pipefail", keep: true },
    });
    try {
      assert.deepEqual(
        r.result.steps.map((s) => [s.status, s.exitCode]),
        [
          ["success", 0],
          ["success", 0],
          ["failed", 1],
        ],
        r.result.error ?? "",
      );
      assert.equal(r.output(0), `[true]\n[${hostile}]\n`);
      assert.equal(
        r.output(1),
        `[it's "$HOME"]\n[step wins]\n[own]\n${createHash("sha256").update(secret.value).digest("hex")}  -\n`,
      );
      assert.equal(r.output(2), "", "sh -eo pipefail stopped at the failing pipe");
      assert.ok(!JSON.stringify([r.result, r.events]).includes("s3cr3t"), "the result or the events hold the secret");
      const container = (await cluster.podmanContainers()).find(
        (name) => name.includes("lc-env") && !name.endsWith("-infra"),
      );
      assert.ok(container, "the kept pod's container");
      const { stdout: left } = await execFileAsync(
        "podman",
        ["exec", container!, "sh", "-c", "ls -A /knotless-secrets; grep -rl s3cr3t /outputs /knotless || true"],
        { encoding: "utf8" },
      );
      assert.equal(left, "", "the kept pod still holds the secret");
    } finally {
      await execFileAsync(DEFAULT_KUBECTL, [
        "--kubeconfig",
        cluster.kubeconfigPath,
        "delete",
        "job",
        r.result.job.name,
        "--cascade=background",
      ]);
    }
    await assertNothingLeft(cluster);
  });

  it("kills a timed-out step that ignores SIGTERM, with its background child, inside the container", async () => {
    const r = await run("stubborn\ttrap '' TERM; (trap '' TERM; sleep 1000) & sleep 1000\n", "lc-timeout", {
      overrides: { keep: true, stepTimeoutMs: 3000 } as never,
    });
    try {
      assert.equal(r.result.status, "timeout");
      assert.equal(r.result.steps[0]!.timedOut, true);
      const container = (await cluster.podmanContainers()).find(
        (name) => name.includes("lc-timeout") && !name.endsWith("-infra"),
      );
      assert.ok(container, "the kept pod's container");
      const { stdout: ps } = await execFileAsync("podman", ["exec", container!, "ps", "-o", "pid,args"], {
        encoding: "utf8",
      });
      assert.doesNotMatch(ps, /sleep 1000/, ps);
    } finally {
      await execFileAsync(DEFAULT_KUBECTL, [
        "--kubeconfig",
        cluster.kubeconfigPath,
        "delete",
        "job",
        r.result.job.name,
        "--cascade=background",
      ]);
    }
    await assertNothingLeft(cluster);
  });

  it("cancels on SIGTERM mid-step with exit 130 and the container gone within 10 s", async () => {
    cluster.setFaults({});
    const ws = makeWorkspace("wait\techo waiting; sleep 300\n");
    const cli = await runCli(
      [
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        "--kubeconfig",
        cluster.kubeconfigPath,
        "--kubectl",
        DEFAULT_KUBECTL,
      ],
      {
        signalWhen: { when: /waiting/, signal: "SIGTERM" },
      },
    );
    const signalledAt = Date.now();
    assert.equal(cli.code, 130, cli.stderr);
    assert.equal(readResult(ws.out).status, "cancelled");
    const waited = await waitFor(
      "the container gone",
      async () => (await cluster.podmanContainers()).length === 0,
      10_000,
    );
    assert.ok(Date.now() - signalledAt < 10_000 || waited < 10_000);
    await assertNothingLeft(cluster);
  });

  // scripts/stress-faults.sh -s 15 makes it the 15 s spell that once failed under load.
  const pendingSeconds = Number(process.env.E2E_PENDING_SECONDS ?? 4);
  it(`shows progress through a Pending spell of ${pendingSeconds} s (scale from zero), then succeeds`, async () => {
    const r = await run("a\techo up", "lc-pending", { faults: { schedulingDelay: { seconds: pendingSeconds } } });
    assert.equal(r.result.status, "success", r.result.error ?? "");
    assert.ok(
      r.events.some(
        (e) => e.kind === "pod-progress" && /FailedScheduling|Unschedulable/.test(`${e.event ?? ""} ${e.reason ?? ""}`),
      ),
    );
    await assertNothingLeft(cluster);
  });

  it("reports an image pull failure with its reason long before the pod timeout", async () => {
    const r = await run("a\ttrue", "lc-pull", {
      faults: { imagePullFailure: {} },
      overrides: { podTimeoutMs: 300_000 },
    });
    assert.equal(r.result.errorReason, "image-pull");
    assert.match(r.result.error ?? "", /ErrImagePull|ImagePullBackOff/);
    assert.ok(r.result.durationMs < 60_000, `${r.result.durationMs} ms`);
    await assertNothingLeft(cluster);
  });

  it("retries refused exec upgrades and succeeds", async () => {
    const since = Date.now();
    const r = await run("a\techo hi", "lc-upgrade", { faults: { execUpgradeRefused: { count: 3 } } });
    assert.equal(r.result.status, "success", r.result.error ?? "");
    assert.equal(r.output(0), "hi\n");
    assert.equal(countFiringsSince(cluster, "execUpgradeRefused", since), 3, "the upgrades refused during this run");
    await assertNothingLeft(cluster);
  });

  for (const mode of ["clean", "error"] as const) {
    it(`resumes a stream cut (${mode}) with no output lost or repeated and the true exit code`, async () => {
      const step = "count\ti=1; while [ $i -le 2000 ]; do echo line $i; i=$((i+1)); done; sleep 2; exit 9";
      const since = Date.now();
      const r = await run(step, `lc-cut-${mode}`, {
        faults: { execStreamCut: { afterBytes: 5000, mode, match: "helper.sh (run|follow)", count: 2 } },
      });
      assert.equal(r.result.steps[0]!.exitCode, 9);
      assert.equal(r.output(0), Array.from({ length: 2000 }, (_, i) => `line ${i + 1}\n`).join(""));
      assert.ok(countFiringsSince(cluster, "execStreamCut", since) > 0, "no stream was cut during this run");
      await assertNothingLeft(cluster);
    });
  }

  it("reports an evicted pod as an infrastructure failure within seconds", async () => {
    const r = await run("long\tsleep 300", "lc-evict", { faults: { podEviction: { afterSeconds: 4 } } });
    assert.equal(r.result.errorReason, "pod-lost");
    assert.match(r.result.error ?? "", /Evicted/);
    // From the eviction, not the test's start: under load the pod's start alone took a minute.
    const reacted = measureEvictionToEnd(cluster, r.result.job.pod ?? undefined, r.result.finishedAt);
    assert.ok(reacted < 60_000, `the run ended ${reacted} ms after the eviction`);
    await assertNothingLeft(cluster);
  });

  it("retries a create answered 500 a bounded number of times", async () => {
    const since = Date.now();
    const r = await run("a\ttrue", "lc-500", { faults: { createError: { count: 2 } } });
    assert.equal(r.result.status, "success", r.result.error ?? "");
    assert.equal(countFiringsSince(cluster, "createError", since), 2, "the creates answered 500 during this run");
    await assertNothingLeft(cluster);
  });

  it("runs 10 workflows at once, each in its own Job, all correct, nothing left behind", async () => {
    cluster.setFaults({});
    const runs = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        run(`write\techo run-${i} > /work/mine; sleep 1; cat /work/mine; ls /work | wc -l`, `lc-many-${i}`),
      ),
    );
    runs.forEach((r, i) => {
      assert.equal(r.result.status, "success", r.result.error ?? "");
      assert.match(r.output(0), new RegExp(`^run-${i}\\n`), "each pod has its own /work");
    });
    assert.equal(new Set(runs.map((r) => r.result.job.pod)).size, 10);
    await assertNothingLeft(cluster);
  });
});
