// scripts/lib/live-proof-report.mjs: the report built from the script's facts and a run's result.json and log.ndjson.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it } from "node:test";
import { REPO_ROOT } from "../../support/run-cli.js";
import { makeTestTempDir } from "../../support/temp-dir.js";

const HELPER = join(REPO_ROOT, "scripts", "lib", "live-proof-report.mjs");
const lib = (await import(pathToFileURL(HELPER).href)) as {
  readPhaseDurations(path: string): Record<string, { durationMs: number }>;
};
const TOKEN = "FAKE-SCOPED-TOKEN-a1b2c3d4";

const control = (name: string, durationMs: number): string =>
  JSON.stringify({
    time: "t",
    kind: "control",
    step: -1,
    status: "end",
    stepKind: "system",
    name,
    ok: true,
    durationMs,
    detail: "…",
  });

/** A report directory with a successful run in run/, the facts of a passing proof, and a scoped kubeconfig. */
function makeProof(options: { outputText?: string; leakInRunLog?: boolean } = {}): {
  dir: string;
  facts: string;
  scoped: string;
} {
  const root = makeTestTempDir("live-proof-report-");
  const dir = join(root, "report");
  const run = join(dir, "run");
  mkdirSync(join(run, "outputs"), { recursive: true });
  const content = "ran on pod-1\n";
  writeFileSync(join(run, "outputs", "ran.txt"), options.outputText ?? content);
  const step = (name: string, durationMs: number) => ({
    name,
    status: "success",
    exitCode: 0,
    startedAt: "s",
    finishedAt: "f",
    durationMs,
    timedOut: false,
  });
  writeFileSync(
    join(run, "result.json"),
    JSON.stringify({
      status: "success",
      error: null,
      errorReason: null,
      exitCode: 0,
      durationMs: 6400,
      job: { namespace: "default", name: "knotless-run-x", pod: "p", node: "n", image: "busybox:1.36" },
      steps: [step("date", 618), step("outputs", 595)],
      outputs: [{ path: "ran.txt", size: content.length, sha256: createHash("sha256").update(content).digest("hex") }],
      refusedOutputs: [],
    }),
  );
  writeFileSync(
    join(run, "log.ndjson"),
    [
      control("scan", 2),
      control("create", 280),
      control("pod", 2266),
      control("upload", 472),
      JSON.stringify({ kind: "data", step: 0, stream: "stdout", content: "x" }),
      control("download", 579),
      control("teardown", 364),
      "not json",
    ].join("\n") + "\n",
  );
  writeFileSync(join(run, "run.log"), options.leakInRunLog ? `kubectl ... token ${TOKEN}\n` : "kubectl ...\n");
  const scoped = join(root, "scoped.kubeconfig");
  writeFileSync(scoped, `users:\n- name: u\n  user:\n    token: ${TOKEN}\n`, { mode: 0o600 });
  const doctor = join(root, "doctor.out");
  writeFileSync(doctor, JSON.stringify([{ check: "reach", ok: true }]));
  const credentialsOut = join(root, "credentials.out");
  writeFileSync(credentialsOut, `minted with ${TOKEN}\n`);
  const facts = join(root, "facts.tsv");
  const lines = [
    ["started_at", "2026-12-01T00:00:00Z"],
    ["local", "0"],
    ["kubeconfig", "/k/admin"],
    ["namespace", "default"],
    ["run_selector", "knotless.dev/run-id=x"],
    ["nodes_before", "0"],
    ["doctor_exit", "0"],
    ["doctor_stdout", doctor],
    ["credential_name", "knotless-live-proof"],
    ["credential_exit", "0"],
    ["credential_output", credentialsOut],
    ["credential_mode", "0600"],
    ["nodes_during", "2026-12-01T00:00:10Z ?"],
    ["nodes_during", "2026-12-01T00:00:20Z 1"],
    ["nodes_during", "2026-12-01T00:00:30Z 2"],
    ["run_exit", "0"],
    ["job_gone", "yes"],
    ["pods_gone", "yes"],
    ["pods_gone_after_s", "3"],
    ["nodes_after", "2026-12-01T00:01:00Z 1"],
    ["nodes_after", "2026-12-01T00:03:00Z 0"],
    ["after_since_run_end_s", "150"],
    ["revoke_exit", "0"],
    ["finished_at", "2026-12-01T00:03:01Z"],
  ];
  writeFileSync(facts, lines.map(([k, v]) => `${k}\t${v}`).join("\n") + "\n");
  return { dir, facts, scoped };
}

