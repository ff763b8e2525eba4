import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { promisify } from "node:util";
import {
  buildAnnotateJobArgs,
  buildApplyCredentialArgs,
  buildExecArgs,
  buildClientVersionArgs,
  buildConfigViewArgs,
  buildCreateReviewsArgs,
  buildDeleteCredentialArgs,
  buildDryRunCreateArgs,
  buildGetClaimArgs,
  buildGetJobArgs,
  buildGetNamespaceArgs,
  buildGetNodesArgs,
  buildListJobsArgs,
  buildServerVersionArgs,
  buildTokenRequestArgs,
  buildViewConfigArgs,
  buildWatchJobArgs,
} from "../../../src/cluster/kubectl/kubectl-args.js";
import { helperCommand } from "../../../src/pod/helper-script.js";
import { buildJobManifest } from "../../../src/manifests/manifest.js";
import { describeRunPlan, describeWarmPlan, describeReleasePlan } from "../../support/described-plan.js";
import { exampleSettings } from "../../support/example-settings.js";
import { makeTestTempDir } from "../../support/temp-dir.js";

const run = promisify(execFile);
const SDK = "/usr/lib/google-cloud-sdk/bin";
const BINARIES = ["1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33"]
  .map((v) => join(SDK, `kubectl.${v}`))
  .filter((path) => existsSync(path));
/**
 * The oldest and the newest kubectl parse every argument list; those between only the local calls. A flag both ends
 * accept is accepted between them (kubectl does not drop a flag and bring it back), and each parse costs a kubectl
 * start (~0.15 s of CPU): the seven versions cost two minutes of a CI run for nothing the two ends do not show.
 */
const PARSERS = BINARIES.length > 2 ? [BINARIES[0]!, BINARIES.at(-1)!] : BINARIES;

/** A kubeconfig whose server is a closed local port: a call that parses cleanly fails to connect. */
function writeClosedPortKubeconfig(): string {
  const dir = makeTestTempDir("kubectl-flags-");
  const path = join(dir, "kubeconfig");
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]",
      "users: [{name: u, user: {}}]",
      "contexts: [{name: ctx, context: {cluster: c, user: u, namespace: ci}}]",
      "current-context: ctx",
      "",
    ].join("\n"),
  );
  return path;
}

