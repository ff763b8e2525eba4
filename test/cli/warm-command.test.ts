// The warm command's options and dry run, and run's --keep-warm/--max-warm, refused or resolved before any kubectl call.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { resolveWarmCommand, type RawWarmOptions } from "../../src/cli/commands/warm.js";
import { readKeepWarm } from "../../src/cli/warm-options.js";
import { InputError } from "../../src/core/errors.js";
import { makeWorkspace, runCliInProcess } from "../support/run-cli.js";

const defaults: RawWarmOptions = {
  for: "10m",
  count: "1",
  cpu: "500m",
  memory: "512Mi",
  image: "busybox:1.36",
  maxWarm: "1",
};

describe("the warm command", () => {
  it("resolves its defaults: one placeholder of 500m and 512Mi for 10 minutes, at most one", () => {
    const config = resolveWarmCommand(defaults, {});
    assert.deepEqual(config.spec, {
      count: 1,
      maxWarm: 1,
      seconds: 600,
      cpu: "500m",
      memory: "512Mi",
      image: "busybox:1.36",
    });
    assert.deepEqual([config.release, config.dryRun, config.target], [false, false, { namespaceFromContext: true }]);
  });

  it("refuses a --count above --max-warm, bad quantities, counts and durations as bad input", () => {
    assert.throws(
      () => resolveWarmCommand({ ...defaults, count: "2" }, {}),
      (e: unknown) => e instanceof InputError && /--count 2 is more than --max-warm 1 allows/.test(e.message),
    );
    assert.doesNotThrow(() => resolveWarmCommand({ ...defaults, count: "2", maxWarm: "2" }, {}));
    assert.throws(() => resolveWarmCommand({ ...defaults, cpu: "lots" }, {}), /--cpu expects a Kubernetes quantity/);
    assert.throws(
      () => resolveWarmCommand({ ...defaults, count: "0" }, {}),
      /--count expects a whole number from 1 to 50/,
    );
    assert.throws(
      () => resolveWarmCommand({ ...defaults, maxWarm: "51" }, {}),
      /--max-warm expects a whole number from 1 to 50/,
    );
    assert.throws(() => resolveWarmCommand({ ...defaults, for: "soon" }, {}), /--for expects a duration/);
  });

  it("puts --config's pod keys, with the pod flags over them, on its placeholders as run --keep-warm does (no podSpecPatch)", async () => {
    const ws = makeWorkspace("");
    const config = join(ws.out, "..", "ops.yml");
    writeFileSync(
      config,
      "pod:\n  nodeSelector: {pool: ci}\n  imagePullSecrets: [registry-a]\n  labels: {team: platform}\n  security: restricted\n  podSpecPatch: {hostAliases: [{ip: 10.0.0.5, hostnames: [registry.local]}]}\n",
    );
    const dry = await runCliInProcess([
      "warm",
      "--dry-run",
      "--namespace",
      "ci",
      "--kubectl",
      "kubectl",
      "--config",
      config,
      "--node-selector",
      "pool=gpu",
      "--toleration",
      "gpu:NoSchedule",
      "--priority-class",
      "ci-high",
      "--pod-annotation",
      "example.com/owner=ml",
    ]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^ {6}nodeSelector:\n {8}pool: gpu$/m);
    assert.match(dry.stdout, /^ {6}priorityClassName: ci-high$/m);
    assert.match(dry.stdout, /^ {6}imagePullSecrets:\n {8}- name: registry-a$/m);
    assert.match(dry.stdout, /^ {6}tolerations:\n {8}- key: gpu\n {10}operator: Exists\n {10}effect: NoSchedule$/m);
    assert.match(dry.stdout, /^ {4}team: platform$/m);
    assert.match(dry.stdout, /example\.com\/owner: ml/);
    assert.match(dry.stdout, /runAsNonRoot: true/);
    assert.doesNotMatch(dry.stdout, /hostAliases/);
    const bad = await runCliInProcess(["warm", "--dry-run", "--pod-label", "knotless.dev/role=x"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--pod-label: knotless\.dev\/role is the runner's own label/);
  });

  it("prints the placeholder manifest and its calls on --dry-run, and the one delete of --release", async () => {
    const dry = await runCliInProcess([
      "warm",
      "--dry-run",
      "--count",
      "2",
      "--max-warm",
      "3",
      "--for",
      "90s",
      "--namespace",
      "ci",
      "--kubectl",
      "kubectl",
    ]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /# Warm placeholder manifest\n---\napiVersion: batch\/v1\nkind: Job/);
    assert.match(dry.stdout, /activeDeadlineSeconds: 90\n/);
    assert.match(
      dry.stdout,
      /kubectl --namespace ci get jobs --selector app.kubernetes.io\/managed-by=knotless-runner-k8s,knotless.dev\/role=warm/,
    );
    assert.match(dry.stdout, /--count 2, all of them toward --max-warm 3/);
    const release = await runCliInProcess([
      "warm",
      "--release",
      "--dry-run",
      "--transport",
      "kubectl",
      "--kubectl",
      "kubectl",
    ]);
    assert.equal(
      release.stdout,
      [
        "# kubectl calls, in order (--transport kubectl); beside each, as `#   api:`, the request the API transport makes instead",
        "# deletes every warm placeholder in the namespace, and its pod",
        "kubectl delete jobs --selector app.kubernetes.io/managed-by=knotless-runner-k8s,knotless.dev/role=warm --cascade=background --ignore-not-found --wait=false --request-timeout 30s",
        "#   api: GET /apis/batch/v1/namespaces/<namespace>/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dknotless-runner-k8s%2Cknotless.dev%2Frole%3Dwarm",
        "#   api: DELETE /apis/batch/v1/namespaces/<namespace>/jobs/knotless-warm-<slot> (body: DeleteOptions (background propagation))",
        "",
      ].join("\n"),
    );
    const apiRelease = await runCliInProcess([
      "warm",
      "--release",
      "--dry-run",
      "--transport",
      "api",
      "--namespace",
      "ci",
    ]);
    assert.equal(apiRelease.code, 0, apiRelease.stderr);
    assert.match(
      apiRelease.stdout,
      /^# API requests, in order \(--transport api\)[^\n]*\n# deletes every warm placeholder[^\n]*\nGET \/apis\/batch\/v1\/namespaces\/ci\/jobs\?labelSelector=\S+\nDELETE \/apis\/batch\/v1\/namespaces\/ci\/jobs\/knotless-warm-<slot> \(body: DeleteOptions \(background propagation\)\)\n# {3}kubectl: kubectl --namespace ci delete jobs --selector /,
    );
    const bad = await runCliInProcess(["warm", "--count", "3"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--count 3 is more than --max-warm 1 allows/);
  });
});

describe("run --keep-warm", () => {
  it("is off by default and takes a duration in whole seconds and a --max-warm", () => {
    assert.deepEqual(readKeepWarm(undefined, "1"), {});
    assert.deepEqual(readKeepWarm("2m", "3"), { keepWarm: { seconds: 120, maxWarm: 3 } });
    assert.deepEqual(readKeepWarm("1500ms", undefined), { keepWarm: { seconds: 2, maxWarm: 1 } });
    assert.throws(() => readKeepWarm("2m", "0"), /--max-warm expects a whole number/);
  });

  it("shows the placeholder it would leave, and its calls after the delete, on --dry-run", async () => {
    const ws = makeWorkspace("hi\techo hi\n");
    const dry = await runCliInProcess([
      "run",
      "--checkout",
      ws.checkout,
      "--steps",
      ws.stepsFile,
      "--out",
      ws.out,
      "--namespace",
      "ci",
      "--transport",
      "kubectl",
      "--kubectl",
      "kubectl",
      "--keep-warm",
      "5m",
      "--cpu",
      "1",
      "--dry-run",
    ]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /# Warm placeholder manifest \(--keep-warm\), left after the Job is deleted\n---\n/);
    assert.match(dry.stdout, /activeDeadlineSeconds: 300\n/);
    const calls = dry.stdout
      .slice(dry.stdout.indexOf("# kubectl calls"))
      .split("\n")
      .filter((line) => line.startsWith("kubectl"));
    assert.match(calls[0]!, /get jobs --selector .*role=warm/);
    assert.match(calls[1]!, /delete --raw '?\/apis\/batch\/v1\/namespaces\/ci\/jobs\/knotless-warm-<slot>/);
    assert.match(calls.at(-1)!, /create --request-timeout 30s -f - -o json$/);
    const skipped = await runCliInProcess([
      "run",
      "--checkout",
      ws.checkout,
      "--steps",
      ws.stepsFile,
      "--out",
      ws.out,
      "--namespace",
      "ci",
      "--transport",
      "kubectl",
      "--kubectl",
      "kubectl",
      "--skip-warm",
      "--dry-run",
    ]);
    assert.equal(skipped.code, 0, skipped.stderr);
    assert.doesNotMatch(skipped.stdout, /role=warm/, "--skip-warm still looks for placeholders");
  });
});