function report(proof: { dir: string; facts: string; scoped: string }): {
  code: number | null;
  stderr: string;
  json: Record<string, any>;
  markdown: string;
} {
  const child = spawnSync(
    process.execPath,
    [HELPER, "report", "--facts", proof.facts, "--report", proof.dir, "--kubeconfig", proof.scoped],
    { encoding: "utf8" },
  );
  return {
    code: child.status,
    stderr: child.stderr,
    json: JSON.parse(readFileSync(join(proof.dir, "live-proof.json"), "utf8")),
    markdown: readFileSync(join(proof.dir, "live-proof.md"), "utf8"),
  };
}

describe("live-proof-report", () => {
  it("reads the runner phases from log.ndjson's system control lines, skipping data and broken lines", () => {
    const proof = makeProof();
    const phases = lib.readPhaseDurations(join(proof.dir, "run", "log.ndjson"));
    assert.deepEqual(Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, v.durationMs])), {
      scan: 2,
      create: 280,
      pod: 2266,
      upload: 472,
      download: 579,
      teardown: 364,
    });
  });

  it("reports a passing proof: every duration, the node counts and the result's path", () => {
    const proof = makeProof();
    const { code, json, markdown } = report(proof);
    assert.equal(code, 0);
    assert.equal(json.verdict, "pass");
    assert.deepEqual(
      {
        podWaitMs: json.durations.podWaitMs,
        uploadMs: json.durations.uploadMs,
        downloadMs: json.durations.downloadMs,
        teardownMs: json.durations.teardownMs,
      },
      { podWaitMs: 2266, uploadMs: 472, downloadMs: 579, teardownMs: 364 },
    );
    assert.deepEqual(
      json.durations.steps.map((s: { name: string; durationMs: number }) => [s.name, s.durationMs]),
      [
        ["date", 618],
        ["outputs", 595],
      ],
    );
    assert.deepEqual([json.nodes.before, json.nodes.during.max, json.nodes.after.count], [0, 2, 0]);
    assert.equal(json.nodes.during.samples[0].count, null, "a failed kubectl get nodes is null, not 0");
    assert.equal(json.run.resultPath, join(proof.dir, "run", "result.json"));
    assert.deepEqual(json.doctor.report, [{ check: "reach", ok: true }], "doctor's JSON is passed through as it is");
    assert.equal(json.credential.output, "minted with ***\n");
    assert.match(markdown, /\| pod wait \(Job created to pod running\) \| 2266 ms \|/);
    assert.match(markdown, /\| during the run \(most seen, 3 samples\) \| 2 \|/);
    assert.match(markdown, /\| after the run \(last sample, 150 s after it ended\) \| 0 \|/);
    assert.ok(!readFileSync(join(proof.dir, "live-proof.json"), "utf8").includes(TOKEN));
  });

  it("fails the outputs check when a file on disk differs from what the result records", () => {
    const { code, json } = report(makeProof({ outputText: "tampered\n" }));
    assert.equal(code, 1);
    assert.equal(json.checks.find((c: { name: string }) => c.name === "the outputs came back").status, "fail");
  });

  it("fails when a file of the run holds a credential value, naming the file and never the value", () => {
    const { code, json, stderr } = report(makeProof({ leakInRunLog: true }));
    assert.equal(code, 1);
    const check = json.checks.find((c: { name: string }) => c.name === "no secret in the report directory");
    assert.deepEqual([check.status, check.detail], ["fail", "a credential value is in run/run.log"]);
    assert.ok(!stderr.includes(TOKEN));
  });
});