describe(
  "every kubectl argument list the runner produces",
  { skip: BINARIES.length === 0 ? "no kubectl binaries under /usr/lib/google-cloud-sdk/bin" : false },
  () => {
    const kubeconfig = writeClosedPortKubeconfig();
    const settings = {
      ...exampleSettings({ steps: ["a", "b"], sharedSteps: true }),
      target: { kubeconfig, context: "ctx", namespace: "ci" },
      secrets: [{ name: "TOKEN", value: "t" }],
    };
    const manifest = JSON.stringify(
      buildJobManifest({
        jobName: settings.jobName,
        namespace: "ci",
        runId: "42",
        runIdLabel: "42",
        image: "busybox:1.36",
        cpu: "1",
        memory: "1Gi",
        budgetSeconds: 60,
        createToken: "t",
      }),
    );
    const fromContext = { ...settings, target: { ...settings.target, namespaceFromContext: true } };
    const argLists = [
      ...describeRunPlan(settings).map((call) => call.args),
      ...describeRunPlan(fromContext).map((call) => call.args),
      ...describeRunPlan({ ...settings, keepWarm: { seconds: 120, maxWarm: 2 } }).map((call) => call.args),
      ...describeRunPlan({
        ...settings,
        caches: [{ key: "k-1", restoreKeys: ["k-"], paths: ["/work/deps"] }],
        cacheBackend: { kind: "pvc", repo: "r", claim: "ci-cache", maxBytes: 1 << 30 },
      })
        .filter((call) => call.args.some((a) => a.startsWith("knotless-cache-")))
        .map((call) => call.args),
      ...describeRunPlan({
        ...settings,
        caches: [{ key: "deps-1", restoreKeys: ["deps-"], paths: ["/work/node_modules", "/root/.npm"] }],
        cacheBackend: { kind: "dir", repo: "r", dir: "/tmp/c", maxBytes: 1 << 30 },
        artifacts: [{ name: "dist", paths: ["dist/**", "/outputs/*.xml"], when: "always", required: false }],
      }).map((call) => call.args),
      ...describeWarmPlan(settings.target, { count: 2, maxWarm: 2 }).map((call) => call.args),
      ...describeReleasePlan(settings.target).map((call) => call.args),
      buildGetJobArgs(settings.target, settings.jobName),
      buildGetClaimArgs(settings.target, "knotless-cache", "5s"),
      buildListJobsArgs(settings.target, "a=b"),
      buildAnnotateJobArgs(settings.target, settings.jobName, { "knotless.dev/heartbeat": "2026-01-01T00:00:00.000Z" }),
      buildWatchJobArgs(settings.target, settings.jobName),
      buildServerVersionArgs(settings.target, "5s"),
      buildCreateReviewsArgs(settings.target, "5s"),
      buildGetNamespaceArgs(settings.target, "ci", "5s"),
      buildDryRunCreateArgs(settings.target, "5s"),
      buildGetNodesArgs(settings.target, "5s"),
      buildApplyCredentialArgs(settings.target),
      buildTokenRequestArgs(settings.target, "ci", "knotless-runner"),
      buildDeleteCredentialArgs(settings.target, "knotless-runner"),
      buildExecArgs(settings.target, "pod", helperCommand.forgetSecrets(), false), // a kept Job's pod, at teardown
    ];
    // kubectl parses nothing after `--` (the command run in the pod): lists that differ only there parse alike.
    const parsedPart = (args: readonly string[]): string =>
      args.slice(0, args.indexOf("--") + 1 || undefined).join("\0");
    const distinctArgLists = [...new Map(argLists.map((args) => [parsedPart(args), args])).values()];
    /** Calls that read only kubectl itself or the kubeconfig: they succeed without a server. */
    const localArgLists = [buildClientVersionArgs(), buildViewConfigArgs(settings.target)];

    for (const binary of PARSERS) {
      it(`is accepted by the flag parser of ${binary.split("/").pop()} (it fails only to connect)`, async () => {
        for (const args of distinctArgLists) {
          const child = run(binary, [...args], { timeout: 20_000 });
          child.child.stdin?.end(manifest);
          const failure = await child.then(
            () => assert.fail(`kubectl ${args.join(" ")} succeeded against a closed port`),
            (error: { stderr: string }) => error.stderr,
          );
          assert.doesNotMatch(
            failure,
            /unknown (shorthand )?flag|unknown command|invalid argument|flag needs an argument/,
            `${args.join(" ")}\n${failure}`,
          );
          assert.match(failure, /connection refused|was refused|Unable to connect/, `${args.join(" ")}\n${failure}`);
        }
      });
    }

    for (const binary of BINARIES) {
      it(`lets ${binary.split("/").pop()} print its version and the kubeconfig as JSON, without the network`, async () => {
        for (const args of localArgLists) {
          const { stdout } = await run(binary, [...args], { timeout: 20_000 });
          assert.doesNotThrow(() => JSON.parse(stdout), `${args.join(" ")} printed JSON`);
        }
      });
    }

    for (const binary of BINARIES) {
      it(`lets ${binary.split("/").pop()} print the admin kubeconfig's one context as JSON for credentials, without the network`, async () => {
        const { stdout } = await run(binary, buildConfigViewArgs(settings.target), { timeout: 20_000 });
        const config = JSON.parse(stdout) as { clusters: Array<{ cluster: { server: string } }>; contexts: unknown[] };
        assert.equal(config.clusters[0]?.cluster.server, "http://127.0.0.1:1");
        assert.equal(config.contexts.length, 1);
      });
    }
  },
);
