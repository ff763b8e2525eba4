// The operator commands' bad input through the real CLI: exit 2, a clear message, and not one kubectl call.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCliInProcess } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const dir = makeTestTempDir("operator-commands-");
const marker = join(dir, "kubectl-was-called");
const KUBECTL = join(dir, "kubectl");
writeFileSync(KUBECTL, `#!/bin/sh\ntouch ${marker}\nexit 1\n`, { mode: 0o755 });
const AUTH_PROVIDER = join(dir, "auth-provider.yaml");
writeFileSync(
  AUTH_PROVIDER,
  "apiVersion: v1\ncurrent-context: x\nclusters: [{ name: c, cluster: { server: 'https://127.0.0.1:1' } }]\nusers: [{ name: u, user: { auth-provider: { name: oidc } } }]\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\n",
);

describe("the operator commands refuse bad input before any kubectl call", { concurrency: true }, () => {
  const cases: ReadonlyArray<readonly [string, readonly string[], RegExp, Record<string, string>?]> = [
    ["cancel without a run id", ["cancel"], /missing required argument 'run-id'/],
    ["cancel with a run id that has a space", ["cancel", "a b"], /cancel expects the run's id/],
    [
      "gc with a bad --stale-after",
      ["gc", "--stale-after", "soon"],
      /--stale-after expects a duration such as 90s, 10m or 1h, got "soon"/,
    ],
    [
      "gc with a --stale-after under twice the heartbeat interval",
      ["gc", "--stale-after", "59s"],
      /--stale-after must be at least twice the heartbeat interval \(1m00s\)/,
    ],
    [
      "gc with --stale-after under twice a shortened interval",
      ["gc", "--stale-after", "3s"],
      /at least twice the heartbeat interval \(4\.0s\)/,
      { KNOTLESS_HEARTBEAT_INTERVAL: "2s" },
    ],
    [
      "gc with a bad heartbeat interval in the environment",
      ["gc"],
      /KNOTLESS_HEARTBEAT_INTERVAL expects at least 1s/,
      { KNOTLESS_HEARTBEAT_INTERVAL: "10ms" },
    ],
    ["gc with a bad --older-than", ["gc", "--older-than", "-1"], /--older-than expects a duration/],
    [
      "list with a malformed namespace",
      ["list", "--namespace", "Not_A_Namespace"],
      /--namespace expects a DNS-1123 label/,
    ],
    [
      "doctor with a kubeconfig that cannot be read",
      ["doctor", "--kubeconfig", join(dir, "missing")],
      /--kubeconfig: cannot read/,
    ],
    ["list with an unknown flag", ["list", "--all"], /unknown option '--all'/],
    [
      "gc with the api transport and a kubeconfig whose user has an auth-provider",
      ["gc", "--transport", "api", "--kubeconfig", AUTH_PROVIDER],
      /auth-provider.yaml: user "u" uses auth-provider: the API transport does not do auth-provider plugins; use --transport kubectl/,
    ],
    [
      "doctor with an unknown transport",
      ["doctor", "--transport", "grpc"],
      /--transport expects kubectl or api, got "grpc"/,
    ],
    [
      "doctor with a --cache-pvc that cannot name a claim",
      ["doctor", "--cache-pvc", "My_Cache"],
      /--cache-pvc expects a PersistentVolumeClaim name \(a DNS-1123 label such as ci-cache\), got "My_Cache"/,
    ],
  ];
  for (const [what, args, message, env] of cases) {
    it(`exits 2 for ${what}`, async () => {
      const cli = await runCliInProcess([...args, "--kubectl", KUBECTL], { env: env ?? {} });
      assert.equal(cli.code, 2, cli.stderr);
      assert.match(cli.stderr, message);
      assert.equal(existsSync(marker), false, "kubectl was called");
    });
  }

  it("accepts a --stale-after at twice the interval (and then asks the cluster)", async () => {
    const called = join(dir, "other-kubectl-was-called");
    const other = join(dir, "other-kubectl");
    writeFileSync(other, `#!/bin/sh\ntouch ${called}\nexit 1\n`, { mode: 0o755 }); // not KUBECTL: the other tests watch its marker
    const cli = await runCliInProcess(["gc", "--stale-after", "4s", "--transport", "kubectl", "--kubectl", other], {
      env: { KNOTLESS_HEARTBEAT_INTERVAL: "2s" },
    });
    assert.equal(cli.code, 3, cli.stderr);
    assert.ok(existsSync(called));
  });
});
