import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import { PLANNED_PLACEHOLDER } from "../../src/dry-run/call-plan.js";
import { describeRunPlan, describeWarmPlan, describeReleasePlan } from "../support/described-plan.js";
import { exampleSettings } from "../support/example-settings.js";

describe("planKubectlCalls", () => {
  const settings = exampleSettings({ steps: ["date", "hostname", "files"] });
  const calls = describeRunPlan(settings);
  const verbs = calls.map((call) => call.args[call.args.indexOf("--namespace") + 2]);

  it("looks for a warm placeholder and claims it, creates, watches and beats, waits, uploads, runs each step, downloads and deletes, in that order", () => {
    assert.deepEqual(verbs, [
      "get",
      "delete",
      "create",
      "get",
      "patch",
      "get",
      "get",
      "exec",
      "exec",
      "exec",
      "exec",
      "exec",
      "delete",
    ]);
  });

  it("claims a placeholder by a raw delete with preconditions on stdin, before the create, and says it happens only when one fits", () => {
    const [list, claim] = calls;
    assert.deepEqual(list!.args.slice(6), [
      "get",
      "jobs",
      "--selector",
      "app.kubernetes.io/managed-by=knotless-runner-k8s,knotless.dev/role=warm",
      "--request-timeout",
      "30s",
      "-o",
      "json",
    ]);
    assert.deepEqual(claim!.args.slice(6, 10), [
      "delete",
      "--raw",
      `/apis/batch/v1/namespaces/ci/jobs/${PLANNED_PLACEHOLDER}`,
      "-f",
    ]);
    assert.match(claim!.stdin ?? "", /preconditions on the listed placeholder's uid and resourceVersion/);
    assert.match(claim!.note ?? "", /^only when one covers them: the delete is the claim/);
  });

  it("makes no warm call when the run does not look for placeholders and leaves none", () => {
    const cold = describeRunPlan({ ...settings, claimWarm: false });
    assert.equal(cold[0]!.args[6], "create");
    assert.ok(!cold.some((call) => call.args.join(" ").includes("knotless.dev/role=warm")));
  });

  it("lists and creates a placeholder after the delete with --keep-warm", () => {
    const warm = describeRunPlan({ ...settings, keepWarm: { seconds: 120, maxWarm: 2 } });
    const tail = warm.slice(-3).map((call) => call.args[6]);
    assert.deepEqual(tail, ["delete", "get", "create"]);
    assert.match(warm.at(-2)!.note ?? "", /--max-warm 2/);
    assert.match(warm.at(-1)!.stdin ?? "", /the placeholder manifest above/);
  });

  it("plans warm as one list, a claim only for a finished placeholder in the way, and the creates; release as one delete by selector", () => {
    const target = settings.target;
    assert.deepEqual(
      describeWarmPlan(target, { count: 2, maxWarm: 3 }).map((call) => call.args[6]),
      ["get", "delete", "create"],
    );
    assert.deepEqual(
      describeReleasePlan(target).map((call) => call.args.slice(6, 10)),
      [["delete", "jobs", "--selector", "app.kubernetes.io/managed-by=knotless-runner-k8s,knotless.dev/role=warm"]],
    );
  });

  it("watches the Job for a cancel request and refreshes its heartbeat at the interval it is given", () => {
    assert.deepEqual(calls[3]!.args.slice(6), [
      "get",
      "job",
      "knotless-run-42",
      "--watch",
      "--output-watch-events",
      "-o",
      "json",
      "--request-timeout",
      "5m",
    ]);
    assert.match(calls[4]!.note ?? "", /every 30s /);
    assert.match(describeRunPlan(settings, { heartbeatIntervalMs: 2000 })[4]!.note ?? "", /every 2s /);
    assert.ok(calls[4]!.args.some((arg) => arg.includes('"knotless.dev/heartbeat":"<now>"')));
  });

  it("marks the Job kept instead of deleting it with --keep", () => {
    const kept = describeRunPlan({ ...settings, keep: true }).at(-1)!.args;
    assert.ok(kept.includes("patch") && kept.some((arg) => arg.includes("knotless.dev/kept")), kept.join(" "));
  });

  it("makes exactly one exec per step, each naming its step index", () => {
    const stepCalls = calls.filter((call) => call.args.includes("/knotless/helper.sh") && call.args.at(-2) === "run");
    assert.deepEqual(
      stepCalls.map((call) => call.args.at(-1)),
      ["0", "1", "2"],
    );
  });

  it("passes the kubeconfig, context and namespace on every call", () => {
    for (const call of calls) {
      assert.deepEqual(call.args.slice(0, 6), [
        "--kubeconfig",
        "/tmp/kubeconfig",
        "--context",
        "ctx",
        "--namespace",
        "ci",
      ]);
    }
  });

  it("leaves create's namespace to kubectl when it is the kubeconfig context's, and pins it on every later call", () => {
    const fromContext = describeRunPlan({
      ...settings,
      claimWarm: false,
      target: { ...settings.target, namespaceFromContext: true },
    });
    assert.deepEqual(fromContext[0]!.args.slice(0, 5), [
      "--kubeconfig",
      "/tmp/kubeconfig",
      "--context",
      "ctx",
      "create",
    ]);
    assert.ok(!fromContext[0]!.args.includes("--namespace"));
    for (const call of fromContext.slice(1))
      assert.deepEqual(call.args.slice(0, 6), [
        "--kubeconfig",
        "/tmp/kubeconfig",
        "--context",
        "ctx",
        "--namespace",
        "ci",
      ]);
  });

  it("deletes with background propagation and tolerates an already deleted Job", () => {
    const del = calls.at(-1)!.args;
    assert.ok(del.includes("--cascade=background"));
    assert.ok(del.includes("--ignore-not-found"));
  });

  it("says on the upload who packs it: the host tar it names when that is GNU tar, else the runner", () => {
    const upload = (binary: string | undefined) =>
      describeRunPlan({ ...settings, ...(binary === undefined ? {} : { hostTar: { binary, env: {} } }) }).find((call) =>
        call.args.includes("-i"),
      )!.stdin;
    assert.equal(
      upload("/usr/bin/gtar"),
      "tar of the checkout → /work, the runner's files → /knotless, packed by /usr/bin/gtar if it is GNU tar 1.29 or later, else by the runner",
    );
    assert.equal(
      upload(undefined),
      "tar of the checkout → /work, the runner's files → /knotless, packed by the runner",
    );
  });

  it("adds the secrets exec after the upload, its stdin described by count and names, never by value", () => {
    const secrets = [
      { name: "API_TOKEN", value: "tok-123" },
      { name: "PASSWORD", value: "hunter2" },
    ];
    const planned = describeRunPlan({ ...settings, secrets });
    assert.equal(planned.length, calls.length + 1);
    const upload = planned.findIndex((c) => c.args.some((arg) => arg.includes("\ntar -xf - -C /")));
    assert.ok(upload > 0, "the plan has the upload");
    const call = planned[upload + 1]!;
    assert.deepEqual(call.args.slice(6), [
      "exec",
      "-i",
      "<pod>",
      "-c",
      "run",
      "--",
      "sh",
      "/knotless/helper.sh",
      "secrets",
    ]);
    assert.equal(call.stdin, "2 secrets (API_TOKEN, PASSWORD) → /knotless-secrets, memory-backed");
    assert.match(planned.at(-2)!.note!, /^removes the secrets from the pod, then tar of \/outputs/);
    const text = JSON.stringify(planned);
    for (const { value } of secrets) assert.ok(!text.includes(value), "the plan holds a secret's value");
  });

  it("restores each cache of a host store after the upload, saves each after the last step, and collects each artifact after the outputs", () => {
    const planned = describeRunPlan({
      ...settings,
      caches: [{ key: "deps-1", restoreKeys: ["deps-"], paths: ["/work/node_modules", "/root/.npm"] }],
      cacheBackend: { kind: "dir", repo: "r", dir: "/var/cache/k", maxBytes: 1 << 30 },
      artifacts: [{ name: "dist", paths: ["dist/**"], when: "always", required: false }],
    });
    const helperWords = planned.map(
      (call) =>
        call.args.slice(
          call.args.indexOf("/knotless/helper.sh") + 1,
          call.args.indexOf("/knotless/helper.sh") + 2,
        )[0] ?? "",
    );
    assert.deepEqual(
      helperWords.filter((word) =>
        ["cache-restore", "run", "cache-save", "pack-outputs", "list-files", "pack-files"].includes(word),
      ),
      ["cache-restore", "run", "run", "run", "cache-save", "pack-outputs", "list-files", "pack-files"],
    );
    const restore = planned.find((call) => call.args.includes("cache-restore"))!;
    assert.deepEqual(restore.args.slice(-4), ["cache-restore", "zstd", "work/node_modules", "root/.npm"]);
    assert.match(
      restore.note ?? "",
      /a pod without zstd says so at once, and the entry is sent again decompressed on this host/,
    );
    assert.ok(restore.args.includes("-i"));
    assert.deepEqual(planned.find((call) => call.args.includes("pack-files"))!.args.slice(-2), [
      "pack-files",
      "/work/dist",
    ]);
    assert.equal(planned.length, calls.length + 4);
  });

  it("moves no cache through kubectl when the caches are on a PersistentVolumeClaim, or there are none: the pod's commands work on the claim", () => {
    const onPvc = describeRunPlan({
      ...settings,
      caches: [{ key: "k", restoreKeys: [], paths: ["/work/x"] }],
      cacheBackend: { kind: "pvc", repo: "r", claim: "c", maxBytes: 1 },
    });
    assert.ok(
      !onPvc.some((call) => call.args.includes("cache-restore") || call.args.includes("cache-save")),
      "not the host store's helper calls",
    );
    assert.ok(!JSON.stringify(calls).includes("cache-"));
    const pvcCalls = onPvc.filter((call) => call.args.some((a) => a.startsWith("knotless-cache-")));
    assert.deepEqual(
      pvcCalls.map((call) => call.args.find((a) => a.startsWith("knotless-cache-"))),
      ["knotless-cache-list", "knotless-cache-restore", "knotless-cache-save", "knotless-cache-evict"],
    );
    assert.ok(
      pvcCalls.every((call) => !call.args.includes("-i") && call.stdin === undefined),
      "no archive on any exec's stdin",
    );
    assert.equal(onPvc.length, calls.length + 4);
  });

  it("refuses, as the run would, variables the steps cannot carry", () => {
    assert.throws(() => describeRunPlan({ ...settings, env: [{ name: "BAD-NAME", value: "" }] }), InputError);
  });
});
