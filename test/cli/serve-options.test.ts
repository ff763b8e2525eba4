import assert from "node:assert/strict";
import { chmodSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { readInstanceName, resolveServeCommand, type RawServeOptions } from "../../src/cli/serve-options.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const dir = makeTestTempDir("serve-options-");
const tokenFile = join(dir, "token");
writeFileSync(tokenFile, "abc-token-of-16-chars\n");
chmodSync(tokenFile, 0o600);
const RAW: RawServeOptions = {
  listen: "127.0.0.1:0",
  stateDir: dir,
  tokenFile,
  maxRuns: "20",
  maxQueued: "1000",
  drainTimeout: "10m",
  drainCleanupTimeout: "1m",
  keepRuns: "168h",
  gcInterval: "5m",
  maxRequestBytes: "4Mi",
  maxWorkflowBytes: "256Ki",
  podTimeout: "15m",
  maxOutputBytes: "512Mi",
  maxLogBytes: "16Mi",
  maxWarm: "1",
  followerStallTimeout: "30s",
  followerBuffer: "256Ki",
  allFollowersBuffer: "64Mi",
  leaseDuration: "15s",
};

describe("serve's options", () => {
  it("name the instance after --instance, or the host name's first label, and refuse a name that is no DNS-1123 label", async () => {
    assert.deepEqual((await resolveServeCommand({ ...RAW, instance: "ci-a", adopt: true }, {})).instance, {
      name: "ci-a",
      leaseDurationSeconds: 15,
      adopt: true,
    });
    assert.equal(readInstanceName(undefined, "Runner-1.example.org"), "runner-1");
    assert.throws(() => readInstanceName("CI_A", "h"), /--instance "CI_A" is not a DNS-1123 label/);
    assert.throws(
      () => readInstanceName(undefined, "-bad"),
      /the host name "-bad" cannot name this instance .*: give --instance NAME/,
    );
    assert.throws(() => readInstanceName("a".repeat(64), "h"), /is 64 characters long; at most 63/);
  });

  it("take --lease-duration in whole seconds from 1s to 1h", async () => {
    assert.equal((await resolveServeCommand({ ...RAW, leaseDuration: "3s" }, {})).instance?.leaseDurationSeconds, 3);
    await assert.rejects(
      resolveServeCommand({ ...RAW, leaseDuration: "1500ms" }, {}),
      /--lease-duration expects whole seconds from 1s to 1h, got "1500ms"/,
    );
    await assert.rejects(
      resolveServeCommand({ ...RAW, leaseDuration: "2h" }, {}),
      /--lease-duration expects whole seconds/,
    );
  });

  it("resolve the follower bounds, refusing a stall timeout under 100ms and a total under one follower's buffer", async () => {
    assert.deepEqual((await resolveServeCommand(RAW, {})).followers, {
      stallTimeoutMs: 30_000,
      maxBufferedBytes: 256 * 1024,
      maxTotalBufferedBytes: 64 * 1024 * 1024,
    });
    await assert.rejects(
      resolveServeCommand({ ...RAW, followerStallTimeout: "50ms" }, {}),
      /--follower-stall-timeout expects at least 100ms/,
    );
    await assert.rejects(
      resolveServeCommand({ ...RAW, followerBuffer: "1Mi", allFollowersBuffer: "512Ki" }, {}),
      /--all-followers-buffer \(512Ki\) must be at least --follower-buffer \(1Mi\)/,
    );
  });

  it("resolve the defaults into a config with the api transport and the token read", async () => {
    const config = await resolveServeCommand(RAW, { KNOTLESS_KUBECTL: "/opt/kubectl" });
    assert.equal(config.token, "abc-token-of-16-chars");
    assert.equal(config.limits.maxRuns, 20);
    assert.equal(config.drainTimeoutMs, 600_000);
    assert.equal(config.drainCleanupTimeoutMs, 60_000);
    assert.deepEqual(config.transport, {
      setting: { target: config.defaults.target, kubectlPath: "/opt/kubectl", transport: "api" },
      env: { KNOTLESS_KUBECTL: "/opt/kubectl" },
    });
  });

  it("take --pod-idle-timeout for every run (default 10m) and refuse one under 15s", async () => {
    assert.equal((await resolveServeCommand(RAW, {})).defaults.podIdleTimeoutMs, 600_000);
    assert.equal((await resolveServeCommand({ ...RAW, podIdleTimeout: "20s" }, {})).defaults.podIdleTimeoutMs, 20_000);
    await assert.rejects(
      resolveServeCommand({ ...RAW, podIdleTimeout: "5s" }, {}),
      /--pod-idle-timeout expects at least 15s/,
    );
  });

  it("read --config once into every run's defaults, and refuse a bad file at its line and column", async () => {
    const ops = join(dir, "ops.yml");
    writeFileSync(ops, "limits:\n  maxCpu: 2\n  onExceed: clamp\n");
    const runner = (await resolveServeCommand({ ...RAW, config: ops }, {})).defaults.runner;
    assert.equal(runner?.file, ops);
    assert.deepEqual(runner?.config.limits, { maxCpu: "2", onExceed: "clamp" });
    assert.deepEqual((await resolveServeCommand(RAW, {})).defaults.runner?.config.limits, { onExceed: "refuse" });
    writeFileSync(ops, "limits:\n  maxCPU: 2\n");
    await assert.rejects(
      resolveServeCommand({ ...RAW, config: ops }, {}),
      /ops\.yml:2:3: limits\.maxCPU: unknown key; did you mean `maxCpu`\?/,
    );
  });

  it("lay the pod flags over --config's pod keys for every served run, and refuse a bad one naming the flag", async () => {
    const ops = join(dir, "pod.yml");
    writeFileSync(ops, "pod:\n  nodeSelector: {pool: ci}\n  labels: {team: platform}\n");
    const runner = (
      await resolveServeCommand(
        {
          ...RAW,
          config: ops,
          nodeSelector: ["pool=gpu"],
          imagePullSecret: ["registry"],
          securityProfile: "restricted",
        },
        {},
      )
    ).defaults.runner;
    assert.deepEqual(runner?.config.pod, {
      nodeSelector: { pool: "gpu" },
      labels: { team: "platform" },
      imagePullSecrets: ["registry"],
      security: "restricted",
    });
    await assert.rejects(
      resolveServeCommand({ ...RAW, priorityClass: "Not A Name" }, {}),
      /^InputError: --priority-class expects a Kubernetes object name/,
    );
  });

  it("refuse at start a --nixery that --config's limits.nixery does not allow, or that is no registry", async () => {
    const ops = join(dir, "nixery.yml");
    writeFileSync(ops, "limits:\n  nixery: [registry.example:5000/**]\n");
    assert.equal(
      (await resolveServeCommand({ ...RAW, config: ops, nixery: "https://registry.example:5000/nixery/" }, {})).defaults
        .nixery,
      "https://registry.example:5000/nixery/",
    );
    await assert.rejects(
      resolveServeCommand({ ...RAW, config: ops, nixery: "nixery.dev" }, {}),
      /^InputError: --nixery nixery\.dev matches none of the registries limits\.nixery in --config \S+nixery\.yml allows \(registry\.example:5000\/\*\*\)$/,
    );
    await assert.rejects(
      resolveServeCommand({ ...RAW, nixery: "not a host" }, {}),
      /^InputError: --nixery expects a registry host/,
    );
  });

  it("take --keep-warm and --max-warm for every run, as run does", async () => {
    assert.equal((await resolveServeCommand(RAW, {})).defaults.keepWarm, undefined);
    assert.deepEqual((await resolveServeCommand({ ...RAW, keepWarm: "90s", maxWarm: "3" }, {})).defaults.keepWarm, {
      seconds: 90,
      maxWarm: 3,
    });
    await assert.rejects(resolveServeCommand({ ...RAW, keepWarm: "soon" }, {}), /--keep-warm/);
  });

  it("take --transport kubectl over the api default", async () => {
    const config = await resolveServeCommand({ ...RAW, transport: "kubectl" }, {});
    assert.equal(config.transport.setting.transport, "kubectl");
  });

  it("refuse a token shorter than 16 characters with an InputError (exit 2)", async () => {
    const short = join(dir, "short-token");
    writeFileSync(short, "abcde\n");
    chmodSync(short, 0o600);
    await assert.rejects(
      resolveServeCommand({ ...RAW, tokenFile: short }, {}),
      /^InputError: --token-file: \S+ holds a token of 5 characters; a token needs at least 16/,
    );
  });

  it("refuse a token file that group or others can read", async () => {
    const loose = join(dir, "loose");
    writeFileSync(loose, "abc");
    chmodSync(loose, 0o644);
    await assert.rejects(resolveServeCommand({ ...RAW, tokenFile: loose }, {}), /open to group or others/);
  });

  it("refuse a non-loopback address without TLS or --insecure-listen, and take it with --insecure-listen", async () => {
    await assert.rejects(resolveServeCommand({ ...RAW, listen: "0.0.0.0:7300" }, {}), /--tls-cert/);
    assert.equal(
      (await resolveServeCommand({ ...RAW, listen: "0.0.0.0:7300", insecureListen: true }, {})).listen.host,
      "0.0.0.0",
    );
  });

  it("refuse a bad --max-runs and a --max-runs-per-repo above it", async () => {
    await assert.rejects(resolveServeCommand({ ...RAW, maxRuns: "0" }, {}), /--max-runs expects/);
    await assert.rejects(
      resolveServeCommand({ ...RAW, maxRuns: "2", maxRunsPerRepo: "3" }, {}),
      /--max-runs-per-repo expects/,
    );
  });
});

describe("serve's host input options", () => {
  it("resolve --checkout-root to its real path and take http git URLs only with --allow-http-git", async () => {
    const root = join(dir, "checkouts");
    mkdirSync(root, { recursive: true });
    symlinkSync(root, join(dir, "checkouts-link"));
    const config = await resolveServeCommand(
      { ...RAW, checkoutRoot: join(dir, "checkouts-link"), allowHttpGit: true },
      {},
    );
    assert.equal(config.defaults.checkoutRoot, realpathSync(root));
    assert.equal(config.defaults.allowHttpGit, true);
    const plain = await resolveServeCommand(RAW, {});
    assert.equal(plain.defaults.checkoutRoot, undefined);
    assert.equal(plain.defaults.allowHttpGit ?? false, false);
  });

  it("refuse a --checkout-root that is missing or not a directory, naming the flag", async () => {
    await assert.rejects(
      resolveServeCommand({ ...RAW, checkoutRoot: join(dir, "no-such-root") }, {}),
      /^InputError: --checkout-root: .*no-such-root is not a directory/,
    );
    await assert.rejects(
      resolveServeCommand({ ...RAW, checkoutRoot: tokenFile }, {}),
      /^InputError: --checkout-root: .* is not a directory/,
    );
  });
});
